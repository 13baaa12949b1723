"""The one place where Numba JIT flags are set (kernels never pass their own flags).

``cache=True`` writes compiled machine code next to the package so a second process starts in
well under a second; ``nogil`` lets a caller run kernels from threads. ``fastmath`` stays off:
every kernel here is integer bit arithmetic and settlement must be exact.

The on-disk cache is keyed on more than Numba's own key. Numba stamps a cached kernel with its own
source file only, but a kernel also freezes the module-level constants it reads (the observation
offsets of ``madiao_env.layout``, the amounts of ``madiao_env.payments``, ...) and inlines the
kernels it calls from other modules: edit one of those files and Numba would keep loading the old
machine code. Here a kernel's stamp also covers every module of this project that its module
imports, directly or through another such module (found by reading the ``import`` statements, see
:func:`dependency_files`), so editing any of them recompiles the kernel on its next run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
from numba.core import types
from numba.core.caching import CompileResultCacheImpl as _CompileResultCacheImpl
from numba.core.caching import FunctionCache, _CacheLocator
from numba.core.dispatcher import Dispatcher

from cardgame_core import compile_notice

# The first real compilation in a process says so on stderr (first run only: later runs load the
# cache silently); see cardgame_core.compile_notice.
compile_notice.install()

JIT_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True}


def njit(function: Callable | None = None, **overrides: Any):
    """``numba.njit`` with the project's flags; usable as ``@njit`` or ``@njit(...)``."""
    options = {**JIT_OPTIONS, **overrides}
    if function is None:
        return lambda later: _dispatcher(later, options)
    return _dispatcher(function, options)


def _dispatcher(function: Callable, options: dict[str, Any]):
    """The Numba dispatcher of ``function``, compiled once per argument types when another kernel
    calls it (:func:`_typed_without_literals`); with ``cache``, its disk cache stamped with the
    sources of the modules it depends on (:class:`_DependencyStampedCache`)."""
    numba_options = {name: value for name, value in options.items() if name != "cache"}
    dispatcher = numba.njit(**numba_options)(function)
    if isinstance(dispatcher, Dispatcher):
        dispatcher.get_call_template = _typed_without_literals(dispatcher.get_call_template)
    if options.get("cache") and isinstance(dispatcher, Dispatcher):
        # What ``Dispatcher.enable_caching`` does (Numba's cache=True), with the stamped cache;
        # without the JIT (NUMBA_DISABLE_JIT=1) ``dispatcher`` is the plain function.
        cache_class = _ParallelStampedCache if numba_options.get("parallel") else _DependencyStampedCache
        dispatcher._cache = cache_class(dispatcher.py_func)
    return dispatcher


def _typed_without_literals(get_call_template: Callable) -> Callable:
    """A dispatcher's ``get_call_template`` that types a call from another kernel by its argument
    types alone: a constant argument (``_call(..., CALL_MAO, -1, ...)``, ``flag=True``) counts as
    its plain type (int64, bool), not as a literal of its value.

    Numba otherwise compiles the callee once per distinct constant it is called with: Mao's
    ``_call`` was compiled nine times, a few seconds of every cold start. The kernels here need
    no literal argument (none uses ``numba.literally``); a call from Python is typed by value
    types already.
    """

    def get_call_template_by_type(args: tuple, kws: dict) -> Any:
        plain_args = tuple(types.unliteral(arg) for arg in args)
        plain_kws = {name: types.unliteral(arg) for name, arg in kws.items()}
        return get_call_template(plain_args, plain_kws)

    return get_call_template_by_type


#: Games per call of a batch kernel's per-range function (each game's ``_vector_step_chunk``):
#: its ``prange`` runs over chunks of this many games. A call passes about twenty arrays, and
#: binding each costs reference-count updates: paid once per game, as when each game was a call
#: of its own, that cost was a large share of the serial step (benchmarks/README.md, "The batched
#: step's loop in chunks"). A chunk of 32 games makes it small and leaves enough chunks to share
#: among threads.
STEP_CHUNK = 32

_parallel_variants: dict[Callable, Callable] = {}


def parallel(kernel: Callable) -> Callable:
    """``kernel`` compiled again with ``parallel=True``: its ``numba.prange`` loops (a batch
    kernel's loop over games) run on Numba's threads.

    ``kernel`` itself keeps those loops serial (``prange`` is ``range`` there), so the AEC envs
    and small batches pay neither the threads' start-up nor the parallel compile, which happens
    only when a caller first asks for this variant. Every iteration of such a loop must write only
    its own game's rows. The number of threads is Numba's (``NUMBA_NUM_THREADS``,
    ``numba.set_num_threads``). The variant is made once per kernel and has its own disk cache
    files. Without the JIT (``NUMBA_DISABLE_JIT=1``): ``kernel``.
    """
    py_func = getattr(kernel, "py_func", None)
    if py_func is None:
        return kernel
    variant = _parallel_variants.get(kernel)
    if variant is None:
        variant = _dispatcher(py_func, {**JIT_OPTIONS, "parallel": True})
        _parallel_variants[kernel] = variant
    return variant


def compiled_for(kernel: Callable, *args: Any) -> Callable:
    """``kernel`` compiled (or loaded from the cache) for the types of ``args``: its entry point.

    A call through the entry point skips Numba's per-call type dispatch, which for a named tuple
    such as a game state costs about 1.5 us (arrays alone are typed in C): a tenth of an AEC step.
    The entry point does not check its arguments, so the caller must always pass these types
    (the envs pass their own buffers). Without the JIT (``NUMBA_DISABLE_JIT=1``): ``kernel``.
    """
    compile_for_types = getattr(kernel, "compile", None)
    if compile_for_types is None:
        return kernel
    return compile_for_types(tuple(numba.typeof(arg) for arg in args))


