"""One line on stderr when this project's Numba kernels are really being compiled.

The kernels are compiled with ``cache=True``: the first run compiles them (10-20 s per game) and
writes machine code to Numba's on-disk cache, later runs load it in well under a second. Without
a word the first run looks hung, so the first real compilation in a process prints::

    madiao-mao: compiling the Numba kernels (first run only: cached on disk for later runs) ...

Numba announces every compilation with a ``"numba:compile"`` event, and only a compilation: a
kernel loaded from a fresh cache raises no event, and a cache that is missing or stale (the source
changed, another Numba version) does. Listening to that event is therefore exact where checking
for cache index files would have to second-guess Numba's own rules. The line is printed at most
once per process and only for functions of this project's packages, read from the registry of
games (``project_packages``: the generic layers under ``madiao_mao``, ``cardgame_core`` and every
registered game's layer modules); a user's own ``@njit`` code stays silent. Nothing here may ever
break a compilation: every failure is swallowed.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from numba.core import event

from madiao_mao.games import LAYERS, games

#: The top-level packages of the project's generic code: this one and the distribution's namespace
#: (``madiao_mao.agents``, ``madiao_mao.training``, ``madiao_mao.benchmarks``, ...).
GENERIC_PACKAGES = frozenset({"cardgame_core", "madiao_mao"})

MESSAGE = "madiao-mao: compiling the Numba kernels (first run only: cached on disk for later runs) ..."


class CompileNotice(event.Listener):
    """Prints :data:`MESSAGE` to stderr at the first compilation of a project kernel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.printed = False

    def on_start(self, compile_event: Any) -> None:
        try:
            if self.printed or not _is_project_kernel(compile_event):
                return
            with self._lock:
                if self.printed:
                    return
                self.printed = True
            print(MESSAGE, file=sys.stderr, flush=True)
        except Exception:
            pass  # a notice must never break the compilation it announces

    def on_end(self, compile_event: Any) -> None:
        pass


def project_packages() -> frozenset[str]:
    """The top-level packages whose kernels the notice is about: the generic ones and those of every
    registered game's layer modules (read when asked: a game registered later counts)."""
    modules = (getattr(game, layer) for game in games().values() for layer in LAYERS)
    return GENERIC_PACKAGES | {module.split(".", 1)[0] for module in modules}


def _is_project_kernel(compile_event: Any) -> bool:
    dispatcher = (compile_event.data or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
    return module.split(".", 1)[0] in project_packages()


_NOTICE: CompileNotice | None = None


def install() -> None:
    """Listen for compilations (idempotent; called by :mod:`cardgame_core.jit` at import)."""
    global _NOTICE
    if _NOTICE is not None:
        return
    try:
        notice = CompileNotice()
        event.register("numba:compile", notice)
        _NOTICE = notice
    except Exception:
        pass  # a Numba without this event: no notice, and no failure either
