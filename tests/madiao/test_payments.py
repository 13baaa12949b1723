"""Every Madiao payment is stated once, in madiao_env.payments: the kernels and the reference read
their amounts and rule ids from there, never as bare numbers or strings (issue 10)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import pytest

from madiao_env import core, payments, reference, state

ROOT = Path(__file__).resolve().parents[2]
# The core's line-adding helpers, and which positional argument carries the stakes / the rule id.
CORE_LINE_CALLS = {"_add_line": (6, 3), "_seat_earns": (4, 5), "_seat_pays": (4, 5)}


def _function_ast(function) -> ast.FunctionDef:
    source = textwrap.dedent(inspect.getsource(getattr(function, "py_func", function)))
    return ast.parse(source).body[0]


def _calls(tree: ast.AST, names) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]


def _has_number(node: ast.AST) -> bool:
    return any(
        isinstance(sub, ast.Constant)
        and isinstance(sub.value, (int, float))
        and not isinstance(sub.value, bool)
        for sub in ast.walk(node)
    )


@pytest.mark.parametrize("kernel", [core._declare, core._play_card, core._settle_play])
def test_core_payment_lines_use_named_amounts_and_rule_ids(kernel):
    calls = _calls(_function_ast(kernel), CORE_LINE_CALLS)
    assert calls, f"{kernel.__name__} adds no payment line"
    for call in calls:
        stakes_at, rule_at = CORE_LINE_CALLS[call.func.id]
        stakes, rule = call.args[stakes_at], call.args[rule_at]
        where = f"{kernel.__name__}: {ast.unparse(call)}"
        assert not _has_number(stakes), where
        assert isinstance(rule, ast.Name) and rule.id.startswith("RULE_"), where
        assert getattr(core, rule.id) == getattr(payments, rule.id), where


def test_meld_stakes_returns_named_amounts():
    returns = [
        node.value for node in ast.walk(_function_ast(core._meld_stakes)) if isinstance(node, ast.Return)
    ]
    numbers = [ast.unparse(value) for value in returns if _has_number(value)]
    assert numbers == ["0"]  # "no meld"; every meld's amount is a name


def test_reference_payments_use_named_amounts_and_rule_names():
    tree = ast.parse((ROOT / "madiao_env" / "reference.py").read_text())
    calls = _calls(tree, {"Payment", "banker_line"})
    assert len(calls) >= 10
    for call in calls:
        rule, stakes = (call.args[0], call.args[3]) if call.func.id == "Payment" else call.args[::3][:2]
        where = ast.unparse(call)
        assert not (isinstance(rule, ast.Constant) and isinstance(rule.value, str)), where
        assert not _has_number(stakes), where
    assert "stakes = 1.0" not in (ROOT / "madiao_env" / "reference.py").read_text()


def test_one_rule_table_everywhere():
    assert core.RULE_NAMES is payments.RULE_NAMES
    assert [
        getattr(core, name) for name in dir(payments) if name.startswith("RULE_") and name != "RULE_NAMES"
    ] == [
        getattr(payments, name) for name in dir(payments) if name.startswith("RULE_") and name != "RULE_NAMES"
    ]
    assert state.MAX_LINE_STAKES == payments.MAX_LINE_STAKES == 8
    rules_doc = (ROOT / "docs" / "madiao-rules.md").read_text()
    for name in payments.RULE_NAMES:
        assert f"(`{name}`)" in rules_doc
    assert reference.MINIMUM_TRICKS == payments.MINIMUM_TRICKS
