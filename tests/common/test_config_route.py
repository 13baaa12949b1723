"""The training config's route through the code stays short (issue 31).

Read statically from the source: starting as ``config`` in ``train()``, follow every call that
passes the config on, or passes a name that holds it (a name assigned from a call that was handed
the config, as ``run = open_run(config)``), or a part of either (``run.config.seed``), into the
project's function it names (a module's function, a class's constructor, a ``self`` method, a
name imported from another project module). Each function is entered once per parameter name,
in source order. A *stay* is a run of consecutive functions in one file; a *return* is a stay in
a file the route had already left. Calls through attributes of other objects, dynamic dispatch
and the standard library are not followed, so the figure is a lower bound of what a reader
walks; it is measured the same way before and after a change.

    python -m tests.common.test_config_route     # prints the route and its figures
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START = ("training/sb3/train.py", "train", "config")
#: The most returns to a file already left that the route may make (issue 31; 22 before).
MAX_RETURNS = 20
#: pyproject's package-dir: these import names live in other folders.
PACKAGE_DIRS = {
    "madiao_mao.agents": "agents",
    "madiao_mao.training": "training",
    "madiao_mao.benchmarks": "benchmarks",
}


def _module_file(module: str) -> Path | None:
    for prefix, folder in PACKAGE_DIRS.items():
        if module == prefix or module.startswith(prefix + "."):
            module = folder + module[len(prefix) :]
            break
    base = REPO / module.replace(".", "/")
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _package_of(path: Path) -> str:
    dotted = ".".join(path.relative_to(REPO).parts[:-1])
    for prefix, folder in PACKAGE_DIRS.items():
        if dotted == folder or dotted.startswith(folder + "."):
            return prefix + dotted[len(folder) :]
    return dotted


@dataclass
class _Module:
    path: Path
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # "name" or "Class.name"
    imported_names: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (module, name)
    imported_modules: dict[str, str] = field(default_factory=dict)  # local -> module


class _Index:
    def __init__(self) -> None:
        self._modules: dict[Path, _Module] = {}

    def module(self, path: Path) -> _Module:
        if path not in self._modules:
            self._modules[path] = self._read(path)
        return self._modules[path]

    def _read(self, path: Path) -> _Module:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = _Module(path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                found.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.functions[f"{node.name}.{item.name}"] = item
        package = _package_of(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    local, full = alias.asname or alias.name, f"{base}.{alias.name}"
                    if _module_file(full) is not None:
                        found.imported_modules[local] = full
                    else:
                        found.imported_names[local] = (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.imported_modules[alias.asname or alias.name] = alias.name
        return found

    def lookup(self, module_name: str, name: str, depth: int = 0) -> tuple[_Module, str] | None:
        path = _module_file(module_name)
        if path is None or depth > 3:
            return None
        found = self.module(path)
        for key in (name, f"{name}.__init__"):
            if key in found.functions:
                return found, key
        if name in found.imported_names:  # a name handed on by a package's __init__
            return self.lookup(*found.imported_names[name], depth + 1)
        return None

    def callee(self, module: _Module, caller: str, call: ast.Call) -> tuple[_Module, str] | None:
        function = call.func
        if isinstance(function, ast.Name):
            for key in (function.id, f"{function.id}.__init__"):
                if key in module.functions:
                    return module, key
            if function.id in module.imported_names:
                return self.lookup(*module.imported_names[function.id])
        elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            owner = function.value.id
            if owner == "self" and "." in caller:
                method = f"{caller.split('.')[0]}.{function.attr}"
                return (module, method) if method in module.functions else None
            if owner in module.imported_modules:
                return self.lookup(module.imported_modules[owner], function.attr)
            if f"{owner}.{function.attr}" in module.functions:
                return module, f"{owner}.{function.attr}"
        return None


def _parameter(
    function: ast.FunctionDef, qualname: str, position: int | None, keyword: str | None
) -> str | None:
    positional = [a.arg for a in function.args.posonlyargs + function.args.args]
    if "." in qualname and positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if keyword is not None:
        return keyword if keyword in positional + [a.arg for a in function.args.kwonlyargs] else None
    return positional[position] if position is not None and position < len(positional) else None


def _holds(node: ast.AST, names: set[str]) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names


def config_route() -> list[tuple[str, str]]:
    """(file, function) in the order the config's route enters them."""
    index = _Index()
    route: list[tuple[str, str]] = []
    entered: set[tuple[Path, str, str]] = set()

    def enter(module: _Module, qualname: str, parameter: str) -> None:
        if (module.path, qualname, parameter) in entered:
            return
        entered.add((module.path, qualname, parameter))
        route.append((module.path.relative_to(REPO).as_posix(), qualname))
        names = {parameter}
        body = [n for n in ast.walk(module.functions[qualname]) if isinstance(n, (ast.Call, ast.Assign))]
        for node in sorted(body, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Assign):
                value = node.value
                handed = isinstance(value, ast.Call) and any(
                    _holds(a, names) for a in [*value.args, *(k.value for k in value.keywords)]
                )
                if handed or _holds(value, names):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
                continue
            passed = [(i, None) for i, a in enumerate(node.args) if _holds(a, names)]
            passed += [(None, k.arg) for k in node.keywords if k.arg and _holds(k.value, names)]
            target = index.callee(module, qualname, node) if passed else None
            if target is None:
                continue
            callee_module, callee = target
            for position, keyword in passed:
                callee_parameter = _parameter(callee_module.functions[callee], callee, position, keyword)
                if callee_parameter:
                    enter(callee_module, callee, callee_parameter)

    file, function, parameter = START
    enter(index.module(REPO / file), function, parameter)
    return route


def route_figures(route: list[tuple[str, str]]) -> tuple[list[tuple[str, list[str]]], int, int]:
    """The route's stays (file, functions), the number of files, and the returns."""
    stays: list[tuple[str, list[str]]] = []
    visited: set[str] = set()
    returns = 0
    for file, function in route:
        if stays and stays[-1][0] == file:
            stays[-1][1].append(function)
            continue
        returns += file in visited
        visited.add(file)
        stays.append((file, [function]))
    return stays, len(visited), returns


def _describe(route: list[tuple[str, str]]) -> str:
    stays, n_files, returns = route_figures(route)
    lines = [f"{file}: {', '.join(functions)}" for file, functions in stays]
    lines.append(
        f"{len(route)} functions, {len(stays)} stays in {n_files} files, "
        f"{returns} returns to a file already left"
    )
    return "\n".join(lines)


def test_the_config_route_returns_to_a_file_already_left_at_most_max_returns_times():
    route = config_route()
    _, _, returns = route_figures(route)
    assert len(route) > 20, (
        "the route reaches the run's parts (a walker that follows nothing passes anything)"
    )
    assert returns <= MAX_RETURNS, _describe(route)


def test_the_walker_follows_a_holder_and_counts_a_return():
    figures = route_figures([("a.py", "f"), ("b.py", "g"), ("b.py", "h"), ("a.py", "i")])
    assert ([s[0] for s in figures[0]], figures[1], figures[2]) == (["a.py", "b.py", "a.py"], 2, 1)
    files = {file for file, _ in config_route()}
    # train() hands the config to open_run and keeps the Run it returns; the run reaches the league.
    assert {"training/run_folder.py", "training/league.py", "training/opponents.py"} <= files


if __name__ == "__main__":
    print(_describe(config_route()))
