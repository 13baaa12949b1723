"use strict";

(() => {
  const card = (value) => el("span", { class: "card", text: value === undefined ? "?" : String(value) });
  const table = (view) =>
    el(
      "div",
      { class: "table", "data-testid": "table" },
      (view.seats || [0, 1, 2].map((seat) => ({ seat, name: `seat ${seat}` }))).map((seat) =>
        el("p", { text: `${seat.name}: ${(view.moves || [])[seat.seat] || "-"}` }, card(((view.hands || [])[seat.seat] || [])[0])),
      ),
    );
  const moves = (view) =>
    (view.animating ? [] : view.legal).map((move) => el("button", { class: "move", "data-action": move, onclick: () => sendMove(move) }, move));
  registerGamePage("tiny", {
    table,
    hand: (view) => el("div", { class: "panel your-hand" }, el("div", { class: "moves" }, moves(view))),
    panels: (view) => (view.over ? [endLinks(view, "Play again")] : []),
    status: (view) => (view.over ? "Game over." : `Seat ${view.to_act} to act.`),
    cardFace: (value) => card(value),
    replayFrame: (frame) => [table({ moves: frame.moves, hands: (frame.cards || []).map((c) => (c === null ? [] : [c])) })],
  });
})();
