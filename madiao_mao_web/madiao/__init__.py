"""Madiao in the web app: a hand or a match against the agents, watched games, replays of its
records, and its page (the web module of Madiao's registry entry; what it defines is the protocol
``madiao_mao_web.games.WebGame``)."""

from importlib import resources

from madiao_mao_web.madiao.live import (
    MadiaoGame,
    madiao_card,
    madiao_role,
    madiao_settlement_view,
    madiao_sorted,
    madiao_trick_view,
    rule_texts,
)
from madiao_mao_web.madiao.replay import MadiaoReplay, read_record, record_deal

LIVE_GAME = MadiaoGame
REPLAY = MadiaoReplay
STATIC = resources.files(__name__) / "static"
SCRIPT = "page.js"
STYLESHEET = None
PLAY_FORM = "play.html"
WATCH_FORM = "watch.html"
PAGE_TITLE = "Madiao 馬弔"

__all__ = [
    "LIVE_GAME",
    "PAGE_TITLE",
    "PLAY_FORM",
    "REPLAY",
    "SCRIPT",
    "STATIC",
    "STYLESHEET",
    "WATCH_FORM",
    "MadiaoGame",
    "MadiaoReplay",
    "madiao_card",
    "madiao_role",
    "madiao_settlement_view",
    "madiao_sorted",
    "madiao_trick_view",
    "read_record",
    "record_deal",
    "rule_texts",
]
