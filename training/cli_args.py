"""The command line's shared pieces: the tyro parse of a dataclass command (``parse_dataclass``,
``parse_subcommands``), output-path checks, agent loading and the one-line user-error contract
(``run_reporting_user_errors``).

Every entry point (``madiao-mao``, ``python -m madiao_mao.training.mao.evaluation`` and the other
training modules' own, ``python -m madiao_mao.benchmarks``) uses these, so they live apart from
``madiao_mao.cli``, which imports the trainer and the games.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

Parsed = TypeVar("Parsed")

#: What a user can get wrong (bad values, paths, a missing extra); anything else is a bug and
#: keeps its traceback.
USER_ERRORS = (ValueError, OSError, ImportError)


def parse_dataclass(
    target: type[Parsed], argv: Sequence[str], *, prog: str, default: Parsed | None = None
) -> Parsed:
    """``tyro.cli(target)`` on ``argv`` (``default``: the instance whose values the flags start
    from), under the one-line contract: ``--help`` prints and exits with status 0 as argparse's
    does, and a usage error, which tyro draws as a box, is one ValueError line naming it."""
    # Imported here: keeps tyro off this module's import path.
    import tyro

    return _one_line_errors(
        lambda: tyro.cli(
            target, args=list(argv), prog=prog, default=tyro.MISSING_NONPROP if default is None else default
        ),
        prog,
    )


def parse_subcommands(commands: Mapping[str, type], argv: Sequence[str], *, prog: str) -> Any:
    """The options dataclass of the subcommand ``argv`` names (``commands``: each subcommand's
    dataclass, by name), parsed by tyro under ``parse_dataclass``'s one-line contract."""
    # Imported here: keeps tyro off this module's import path.
    import tyro

    return _one_line_errors(
        lambda: tyro.extras.subcommand_cli_from_dict(dict(commands), args=list(argv), prog=prog), prog
    )


def _one_line_errors(parse: Callable[[], Parsed], prog: str) -> Parsed:
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            parsed = parse()
    except SystemExit as exit_:
        if exit_.code:
            raise ValueError(f"{boxed_message(captured.getvalue())} (see {prog} --help)") from None
        sys.stderr.write(captured.getvalue())
        raise
    sys.stderr.write(captured.getvalue())  # anything tyro said on stderr besides an error (a warning)
    return parsed


def boxed_message(text: str) -> str:
    """The message of an error box drawn by tyro (its first section), on one line; text that is
    not a box is returned on one line as it is."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # colours, when stderr is a terminal
    message: list[str] = []
    for line in text.splitlines():
        inside = line.strip().strip("│").strip()
        if line.lstrip().startswith(("╭", "╰")) or not inside:
            continue
        if set(inside) <= {"─"}:  # the rule under the first section
            break
        message.append(inside)
    text = " ".join(message) or " ".join(text.split()) or "invalid arguments"
    # "Error parsing --n-envs: invalid literal ..." reads "--n-envs: invalid literal ...".
    return re.sub(r"^Error parsing ", "", text)


def one_line(error: BaseException) -> str:
    """An exception's message on one line, without a leading "Error: " (some libraries put one
    there, and the caller already says "error:")."""
    text = " ".join(str(error).split()) or type(error).__name__
    while text.lower().startswith("error:"):
        text = text[len("error:") :].lstrip()
    return text


def run_reporting_user_errors(prog: str, body: Callable[[], int]) -> int:
    """``body()``, with a user error turned into one line on stderr and status 2 (130 on Ctrl-C,
    141 when the reader of its output went away)."""
    try:
        return body()
    except BrokenPipeError:
        # The reader went away (`madiao-mao replay game.json | head`): stop quietly, as Unix tools
        # do. Python would otherwise also complain when it flushes stdout at exit, so stdout is
        # pointed at devnull first (the Python docs' recipe, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it
    except USER_ERRORS as error:
        print(f"{prog}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def check_at_least(flag: str, value: int | None, minimum: int) -> None:
    """A ValueError naming ``flag`` unless ``value`` (an option parsed as an integer; None when not
    given) is at least ``minimum``: the range check of a dataclass command's integer option."""
    if value is not None and (isinstance(value, bool) or value < minimum):
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{flag}: expected {what}, got {value}")


def check_output_folder(path: str | None, option: str) -> None:
    """A folder to write into: it may exist (as a folder) or be created (no file in the way)."""
    if path is None:
        return
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {path} is an existing file, not a folder")
    _check_creatable(folder.parent, option, path)


def check_output_file(path: str | None, option: str) -> None:
    """A file to write: not a folder, and its folder exists or can be created."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{option} {path} is a folder; give a file name")
    _check_creatable(target.parent, option, path)


def _check_creatable(folder: Path, option: str, path: str) -> None:
    for ancestor in (folder, *folder.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ValueError(f"{option} {path}: {ancestor} is a file, not a folder")
            return


def check_model(spec: str, game: str) -> None:
    """Load a ``model:PATH`` spec once (nothing for other specs), so that a missing or corrupt
    model is reported before any game is played by code that loads its agents later."""
    # Imported here: keeps numpy off this module's import path.
    from madiao_mao.agents.registry import MODEL_PREFIX

    if spec.startswith(MODEL_PREFIX):
        load_agent(spec, game)


def load_agent(spec: str, game: str, *, seed: int | None = None, env=None):
    """``madiao_mao.agents.registry.make_agent`` with a model that cannot be loaded reported as one
    ValueError naming the file (SB3 raises many kinds of errors for a corrupt zip)."""
    # Imported here: keeps numpy off this module's import path.
    from madiao_mao.agents.registry import MODEL_PREFIX, make_agent

    if not spec.startswith(MODEL_PREFIX):
        return make_agent(spec, game, seed=seed, env=env)
    path = spec[len(MODEL_PREFIX) :]
    if not Path(path).is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    try:
        return make_agent(spec, game, seed=seed, env=env)
    except Exception as error:
        raise ValueError(f"cannot load the model {path}: {one_line(error)}") from error
