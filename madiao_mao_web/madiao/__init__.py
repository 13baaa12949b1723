"""Madiao in the web app: a hand or a match against the agents, watched games, replays of its
records, and its page (the web module of Madiao's registry entry; what it defines is the protocol
``madiao_mao_web.games.WebGame``)."""

from importlib import resources

from madiao_mao_web.games import WEB_GAME_NAMES
from madiao_mao_web.madiao.live import (
    MadiaoGame,
    madiao_card,
    madiao_role,
    madiao_settlement_view,
    madiao_sorted,
    madiao_trick_view,
)

# WebGame's functions, named in __all__ through WEB_GAME_NAMES ("as" marks a re-export for linters).
from madiao_mao_web.madiao.live import rule_texts as rule_texts
from madiao_mao_web.madiao.replay import MadiaoReplay
from madiao_mao_web.madiao.replay import read_record as read_record
from madiao_mao_web.madiao.replay import record_deal as record_deal

LIVE_GAME = MadiaoGame
REPLAY = MadiaoReplay
STATIC = resources.files(__name__) / "static"
SCRIPT = "page.js"
STYLESHEET = None
PLAY_FORM = "play.html"
WATCH_FORM = "watch.html"
PAGE_TITLE = "Madiao 馬弔"

__all__ = [
    *WEB_GAME_NAMES,
    "MadiaoGame",
    "MadiaoReplay",
    "madiao_card",
    "madiao_role",
    "madiao_settlement_view",
    "madiao_sorted",
    "madiao_trick_view",
]
