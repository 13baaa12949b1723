"""Mao in the web app: a game against the agents (the Mao Master's or the players' calls), watched
games, replays of its records, the record of a finished game, and its page (the web module of
Mao's registry entry; what it defines is the protocol ``madiao_mao_web.games.WebGame``)."""

from importlib import resources

from madiao_mao_web.games import WEB_GAME_NAMES
from madiao_mao_web.mao.live import MaoGame, mao_phrase_text, mao_reason_text, mao_seat_view

# WebGame's functions, named in __all__ through WEB_GAME_NAMES ("as" marks a re-export for linters).
from madiao_mao_web.mao.live import rule_texts as rule_texts
from madiao_mao_web.mao.replay import MaoReplay
from madiao_mao_web.mao.replay import read_record as read_record
from madiao_mao_web.mao.replay import record_deal as record_deal

LIVE_GAME = MaoGame
REPLAY = MaoReplay
STATIC = resources.files(__name__) / "static"
SCRIPT = "page.js"
STYLESHEET = "page.css"
PLAY_FORM = "play.html"
WATCH_FORM = "watch.html"
PAGE_TITLE = "Mao"

__all__ = [
    *WEB_GAME_NAMES,
    "MaoGame",
    "MaoReplay",
    "mao_phrase_text",
    "mao_reason_text",
    "mao_seat_view",
]
