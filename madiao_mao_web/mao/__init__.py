"""Mao in the web app: a game against the agents (the Mao Master's or the players' calls), watched
games, replays of its records, the record of a finished game, and its page (the web module of
Mao's registry entry; what it defines is the protocol ``madiao_mao_web.games.WebGame``)."""

from importlib import resources

from madiao_mao_web.mao.live import MaoGame, mao_phrase_text, mao_reason_text, mao_seat_view, rule_texts
from madiao_mao_web.mao.replay import MaoReplay, read_record, record_deal

LIVE_GAME = MaoGame
REPLAY = MaoReplay
STATIC = resources.files(__name__) / "static"
SCRIPT = "page.js"
STYLESHEET = "page.css"
PLAY_FORM = "play.html"
WATCH_FORM = "watch.html"
PAGE_TITLE = "Mao"

__all__ = [
    "LIVE_GAME",
    "PAGE_TITLE",
    "PLAY_FORM",
    "REPLAY",
    "SCRIPT",
    "STATIC",
    "STYLESHEET",
    "WATCH_FORM",
    "MaoGame",
    "MaoReplay",
    "mao_phrase_text",
    "mao_reason_text",
    "mao_seat_view",
    "read_record",
    "record_deal",
    "rule_texts",
]
