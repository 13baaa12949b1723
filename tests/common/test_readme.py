"""The README's facts that the code decides: the table of the environments (players, observation
and action sizes) and the test command, which must be the one CI runs (``.ci/run``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.common.test_docs_code_blocks import code_blocks

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def environment_table() -> dict[str, tuple[str, str]]:
    """The rows of the README's table of the environments: {row title: (Madiao cell, Mao cell)}."""
    section = README.split("## The environments", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] and not set(cells[0]) <= {"-", " "}:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def observation_size(env) -> int:
    return int(env.observation_space(env.possible_agents[0])["observation"].shape[0])


def test_the_table_of_the_environments_gives_the_sizes_of_the_code():
    from madiao_env import madiao_v0
    from mao_env import cards as mao_cards
    from mao_env import mao_v0
    from mao_env.options import MaoOptions

    table = environment_table()
    madiao, mao = table["observation"]
    assert f'{observation_size(madiao_v0.env()):,} numbers (`obs_type="summary"`, default)' in madiao
    assert f', {observation_size(madiao_v0.env(obs_type="history")):,} (`"history"`' in madiao
    assert f'or {observation_size(madiao_v0.env(obs_type="record")):,} (`"record"`' in madiao
    assert f"{observation_size(mao_v0.env()):,} numbers (default: " in mao
    assert f"the last {MaoOptions.n_events} public events" in mao
    assert f'or {observation_size(mao_v0.env(obs_type="summary")):,} (`obs_type="summary"`)' in mao
    madiao, mao = table["actions"]
    assert madiao.startswith(f"{madiao_v0.env().action_space('player_0').n}: ")
    assert mao.startswith(f"{mao_v0.env().action_space('player_0').n} sub-actions")
    assert f"one of {mao_cards.N_CARD_TYPES} card types" in mao
    assert f"one of {mao_cards.N_PHRASES} phrases" in mao
    win, penalty = MaoOptions.win_reward, MaoOptions.penalty_card_reward
    assert table["rewards"][1] == f"{win:+g} for a round won, {penalty:g} per penalty card (defaults)"
    madiao, mao = table["players"]
    assert madiao.startswith(f"{len(madiao_v0.env().possible_agents)} ")
    assert mao == f"2 to {mao_cards.MAX_PLAYERS} (default {MaoOptions.n_players})"


def install_and_pytest(text: str) -> tuple[str, str]:
    """(the extras installed, the pytest command) of the first command line that runs the suite."""
    extras = re.search(r'pip install (?:-q )?-e "\.\[([a-z,]+)\]"', text)
    pytest_line = re.search(r"python -m pytest [^\n`#&]*", text)
    assert extras and pytest_line, text
    return extras.group(1), pytest_line.group(0).strip()


def test_the_readme_test_command_is_the_one_ci_runs():
    quick_start_tests = README.split("\nTests:\n", 1)[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme_extras, readme_pytest = install_and_pytest(quick_start_tests)
    ci_extras, ci_pytest = install_and_pytest(ci)
    assert readme_pytest == ci_pytest == "python -m pytest -n 2 --dist loadgroup -q"
    assert readme_extras == ci_extras
    development = README.split("## Development", 1)[1]
    assert install_and_pytest(development) == (ci_extras, ci_pytest)


def test_the_mao_example_ends_its_round_at_every_table_size():
    """The README's Mao loop (your policy in seat 0, base-rules players in the others) ends its
    round by a win, not by the step cap, at 3, 4 and 8 players (seeds 0-7)."""
    (example,) = [b.code for b in code_blocks(ROOT / "README.md") if "mao_v0.env(n_players=4)" in b.code]
    assert "seed=0)" in example
    runs = [(n, seed) for n in (3, 4, 8) for seed in range(8)]
    program = "\n".join(
        f"print('table', {n}, {seed})\n"
        + example.replace("n_players=4", f"n_players={n}").replace("seed=0)", f"seed={seed})")
        for n, seed in runs
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    outcomes = [line.split(" {")[0] for line in result.stdout.splitlines() if not line.startswith("table")]
    assert outcomes == ["round won"] * len(runs), result.stdout
