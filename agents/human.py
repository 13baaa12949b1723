"""A person at the terminal, behind the same ``act(observation, action_mask)`` call shape.

The prompt lists the legal moves with numbers and names; a move is typed as its number or as
text. Madiao (``HumanAgent``): "play 9S", "slough 100T", "redeal", "pass", or a bare card name
(played face up when that is legal, else sloughed). Mao (``MaoHumanAgent``): "play 9D", "draw",
"say last-card", "end", "rule 12", or a bare card name (played). Anything else is explained and
asked again; "help" shows the forms, "state" the table again, "quit" or end of input (Ctrl-D)
ends the game cleanly via ``HumanQuit``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from madiao_env import cards
from madiao_mao.agents.base import Agent, legal_actions

HELP = (
    "Type the number of a move, or 'play <card>', 'slough <card>', a card name alone "
    "(played face up if it can capture or lead, else sloughed face down), 'redeal' or 'pass'.\n"
    "Card names: 9C..1C HC 0C (cash, 0C highest), 1S..9S, 1M..9M, 20T..90T 100T 1000T 10000T.\n"
    "'state' shows the table again, 'quit' (or Ctrl-D) leaves."
)


class HumanQuit(Exception):  # noqa: N818 - a way out of the game, not an error
    """The person asked to leave (or input ended)."""


class HumanAgent(Agent):
    """Reads moves from ``read_line`` (default ``input``) and writes prompts with ``write``.

    ``show_state()`` (given by the play loop) prints what this seat can see: before each move,
    or, with ``show_state_each_move=False`` (when the loop shows the table itself, as Mao's does
    at the start of each turn), only when the person types "state".
    """

    def __init__(
        self,
        read_line: Callable[[str], str] | None = None,
        write: Callable[[str], None] | None = None,
        show_state: Callable[[], None] | None = None,
        name: str = "you",
        show_state_each_move: bool = True,
    ) -> None:
        # None: the builtins looked up at each call, not bound when this module was first imported
        # (a test that replaced ``input`` then would leave its stand-in to every later player).
        self.read_line = read_line if read_line is not None else lambda prompt: input(prompt)
        self.write = write if write is not None else lambda text: print(text)
        self.show_state = show_state
        self.name = name
        self.show_state_each_move = show_state_each_move

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = [int(a) for a in legal_actions(action_mask)]
        if self.show_state is not None and self.show_state_each_move:
            self.show_state()
        self.write(self.moves_text(legal))
        while True:
            try:
                line = self.read_line("> ")
            except EOFError:
                self.write("")
                raise HumanQuit("end of input") from None
            choice = self.parse(line, legal)
            if isinstance(choice, int):
                return choice
            self.write(choice)

    help_text = HELP

    def describe(self, action: int) -> str:
        """A legal move as listed in the prompt."""
        return cards.action_to_text(action)

    def moves_text(self, legal: list[int]) -> str:
        return "Your move: " + "  ".join(f"[{i + 1}] {self.describe(a)}" for i, a in enumerate(legal))

    def parse(self, line: str, legal: list[int]) -> int | str:
        """The chosen action id, or a message saying why the line is not a legal move."""
        text = line.strip().lower()
        if not text:
            return "Please type a move (or 'help')."
        if text in ("quit", "exit", "q"):
            raise HumanQuit("quit")
        if text in ("help", "?", "h"):
            return self.help_text
        if text in ("state", "table", "hand"):
            if self.show_state is not None:
                self.show_state()
            return self.moves_text(legal)
        if text.isdigit():
            number = int(text)
            if 1 <= number <= len(legal):
                return legal[number - 1]
            return f"There is no move {number}; choose 1..{len(legal)}."
        words = text.split()
        if len(words) == 1 and words[0] not in ("redeal", "pass"):
            try:
                card = cards.card_id(words[0])
            except cards.UnknownCardError:
                return f"{line.strip()!r} is neither a move number nor a card name (type 'help')."
            for action in (cards.ACTION_PLAY + card, cards.ACTION_SLOUGH + card):
                if action in legal:
                    return action
            return f"You cannot play {cards.CARD_NAMES[card]} now (you do not hold it)."
        if len(words) == 2 and words[0] in ("p", "s"):
            words[0] = "play" if words[0] == "p" else "slough"
        if len(words) == 2:  # keep the card name as typed, so an error quotes the player's words
            words[1] = line.split()[1]
        try:
            action = cards.text_to_action(" ".join(words))
        except (ValueError, cards.UnknownCardError) as error:
            return f"{error} (type 'help')."
        if action not in legal:
            return f"'{cards.action_to_text(action)}' is not legal now."
        return action


MAO_HELP = (
    "Type the number of a move, or 'play <card>' (or the card name alone), 'draw', "
    "'say <phrase>', 'end' (ends your turn: the Mao Master then judges it), 'rule <number>' "
    "(after winning a round: your new secret rule).\n"
    "Card names: AS 10H QD ... (rank, then suit C D H S), JK for a joker.\n"
    "'state' shows the table again, 'quit' (or Ctrl-D) leaves."
)


class MaoHumanAgent(HumanAgent):
    """A person playing Mao: the same prompt as :class:`HumanAgent`, with Mao's moves.

    ``n_rules`` is the size of the env's rule library (the ``rule N`` actions)."""

    help_text = MAO_HELP

    def __init__(self, n_rules: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.n_rules = n_rules

    def describe(self, action: int) -> str:
        # Imported here: the game's own modules load only when it is used.
        from mao_env import cards as mao_cards
        from mao_env import rules as mao_rules

        text = mao_cards.action_to_text(action, self.n_rules)
        if action >= mao_cards.CHOOSE_RULE_0:
            text += f" ({mao_rules.RULE_DESCRIPTIONS[action - mao_cards.CHOOSE_RULE_0]})"
        return text

    def parse(self, line: str, legal: list[int]) -> int | str:
        # Imported here: the game's own modules load only when it is used.
        from mao_env import cards as mao_cards

        text = line.strip()
        if text.lower() in ("quit", "exit", "q", "help", "?", "h", "state", "table", "hand", "") or (
            text.isdigit()
        ):
            return super().parse(line, legal)
        words = text.split()
        if len(words) == 1 and words[0].lower() not in ("draw", "end"):
            text = f"play {words[0]}"  # a bare card name is played
        try:
            action = mao_cards.text_to_action(text, self.n_rules)
        except ValueError as error:
            return f"{error} (type 'help')."
        if action not in legal:
            return f"'{mao_cards.action_to_text(action, self.n_rules)}' is not possible now."
        return action