# ----------------------------------------------------------------------------- the cache stamp


def dependency_files(module_name: str) -> tuple[Path, ...]:
    """The source files of ``module_name`` and of every module of this project it imports,
    directly or through each other (sorted; a module of another distribution is not followed).

    "This project" is :func:`cardgame_core.compile_notice.project_packages` (but ``madiao_mao``)
    and the top-level package of ``module_name`` itself (a game package of a user's own).
    ``from package import name`` depends on the submodule ``package.name`` when there is one, else
    on ``package``.
    Files are found on disk from the top-level package's folder: nothing is imported.
    """
    # The namespace package is not followed: every game package imports its registry
    # (madiao_mao.games, for the Gymnasium ids), which no kernel reads; editing it recompiles nothing.
    packages = (compile_notice.project_packages() - {"madiao_mao"}) | {module_name.split(".", 1)[0]}
    seen: dict[str, Path] = {}
    todo = [module_name]
    while todo:
        name = todo.pop()
        path = _source_file(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        stat = path.stat()
        for base, names in _imports_of(str(path), name, stat.st_mtime_ns, stat.st_size):
            if base.split(".", 1)[0] not in packages:
                continue
            for imported in names:
                submodule = f"{base}.{imported}" if imported else base
                todo.append(submodule if _source_file(submodule) is not None else base)
    return tuple(sorted(set(seen.values())))


def _source_file(module_name: str) -> Path | None:
    """The ``.py`` file of a module, found from its top-level package's folder (None: none)."""
    top, *parts = module_name.split(".")
    root = _top_level_path(top)
    if root is None:
        return None
    if root.name == "__init__.py":
        folder = root.parent.joinpath(*parts)
        for candidate in (folder / "__init__.py", folder.with_suffix(".py")):
            if parts and candidate.is_file():
                return candidate
        return None if parts else root
    return None if parts else root


@functools.cache
def _top_level_path(name: str) -> Path | None:
    module = sys.modules.get(name)
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin is None:
        try:  # a top-level name: finding it imports nothing
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        origin = None if spec is None else spec.origin
    if origin is None or not origin.endswith(".py") or not os.path.isfile(origin):
        return None
    return Path(origin)


# An import statement's module (absolute) and the names it imports from it.
_Import = tuple[str, tuple[str, ...]]


@functools.cache
def _imports_of(
    path: str, module_name: str, mtime_ns: int, size: int
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The file's imports as ``(absolute module, names imported from it)`` (``import a.b``:
    ``("a.b", ("",))``); its mtime and size are the memo key, as in Numba's own source hash."""
    del mtime_ns, size
    package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
    imports = []
    for node in ast.walk(ast.parse(Path(path).read_bytes(), filename=path)):
        if isinstance(node, ast.Import):
            imports.extend((alias.name, ("",)) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")
                parent = ".".join(parents[: len(parents) - (node.level - 1)])
                base = f"{parent}.{base}" if base else parent
            imports.append((base, tuple(alias.name for alias in node.names)))
    return tuple(imports)


@functools.cache
def _file_digest(path: Path, mtime_ns: int, size: int) -> bytes:
    del mtime_ns, size
    return hashlib.sha256(path.read_bytes()).digest()


def dependency_fingerprint(module_name: str) -> str:
    """A hash of the sources of :func:`dependency_files` (their names and contents)."""
    digest = hashlib.sha256()
    for path in dependency_files(module_name):
        stat = path.stat()
        digest.update(path.name.encode() + b"\0" + _file_digest(path, stat.st_mtime_ns, stat.st_size))
    return digest.hexdigest()


class _DependencyStampedLocator(_CacheLocator):
    """Numba's own locator for a kernel (same cache folder and file names), whose source stamp
    also holds :func:`dependency_fingerprint` of the kernel's module: a cached kernel compiled
    against other versions of those modules is stale, so Numba compiles it again."""

    def __init__(self, numba_locator: _CacheLocator, module_name: str) -> None:
        self._numba_locator = numba_locator
        self._module_name = module_name

    def ensure_cache_path(self) -> None:
        self._numba_locator.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._numba_locator.get_cache_path()

    def get_source_stamp(self) -> Any:
        return (self._numba_locator.get_source_stamp(), dependency_fingerprint(self._module_name))

    def get_disambiguator(self) -> str:
        return self._numba_locator.get_disambiguator()

    @property
    def _py_file(self) -> str:
        # Numba reads it to place its "Cannot cache compiled function" warning (a kernel that
        # holds a ctypes pointer or a large global array): without it that warning is an error.
        return self._numba_locator._py_file


class _DependencyStampedCacheImpl(_CompileResultCacheImpl):
    def __init__(self, py_func: Callable) -> None:
        super().__init__(py_func)
        self._locator = _DependencyStampedLocator(self._locator, py_func.__module__)


class _DependencyStampedCache(FunctionCache):
    """Numba's function cache with :class:`_DependencyStampedLocator`'s stamp."""

    _impl_class = _DependencyStampedCacheImpl


class _ParallelStampedCacheImpl(_DependencyStampedCacheImpl):
    # Numba names a kernel's cache files after the function and keys their entries on its
    # argument types, not on its flags: the parallel variant of a kernel (:func:`parallel`) gets
    # files of its own, or one would load the other's machine code.
    def __init__(self, py_func: Callable) -> None:
        super().__init__(py_func)
        self._filename_base = "parallel-" + self._filename_base


class _ParallelStampedCache(FunctionCache):
    """:class:`_DependencyStampedCache` in files of their own, for :func:`parallel` variants."""

    _impl_class = _ParallelStampedCacheImpl
