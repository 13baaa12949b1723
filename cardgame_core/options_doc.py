"""The ``Args:`` section of ``env()``/``raw_env()`` made from the options object's field docstrings,
and the options passed on from their explicit signatures.

Each game documents an option once, as the docstring under its field in the frozen options
dataclass (``madiao_env.options.MadiaoOptions``, ``mao_env.options.MaoOptions``); the entry points
show those same texts in ``help()`` instead of keeping a copy that could drift.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

Documented = TypeVar("Documented", bound=Callable)


def field_docs(options_class: type) -> dict[str, str]:
    """The docstring written under each field of ``options_class``, by field name (a field
    without one is left out; so is everything when the source cannot be read)."""
    try:
        source = textwrap.dedent(inspect.getsource(options_class))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0].body
    docs = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(inspect.cleandoc(following.value.value).split())
    return docs


def document_options(options_class: type, **other_args: str) -> Callable[[Documented], Documented]:
    """A decorator appending an ``Args:`` section to a function's or class's docstring: the
    parameters of ``other_args`` (those that are not game options) with the texts given, then
    every field of ``options_class`` with its field docstring, in the signature's order."""
    docs = {**field_docs(options_class), **other_args}

    def decorate(target: Documented) -> Documented:
        signature = inspect.signature(target)
        lines = [
            _wrapped(f"{name}: {docs[name]}")
            for name in signature.parameters
            if name in docs and name != "self"
        ]
        target.__doc__ = inspect.cleandoc(target.__doc__ or "") + "\n\nArgs:\n" + "\n".join(lines) + "\n"
        return target

    return decorate


def _wrapped(text: str) -> str:
    return textwrap.fill(text, width=100, initial_indent="    ", subsequent_indent="        ")


def option_values(options_class: type, arguments: dict[str, Any]) -> dict[str, Any]:
    """The game options among an entry point's ``arguments`` (its ``locals()`` on entry), by the
    fields of ``options_class``: the entry points keep explicit signatures for ``help()`` and static
    tools, and pass the options on without naming each one again."""
    return {field.name: arguments[field.name] for field in dataclasses.fields(options_class)}
