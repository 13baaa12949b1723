// madiao-mao web page: plain JS, no build step. The server holds the game; this page shows the
// view it gets (only the person's own seat) and sends the text of the move clicked, with the
// version of the view it was made on (a stale one is refused with 409: the page looks again).
// Every request body is JSON sent as application/json; the page has no inline script or style
// (the server's Content-Security-Policy allows only these files).
"use strict";

const errorBox = document.querySelector('[data-testid="error"]');
const announceBox = document.getElementById("announce");
const statusBox = document.getElementById("game-status");
const PAGE_ONLY_PARAMETERS = ["pause"]; // read here, never sent to the API
const DEFAULT_PAUSE_MS = 800;
let renders = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// data-state: "busy" while a request or the other seats' moves are shown, "ready" after; every
// "ready" renders a new data-render number (what the browser tests wait for).
function setState(state) {
  document.body.dataset.state = state;
  if (state === "ready") document.body.dataset.render = String(++renders);
}

function showError(message) {
  errorBox.textContent = message || "";
  errorBox.hidden = !message;
}

function announce(text) {
  announceBox.textContent = text;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (method === "POST") {
    options.headers["Content-Type"] = "application/json";
    options.body = body === undefined ? "{}" : typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const detail = data && data.detail ? data.detail : response.statusText;
    throw new ApiError(typeof detail === "string" ? detail : JSON.stringify(detail), response.status);
  }
  return data;
}

function panel(title, attrs, ...content) {
  return el("div", Object.assign({ class: "panel" }, attrs || {}), title ? el("h2", { text: title }) : null, ...content);
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function signed(x) {
  return x > 0 ? `+${x}` : String(x);
}

// ---------------------------------------------------------------- the pause between moves

function pauseMs() {
  const asked = new URLSearchParams(location.search).get("pause");
  if (asked !== null && /^\d{1,5}$/.test(asked)) return Number(asked);
  try {
    const stored = localStorage.getItem("madiao-mao-pause");
    if (stored !== null && /^\d{1,5}$/.test(stored)) return Number(stored);
  } catch (_) {
    // storage refused (private mode): the default
  }
  return DEFAULT_PAUSE_MS;
}

function setUpSpeed() {
  const select = document.querySelector('[data-testid="speed"]');
  const current = String(pauseMs());
  if (![...select.options].some((o) => o.value === current)) select.append(el("option", { value: current, text: `${current} ms` }));
  select.value = current;
  select.addEventListener("change", () => {
    const params = new URLSearchParams(location.search);
    if (params.has("pause")) {
      params.set("pause", select.value);
      history.replaceState(null, "", `${location.pathname}?${params}`);
    }
    try {
      localStorage.setItem("madiao-mao-pause", select.value);
    } catch (_) {
      // not kept: the choice still holds for this page
    }
  });
}

// ---------------------------------------------------------------- seats around the table

// The seats other than the viewer's, in play order from the viewer's right (the next seat in
// Madiao's counter-clockwise order), placed on the right side, across the top, on the left.
function seatSides(n, viewer) {
  const others = [];
  for (let k = 1; k < n; k++) others.push((viewer + k) % n);
  const side = others.length <= 1 ? 0 : Math.max(1, Math.round(others.length / 3));
  return {
    right: others.slice(0, side),
    top: others.slice(side, others.length - side),
    left: others.slice(others.length - side),
  };
}

function tableLayout(n, viewer, seatBox, center) {
  const sides = seatSides(n, viewer);
  return el(
    "div",
    { class: "table", "data-testid": "table" },
    el("div", { class: "side side-top" }, sides.top.map(seatBox)),
    el("div", { class: "side side-left" }, sides.left.map(seatBox)),
    el("div", { class: "felt" }, center),
    el("div", { class: "side side-right" }, sides.right.map(seatBox)),
    el("div", { class: "side side-bottom" }, seatBox(viewer))
  );
}

function seatName(view, seat) {
  if (seat === view.seat) return "You";
  return `Seat ${seat} · ${view.seats[seat].name}`;
}

function seatTitle(view, seat) {
  if (seat === view.seat) return el("div", { class: "seat-name", text: "You" });
  return el("div", { class: "seat-name" }, `Seat ${seat}`, el("span", { class: "seat-agent", text: view.seats[seat].name }));
}

// ---------------------------------------------------------------- Madiao

function madiaoCardFace(card, extraClass) {
  if (!card) return el("span", { class: `card back ${extraClass || ""}`, title: "face down", "aria-label": "a face-down card" });
  return el(
    "span",
    { class: `card suit-${card.suit} ${extraClass || ""}`, title: `${card.chinese} ${card.name}` },
    el("span", { class: "cn", text: card.chinese }),
    el("span", { class: "short", text: card.name })
  );
}

function madiaoSeat(view, seat) {
  const info = view.seats[seat];
  const toAct = !view.over && !view.animating && view.to_act === seat;
  return el(
    "div",
    { class: `seat ${info.side}${toAct ? " to-act" : ""}${seat === view.seat ? " mine" : ""}`, "data-seat": seat },
    seatTitle(view, seat),
    el("div", { class: "seat-role" }, el("span", { class: `badge ${info.side}`, text: info.side === "banker" ? "Banker" : "Player" }), ` ${info.role}`),
    el("div", { class: "seat-count", text: `${plural(info.cards, "card")} · ${plural(info.tricks_won, "trick")}` }),
    toAct ? el("div", { class: "seat-turn", text: seat === view.seat ? "your turn" : "to play" }) : null
  );
}

// Where each seat's card lies in the middle: in front of its seat.
function relativePosition(seat, viewer, n) {
  return ["pos-bottom", "pos-right", "pos-top", "pos-left"][(seat - viewer + n) % n];
}

function madiaoTrickArea(view, viewer) {
  const current = view.trick;
  const showing = current.plays.length ? current : view.last_trick;
  const complete = !current.plays.length || current.winner !== null;
  const plays = showing
    ? showing.plays.map((p) =>
        el(
          "div",
          { class: `trick-play ${relativePosition(p.seat, viewer, 4)}${p.winning ? " winning" : ""}${p.face_up ? "" : " down"}` },
          madiaoCardFace(p.card, p.winning ? "winning-card" : ""),
          p.winning ? el("span", { class: "win-mark", text: complete ? "won" : "winning" }) : null,
          !p.face_up && p.card ? el("span", { class: "down-mark", text: "face down" }) : null
        )
      )
    : [];
  const lines = [];
  if (current.plays.length) lines.push(el("p", { class: "led", "data-testid": "suit-led" }, `Suit led: ${current.led_suit}`));
  else if (!view.last_trick) lines.push(el("p", { class: "led muted", text: "No card played yet" }));
  if (view.last_trick) {
    const winner = view.last_trick.winner;
    const card = view.last_trick.plays.find((p) => p.seat === winner).card;
    lines.push(
      el(
        "p",
        { class: "last-trick", "data-testid": "trick-winner" },
        `Trick ${view.last_trick.number} won by ${winner === view.seat ? "you" : "seat " + winner}`,
        card ? ` with ${card.chinese} ${card.name}` : ""
      )
    );
  }
  return [
    el("div", { class: "upcard" }, el("span", { class: "label", text: "Upcard" }), view.upcard ? madiaoCardFace(view.upcard, "small") : "—"),
    el("div", { class: `trick${showing === view.last_trick && showing ? " done" : ""}`, "data-testid": "trick" }, plays),
    lines,
  ];
}

// The seat at the bottom of the table: the person's, or in a replay the seat whose view it is.
function madiaoTable(view) {
  const viewer = view.viewer ?? view.seat ?? 0;
  return tableLayout(4, viewer, (seat) => madiaoSeat(view, seat), madiaoTrickArea(view, viewer));
}

// The chosen way to play a card: face up (lead, capture) or face down (slough); null: not chosen
// for this view yet (face up when a face-up play is legal).
let faceDown = null;

function madiaoHand(view) {
  const legal = new Set(view.legal);
  const canUp = view.legal.some((a) => a.startsWith("play "));
  const canDown = view.legal.some((a) => a.startsWith("slough "));
  if (faceDown === null || (faceDown && !canDown) || (!faceDown && !canUp)) faceDown = !canUp && canDown;
  const verb = faceDown ? "slough" : "play";
  const cards = view.hand.map((card) => {
    const action = `${verb} ${card.name}`;
    const ok = !view.animating && legal.has(action);
    return el(
      "button",
      {
        class: `card suit-${card.suit}${ok ? " legal" : ""}`,
        "data-card": card.name,
        "data-action": ok ? action : null,
        disabled: !ok,
        title: ok ? `${faceDown ? "slough face down" : "play face up"}: ${card.chinese} ${card.name}` : `${card.chinese} ${card.name}`,
        "aria-label": `${card.chinese} ${card.name}${ok ? (faceDown ? ", slough face down" : ", play face up") : ""}`,
        onclick: () => sendMove(action),
      },
      el("span", { class: "cn", text: card.chinese }),
      el("span", { class: "short", text: card.name })
    );
  });
  const parts = [el("h2", { text: "Your hand" })];
  if (!view.animating && (canUp || canDown)) {
    const toggle = (down, label, hint, testid) =>
      el(
        "button",
        {
          class: `face-toggle${faceDown === down ? " chosen" : ""}`,
          "aria-pressed": String(faceDown === down),
          "data-testid": testid,
          disabled: down ? !canDown : !canUp,
          title: hint,
          onclick: () => {
            faceDown = down;
            renderGame(currentView);
            document.querySelector(`[data-testid="${testid}"]`).focus();
          },
        },
        label
      );
    parts.push(
      el(
        "div",
        { class: "face-choice", role: "group", "aria-label": "how to play the card you click" },
        toggle(false, "▲ Face up", "lead, or capture with a higher card of the suit led", "face-up"),
        toggle(true, "▼ Face down", "slough: give up a card face down", "face-down"),
        el("span", { class: "hint", text: faceDown ? "Click a card to slough it face down." : "Click a highlighted card to play it face up." })
      )
    );
  }
  parts.push(el("div", { class: "hand", "data-testid": "hand" }, cards.length ? cards : el("p", { class: "muted", text: "(no cards)" })));
  if (!view.animating && view.decision) {
    parts.push(
      el(
        "div",
        { class: "decision" },
        el("p", { text: view.decision }),
        el("div", { class: "moves" }, ["redeal", "pass"].filter((a) => legal.has(a)).map((a) => el("button", { class: "move", "data-action": a, onclick: () => sendMove(a) }, a === "redeal" ? "Redeal" : "Pass")))
      )
    );
  }
  return el("div", { class: "panel your-hand" }, parts);
}

function whoName(view, seat) {
  return seat === view.seat ? "you" : `seat ${seat}`;
}

function resultWords(stakes) {
  const amount = plural(Math.abs(stakes), "stake");
  if (stakes > 0) return `won ${amount}`;
  if (stakes < 0) return `lost ${amount}`;
  return "broke even";
}

function settlementPanel(view, settled, title) {
  const payments = settled.rules.map((rule) =>
    el(
      "li",
      { class: "rule" },
      el("strong", { text: paymentRules[rule.rule].name }),
      el("span", { class: "explain", text: ` — ${paymentRules[rule.rule].explanation}` }),
      el(
        "ul",
        { class: "payments" },
        rule.payments.map((p) => {
          const payer = whoName(view, p.payer);
          const pays = p.payer === view.seat ? "pay" : "pays";
          return el("li", {}, `${payer[0].toUpperCase()}${payer.slice(1)} ${pays} ${plural(p.stakes, "stake")} to ${whoName(view, p.payee)}`);
        })
      )
    )
  );
  const headline =
    view.seat === null
      ? settled.payoffs.map((p, s) => `${s ? "seat" : "Seat"} ${s} ${resultWords(p)}`).join(", ") + "."
      : `You ${resultWords(settled.payoffs[view.seat])}.`;
  return panel(
    title,
    { class: "panel settlement", "data-testid": "settlement" },
    el("p", { class: "result", "data-testid": "result", text: headline }),
    payments.length ? el("ul", { class: "rules" }, payments) : el("p", { class: "muted", text: "No payments this hand." }),
    el("p", { class: "payoffs", "data-testid": "payoffs" }, "Payoffs: ", settled.payoffs.map((p, s) => `${s === view.seat ? "you" : "seat " + s} ${signed(p)}`).join(" · "))
  );
}

function matchTotals(view) {
  const seats = view.seats.map((s) => s.seat);
  const head = el("tr", {}, el("th", { text: "hand" }), el("th", { text: "banker" }), seats.map((s) => el("th", { text: s === view.seat ? "you" : `seat ${s}` })));
  const rows = view.settlements.map((settled) =>
    el("tr", {}, el("td", { text: settled.hand_number + 1 }), el("td", { text: whoName(view, settled.banker) }), settled.payoffs.map((p) => el("td", { class: "num", text: signed(p) })))
  );
  const total = el("tr", { class: "total" }, el("th", { text: "total" }), el("td", {}), view.totals.map((t) => el("td", { class: "num", text: signed(t) })));
  const bankers = new Set(view.settlements.map((s) => s.banker));
  return panel(
    "Match totals",
    { class: "panel match", "data-testid": "match-totals" },
    el("p", { class: "hint", text: `Every seat is banker once; the match ends after the hand in which the last of them has held the bank. Banker so far: ${[...bankers].map((s) => whoName(view, s)).join(", ") || "nobody yet"}.` }),
    el("div", { class: "scroll" }, el("table", {}, head, rows, total))
  );
}

function madiaoStatus(view) {
  const where = `${view.mode === "match" ? `Match, hand ${view.hand_number + 1}` : "Hand"} · trick ${view.trick_number} of 8`;
  if (view.over) {
    const stakes = view.seat === null ? null : view.totals[view.seat];
    const what = view.mode === "match" ? "Match over" : "Hand over";
    return stakes === null ? `${what}.` : `${what}: you ${resultWords(stakes)}${view.mode === "match" ? " in all" : ""}.`;
  }
  if (view.seat !== null && view.to_act === view.seat) {
    if (view.decision) return `${where} · Your turn: redeal or pass?`;
    if (!view.trick.plays.length) return `${where} · Your turn: lead any card face up.`;
    return `${where} · Your turn: capture with a higher ${view.trick.led_suit} card face up, or slough a card face down.`;
  }
  return `${where} · ${view.to_act === null ? "" : seatName(view, view.to_act) + " to play."}`;
}

function madiaoPanels(view) {
  const parts = [];
  const last = view.settlements[view.settlements.length - 1];
  if (last && (view.over || view.mode === "match")) {
    parts.push(settlementPanel(view, last, view.mode === "match" ? `Hand ${last.hand_number + 1} settlement` : "Settlement"));
  }
  if (view.mode === "match" && (view.settlements.length || view.over)) parts.push(matchTotals(view));
  if (view.over) parts.push(endLinks(view, view.mode === "match" ? "Play another match" : "Deal another hand"));
  parts.push(
    el(
      "details",
      { class: "panel rules-help" },
      el("summary", { text: "How stakes are paid" }),
      el("ul", {}, Object.values(paymentRules).map((r) => el("li", {}, el("strong", { text: r.name }), ` — ${r.explanation}`)))
    )
  );
  parts.push(logPanel(view.log));
  return parts;
}

function logPanel(lines) {
  return el("details", { class: "panel log-panel", open: true }, el("summary", { text: "Table talk" }), el("ol", { class: "log", "data-testid": "log" }, lines.map((line) => el("li", { text: line }))));
}

function endLinks(view, again) {
  return el(
    "p",
    { class: "end-links" },
    el("a", { href: `/replay?game=${encodeURIComponent(currentGame)}`, "data-testid": "replay-link" }, "Replay this game"),
    " · ",
    view.game === "mao" && view.seat !== null ? el("a", { href: `/api/games/${currentGame}/record`, download: "mao-game.json", "data-testid": "download-record" }, "Download the record") : null,
    view.game === "mao" && view.seat !== null ? " · " : null,
    el("a", { href: location.pathname + newGameQuery(), "data-testid": "again" }, again)
  );
}

function handsPanel(view, hands, card) {
  return panel(
    "Hands (all open)",
    { class: "panel hands" },
    hands.map((hand, seat) =>
      el("div", { class: "hand-row" }, el("span", { class: "who", text: `seat ${seat} (${view.seats[seat].name})` }), el("div", { class: "hand small", "data-testid": `hand-${seat}` }, hand.map(card)))
    )
  );
}

// ---------------------------------------------------------------- Mao

function maoCardFace(name, extraClass) {
  const suit = name === "JK" ? "J" : name.slice(-1);
  return el("span", { class: `card mao suit-${suit} ${extraClass || ""}`, title: name }, el("span", { class: "short", text: name }));
}

function maoSeat(view, seat) {
  const toAct = !view.over && !view.animating && view.to_act === seat;
  const won = view.rounds_won ? view.rounds_won[seat] : 0;
  return el(
    "div",
    { class: `seat${toAct ? " to-act" : ""}${seat === view.seat ? " mine" : ""}`, "data-seat": seat },
    seatTitle(view, seat),
    el("div", { class: "seat-count", text: plural(view.hand_sizes[seat], "card") + (won ? ` · ${plural(won, "round")} won` : "") }),
    toAct ? el("div", { class: "seat-turn", text: view.in_call_window ? (seat === view.seat ? "your call" : "calling") : seat === view.seat ? "your turn" : "to play" }) : null
  );
}

function maoCenter(view) {
  const legal = new Set(view.legal);
  const drawOk = !view.animating && legal.has("draw");
  // The card of the turn being played or judged: on the pile once the turn is settled.
  const pending = view.animating ? null : view.in_call_window ? view.judged_turn : view.open_turn;
  return [
    el(
      "div",
      { class: "pile" },
      el("div", { class: "stack" }, el("span", { class: "card mao back", "aria-hidden": "true" }), el("span", { class: "label", text: `stack ${view.stack_size}` })),
      el("div", { class: "top-card" }, maoCardFace(view.top, "big"), el("span", { class: "label", text: "pile" })),
      pending && pending.played
        ? el("div", { class: "top-card judged" }, maoCardFace(pending.played), el("span", { class: "label", text: view.in_call_window ? "being judged" : "played this turn" }))
        : null
    ),
    drawOk ? el("button", { class: "move draw", "data-action": "draw", onclick: () => sendMove("draw") }, "Draw a card") : null,
    el("p", { class: "led" }, `Suit to follow: ${view.suit}${view.named_suit ? " (named with a Jack)" : ""}`),
    el("p", { class: "muted" }, `Play goes to ${view.direction === "increasing" ? "higher" : "lower"} seat numbers` + (view.pending_seven ? ` · seven chain: ${plural(view.pending_seven, "card")} to take` : "")),
  ];
}

function maoTable(view) {
  const viewer = view.seat === null ? 0 : view.seat;
  return tableLayout(view.seats.length, viewer, (seat) => maoSeat(view, seat), maoCenter(view));
}

function maoHand(view) {
  const legal = new Set(view.animating ? [] : view.legal);
  const cards = (view.hand || []).map((name) => {
    const action = `play ${name}`;
    const ok = legal.has(action);
    return el(
      "button",
      { class: `card mao suit-${name === "JK" ? "J" : name.slice(-1)}${ok ? " legal" : ""}`, "data-card": name, "data-action": ok ? action : null, disabled: !ok, "aria-label": ok ? `play ${name}` : name, onclick: () => sendMove(action) },
      el("span", { class: "short", text: name })
    );
  });
  const parts = [el("h2", { text: "Your hand" }), el("div", { class: "hand", "data-testid": "hand" }, cards.length ? cards : el("p", { class: "muted", text: "(no cards)" }))];
  const says = [...legal].filter((a) => a.startsWith("say "));
  if (says.length || legal.has("end")) {
    parts.push(
      el("p", { class: "hint", text: "Say what the rules ask of this turn, then end it." }),
      el(
        "div",
        { class: "moves speech" },
        legal.has("end") ? el("button", { class: "move end", "data-action": "end", onclick: () => sendMove("end") }, "End turn") : null,
        says.map((a) => el("button", { class: "move phrase", "data-action": a, onclick: () => sendMove(a) }, `“${view.phrase_texts[a.slice(4)]}”`))
      )
    );
  }
  return el("div", { class: "panel your-hand" }, parts);
}

function turnSummary(view, turn) {
  if (turn.kind === "rule" && turn.refused) return `${turn.who} proposed “${turn.rule}”. Mao Master: “That rule is already in force.”`;
  if (turn.kind === "rule") return `${turn.who} introduce${turn.seat === view.seat ? "" : "s"} a new rule` + (turn.rule ? `: ${turn.rule}.` : ".");
  const did = [];
  if (turn.drew) did.push(`drew ${turn.drew === 1 ? "a card" : plural(turn.drew, "card")}`);
  if (turn.played) did.push(`played ${turn.played}`);
  let text = `${turn.who}: ${did.join(", then ") || "ended the turn"}`;
  if (turn.phrases.length) text += `, saying ${turn.phrases.map((p) => `“${p}”`).join(", ")}`;
  return text + ".";
}

function callLine(view, call) {
  const penalty = `${call.seat === view.seat ? "you take" : call.taker + " takes"} ${plural(call.cards, "penalty card")}`;
  if (call.caller === null) return `Mao Master: “${call.said}” — ${penalty}.`;
  const verdict = call.bad_call ? "bad call" : "correct";
  return `${call.caller_name} called “${call.said}” — ${verdict}: ${penalty}.`;
}

function turnsPanel(view) {
  const items = view.turns.map((turn) =>
    el(
      "li",
      { class: `turn${turn.seat === view.seat ? " mine" : ""}` },
      el("span", { class: "turn-text", text: turnSummary(view, turn) }),
      turn.calls && turn.calls.length ? el("ul", { class: "turn-calls" }, turn.calls.map((c) => el("li", { class: c.bad_call ? "bad-call" : "call", text: callLine(view, c) }))) : null,
      turn.notes && turn.notes.length ? el("ul", { class: "turn-notes" }, turn.notes.map((n) => el("li", { text: n }))) : null
    )
  );
  if (!items.length) items.push(el("li", { class: "muted", text: "(no turns yet)" }));
  return el(
    "details",
    { class: "panel log-panel", open: true },
    el("summary", { text: view.calls_by === "players" ? "Turns and the players' calls" : "Turns and the Mao Master's calls" }),
    el("ol", { class: "turns", "data-testid": "calls" }, items)
  );
}

const MAIN_CALLS = ["call bad-card", "call failure last-card", "call failure mao", "call talking", "call mao-in-vain"];

function callWindow(view) {
  const turn = view.judged_turn;
  const mine = view.to_act === view.seat && !view.animating;
  const judged = turn ? (turn.seat === view.seat ? "your turn" : `${turn.who}'s turn`) : "the last turn";
  const parts = [el("p", {}, `Call window on ${judged}: `, turn ? el("strong", { text: turnSummary(view, turn) }) : "")];
  if (turn && turn.calls.length) parts.push(el("ul", { class: "turn-calls" }, turn.calls.map((c) => el("li", { text: callLine(view, c) }))));
  if (mine) {
    const button = (c) => el("button", { class: "move call", "data-action": c.action, onclick: () => sendMove(c.action) }, c.label);
    const main = MAIN_CALLS.map((a) => view.call_choices.find((c) => c.action === a)).filter(Boolean);
    const more = view.call_choices.filter((c) => !MAIN_CALLS.includes(c.action));
    parts.push(
      el("p", { class: "hint", text: "Call a fault you saw. A correct call gives the mover the penalty; a wrong one (a bad call) gives it to you." }),
      el("div", { class: "moves calls-main" }, main.map(button)),
      more.length ? el("details", { class: "more-calls" }, el("summary", { text: "Failure to say another phrase…" }), el("div", { class: "moves" }, more.map(button))) : null,
      el(
        "div",
        { class: "moves" },
        view.legal.includes("no call") ? el("button", { class: "move end", "data-action": "no call", onclick: () => sendMove("no call") }, "No (more) calls") : null,
        view.legal.includes("point of order") ? el("button", { class: "move", "data-action": "point of order", title: "settle the calls on this turn now: the seats after you lose their chance", onclick: () => sendMove("point of order") }, "Point of order") : null
      ),
      el("p", { class: "hint", text: "Point of order: the calls on this turn are settled at once; the seats after you can no longer call." })
    );
  } else {
    parts.push(el("p", { class: "muted", text: `${view.to_act === null ? "" : seatName(view, view.to_act)} is deciding whether to call.` }));
  }
  return panel("Calls", { class: "panel call-window", "data-testid": "call-window" }, parts);
}

function ruleChoice(view) {
  const offered = new Set(view.rule_choices);
  const groups = ruleTexts.mao.families
    .map((family, index) => Object.assign({ rules: ruleTexts.mao.rules.filter((r) => r.family === index && offered.has(r.action)) }, family))
    .filter((group) => group.rules.length);
  const last = view.turns[view.turns.length - 1];
  const refused = last && last.kind === "rule" && last.refused ? last.rule : null;
  return panel(
    "You won the round: add a secret rule",
    { class: "panel rule-choice", "data-testid": "rule-choice" },
    refused ? el("p", { class: "refused", "data-testid": "rule-refused" }, `Mao Master: “${refused}” is already in force. Choose another.`) : null,
    el("p", { class: "hint", text: "Only you will know it. The others learn it from the calls it brings. A rule already in force (someone's secret) is refused, and you choose again." }),
    groups.map((group, index) =>
      el(
        "details",
        { class: "rule-family", open: index === 0 },
        el("summary", {}, el("strong", { text: group.title }), el("span", { class: "muted", text: ` (${group.rules.length})` })),
        el("p", { class: "hint", text: group.explanation }),
        el("div", { class: "rule-list" }, group.rules.map((r) => el("button", { class: "move rule", "data-action": r.action, onclick: () => sendMove(r.action) }, r.description)))
      )
    )
  );
}

function rulesPanel(title, rules, withAuthor, testid = "rules") {
  const items = rules.map((r) => el("li", {}, `${r.description}` + (withAuthor ? ` (by seat ${r.author})` : "")));
  if (!items.length) items.push(el("li", { class: "muted", text: "(none)" }));
  return panel(title, {}, el("ul", { "data-testid": testid }, items));
}

function maoResults(view) {
  const rows = view.seats.map((s) =>
    el("tr", {}, el("td", { text: s.seat === view.seat ? "you" : `seat ${s.seat} (${s.name})` }), el("td", { class: "num", text: view.rounds_won[s.seat] }), el("td", { class: "num", text: view.penalty_cards[s.seat] }))
  );
  const headline =
    view.seat === null
      ? "Game over."
      : `Game over: you won ${plural(view.rounds_won[view.seat], "round")} of ${view.rounds} and took ${plural(view.penalty_cards[view.seat], "penalty card")}.`;
  return panel(
    "Results",
    { class: "panel results", "data-testid": "results" },
    el("p", { class: "result", text: headline }),
    el("table", {}, el("tr", {}, el("th", { text: "seat" }), el("th", { text: "rounds won" }), el("th", { text: "penalty cards" })), rows)
  );
}

function maoStatusText(view) {
  const where = `Round ${view.round} of ${view.rounds}`;
  if (view.over) {
    return view.seat === null ? "Game over." : `Game over: you won ${plural(view.rounds_won[view.seat], "round")}, took ${plural(view.penalty_cards[view.seat], "penalty card")}.`;
  }
  if (view.seat !== null && view.to_act === view.seat) {
    if (view.rule_choices.length) return `You won round ${view.round - 1} of ${view.rounds}: choose a secret rule.`;
    if (view.in_call_window) return `${where} · Your call: any faults on that turn?`;
    if (view.legal.includes("draw")) return `${where} · Your turn: play a card on the ${view.top} or draw.`;
    return `${where} · Your turn: say what is needed, then end the turn.`;
  }
  return `${where} · ${view.to_act === null ? "" : seatName(view, view.to_act) + (view.in_call_window ? " may call." : " to play.")}`;
}

function maoPanels(view) {
  const parts = [];
  if (view.in_call_window) parts.push(callWindow(view));
  if (view.rule_choices.length && !view.animating) parts.push(ruleChoice(view));
  if (view.over) parts.push(maoResults(view), endLinks(view, "Play again"));
  parts.push(turnsPanel(view));
  if (view.seat === null) parts.push(rulesPanel("Secret rules (spectator: all open)", view.rules, true));
  else {
    parts.push(rulesPanel("Secret rules you authored", view.my_rules, false));
    if (view.refused_rules.length) parts.push(rulesPanel("Rules refused to you (already in force)", view.refused_rules, false, "refused-rules"));
  }
  return parts;
}

// ---------------------------------------------------------------- the rules in words

// Views name rules by id; their words come once from /api/rules (the server's one table).
let ruleTexts = null;
let paymentRules = {};

async function loadRuleTexts() {
  ruleTexts = await api("GET", "/api/rules");
  paymentRules = Object.fromEntries(ruleTexts.madiao.payments.map((r) => [r.rule, r]));
}

// ---------------------------------------------------------------- one game on the page

let currentGame = null;
let currentView = null;
// The hand shown while the other seats' moves are shown: the one the page had, less the card
// just played (frames carry no hand of the person's).
let handBefore = null;

function handAfter(view, action) {
  const card = action.split(" ")[1];
  if (!view.hand || !card || !/^(play|slough) /.test(action)) return view.hand;
  const index = view.hand.findIndex((c) => (c.name || c) === card);
  return index < 0 ? view.hand : view.hand.filter((_, k) => k !== index);
}

function newGameQuery() {
  const params = new URLSearchParams(location.search);
  params.delete("seed"); // a new game is a new deal
  const text = params.toString();
  return text ? "?" + text : "";
}

function renderTable(view) {
  document.getElementById("game-table").replaceChildren(view.game === "madiao" ? madiaoTable(view) : maoTable(view));
}

function renderGame(view) {
  renderTable(view);
  const hand = document.getElementById("game-hand");
  if (view.seat === null) {
    hand.replaceChildren(watchControls(view), handsPanel(view, view.hands, view.game === "madiao" ? (c) => madiaoCardFace(c) : (c) => maoCardFace(c)));
  } else {
    hand.replaceChildren(view.game === "madiao" ? madiaoHand(view) : maoHand(view));
  }
  document.getElementById("game-panels").replaceChildren(...(view.game === "madiao" ? madiaoPanels(view) : maoPanels(view)));
  statusBox.textContent = view.game === "madiao" ? madiaoStatus(view) : maoStatusText(view);
  const log = document.querySelector("#game-panels ol.log, #game-panels ol.turns");
  if (log) log.scrollTop = log.scrollHeight; // the latest in sight
}

// After a move, focus goes to what the person does next: the first card or button they may
// use, else the status line (never <body>, which a re-render would otherwise leave it on).
function placeFocus(view) {
  if (view.seat === null) {
    const control = document.querySelector('[data-testid="watch-step"]:not([disabled])') || document.querySelector('[data-testid="watch-play"]');
    if (control && !watch.playing) return control.focus();
    return statusBox.focus();
  }
  const target =
    document.querySelector("#game-hand button.card.legal") ||
    document.querySelector("#game-panels .call-window button[data-action], #game-panels .rule-choice details[open] button[data-action]") ||
    document.querySelector("#game-hand button[data-action], #game-table button[data-action]");
  (target || statusBox).focus();
}

async function showView(view, animate = true) {
  currentView = view;
  faceDown = null;
  const frames = animate ? view.frames : [];
  const pause = pauseMs();
  if (frames.length > 1 && pause > 0 && view.seat !== null) {
    setState("busy");
    statusBox.focus();
    for (const frame of frames) {
      const shown = Object.assign({}, view, frame, { animating: true, hand: handBefore || view.hand });
      renderTable(shown);
      document.getElementById("game-hand").replaceChildren(view.game === "madiao" ? madiaoHand(shown) : maoHand(shown));
      announce(frame.text);
      await sleep(pause);
    }
  } else if (frames.length) {
    announce(frames.slice(-6).map((f) => f.text).join(" "));
  }
  renderGame(view);
  if (view.over) announce(statusBox.textContent);
  else if (view.seat !== null && view.to_act === view.seat) announce(`${frames.length && pause === 0 ? announceBox.textContent + " " : ""}${statusBox.textContent}`);
  placeFocus(view);
  setState("ready");
}

function disableMoves() {
  for (const button of document.querySelectorAll("#game button[data-action], #game button.card, #game .face-toggle")) button.disabled = true;
}

async function sendMove(action) {
  setState("busy");
  disableMoves();
  try {
    handBefore = handAfter(currentView, action);
    const data = await api("POST", `/api/games/${currentGame}/move`, { action, version: currentView.version });
    showError("");
    await showView(data.view);
  } catch (error) {
    await recover(error);
  }
}

// A refused move changes nothing on the server: show why, and the table as it now is (a 409
// means the view was stale or the game is over: look again).
async function recover(error) {
  showError(error.message);
  try {
    const data = await api("GET", `/api/games/${currentGame}`);
    await showView(data.view, false);
  } catch (_) {
    if (currentView) renderGame(currentView);
    setState("ready");
  }
}

// ---------------------------------------------------------------- watching agents play

const watch = { playing: false };

function watchControls(view) {
  return el(
    "div",
    { class: "panel watch-controls", "data-testid": "watch-controls" },
    el("h2", { text: "Watching agents play" }),
    el(
      "div",
      { class: "moves" },
      el("button", { class: "move", "data-testid": "watch-step", disabled: view.over || watch.playing, onclick: () => stepOnce() }, "Step one move"),
      el("button", { class: "move", "data-testid": "watch-play", "aria-pressed": String(watch.playing), disabled: view.over, onclick: () => togglePlay() }, watch.playing ? "Pause" : "Play"),
      el("span", { class: "hint", text: "Speed: the “others' moves” setting above." })
    )
  );
}

async function stepOnce() {
  setState("busy");
  disableMoves();
  try {
    const data = await api("POST", `/api/games/${currentGame}/step`, { version: currentView.version });
    showError("");
    await showView(data.view);
  } catch (error) {
    watch.playing = false;
    await recover(error);
  }
}

async function togglePlay() {
  watch.playing = !watch.playing;
  renderGame(currentView);
  document.querySelector('[data-testid="watch-play"]').focus();
  while (watch.playing && !currentView.over) {
    await stepOnce();
    await sleep(pauseMs());
  }
  watch.playing = false;
  renderGame(currentView);
  placeFocus(currentView);
  setState("ready");
}

// ---------------------------------------------------------------- starting a game

async function startGame(game, watching) {
  const params = new URLSearchParams(location.search);
  const body = { game };
  for (const [key, value] of params) if (!PAGE_ONLY_PARAMETERS.includes(key)) body[key] = value;
  if (watching) body.watch = true;
  document.getElementById("game").hidden = false;
  setUpSpeed();
  try {
    await loadRuleTexts();
    const data = await api("POST", "/api/games", body);
    currentGame = data.id;
    document.body.dataset.game = data.id;
    await showView(data.view);
  } catch (error) {
    document.getElementById("game").hidden = true;
    showError(error.message);
    setState("ready");
  }
}

// ---------------------------------------------------------------- replay

const replay = { id: null, step: 0, n: 0, game: null, seats: [] };

function seatsTable(seats, extraHeader, extraCell) {
  return el(
    "table",
    { class: "seats", "data-testid": "seats" },
    el("tr", {}, el("th", { text: "seat" }), el("th", { text: "player" }), extraHeader.map((h) => el("th", { text: h }))),
    seats.map((s) => el("tr", {}, el("td", { text: s.seat }), el("td", { text: s.name }), extraCell(s).map((c) => el("td", { text: c }))))
  );
}

function maoStatus(frame) {
  return el(
    "div",
    { class: "panel status" },
    el("p", {}, frame.seat === null ? "All hands open." : `Seat ${frame.seat}'s view.`, ` Round ${frame.round} of ${frame.rounds}. ` + (frame.over ? "Game over." : `To act: seat ${frame.to_act}.`)),
    el("p", {}, "Pile top: ", maoCardFace(frame.top), ` Suit to follow: ${frame.suit}${frame.named_suit ? " (named)" : ""}. Direction: ${frame.direction}.` + (frame.pending_seven ? ` Seven chain pending: ${frame.pending_seven} card(s).` : "") + ` Stack: ${frame.stack_size} cards.`)
  );
}

function replayCalls(calls) {
  const items = calls.map((c) => el("li", {}, `Step ${c.step}: seat ${c.seat} takes ${plural(c.cards, "penalty card")} (“${c.call}”)`));
  if (!items.length) items.push(el("li", { class: "muted", text: "(no calls yet)" }));
  return panel("Calls", {}, el("ol", { class: "calls", "data-testid": "calls" }, items));
}

function renderReplayFrame(frame) {
  const parts = [el("p", { class: "event", "data-testid": "replay-event", text: frame.event })];
  if (frame.game === "madiao") {
    const seat = frame.view === "all" ? null : frame.view;
    const shown = Object.assign({}, frame, { seat: null, viewer: seat, to_act: null, over: false, last_trick: frame.last_trick && Object.assign({ number: frame.seats.reduce((n, s) => n + s.tricks_won, 0) }, frame.last_trick) });
    parts.push(madiaoTable(shown));
    parts.push(
      panel(
        frame.view === "all" ? "Hands" : `Hand of seat ${frame.view}`,
        {},
        frame.hands.map((hand, s) =>
          hand === null
            ? null
            : el("div", { class: "hand-row" }, el("span", { class: "who", text: `seat ${s} (${frame.seats[s].name})` }), el("div", { class: "hand small", "data-testid": frame.view === s ? "hand" : `hand-${s}` }, hand.map((c) => madiaoCardFace(c))))
        )
      )
    );
    if (frame.settlement) parts.push(settlementPanel(shown, frame.settlement, "Settlement"));
    parts.push(el("p", {}, "Totals so far: " + frame.totals.map((t, s) => `seat ${s} ${signed(t)}`).join(", ")));
  } else {
    parts.push(maoStatus(frame), panel("Table", {}, seatsTable(frame.seats, ["cards"], (s) => [frame.hand_sizes[s.seat]])));
    if (frame.hands) {
      parts.push(
        panel(
          "Hands",
          {},
          frame.hands.map((hand, s) => el("div", { class: "hand-row" }, el("span", { class: "who", text: `seat ${s} (${frame.seats[s].name})` }), el("div", { class: "hand small", "data-testid": `hand-${s}` }, hand.map((c) => maoCardFace(c)))))
        ),
        rulesPanel("Secret rules", frame.rules, true)
      );
    } else {
      parts.push(panel(`Hand of seat ${frame.seat}`, {}, el("div", { class: "hand", "data-testid": "hand" }, frame.hand.map((c) => maoCardFace(c)))), rulesPanel("Secret rules this seat authored", frame.my_rules, false));
    }
    parts.push(replayCalls(frame.calls));
  }
  document.getElementById("replay-frame").replaceChildren(...parts);
  document.querySelector('[data-testid="replay-step"]').textContent = `step ${frame.step} of ${frame.n_steps}`;
  document.querySelector('[data-testid="replay-prev"]').disabled = frame.step <= 0;
  document.querySelector('[data-testid="replay-next"]').disabled = frame.step >= frame.n_steps;
  document.querySelector('[data-testid="replay-first"]').disabled = frame.step <= 0;
  document.querySelector('[data-testid="replay-last"]').disabled = frame.step >= frame.n_steps;
  setState("ready");
}

async function loadFrame(step) {
  setState("busy");
  const view = document.querySelector('[data-testid="replay-view"]').value;
  try {
    const data = await api("GET", `/api/replays/${replay.id}?step=${step}&view=${encodeURIComponent(view)}`);
    replay.step = step;
    showError("");
    renderReplayFrame(data.frame);
  } catch (error) {
    showError(error.message);
    setState("ready");
  }
}

function openedReplay(data) {
  Object.assign(replay, { id: data.id, step: 0, n: data.n_steps, game: data.game, seats: data.seats });
  const select = document.querySelector('[data-testid="replay-view"]');
  select.replaceChildren(el("option", { value: "all", text: "all hands open" }), ...data.seats.map((name, seat) => el("option", { value: String(seat), text: `seat ${seat} (${name})` })));
  document.getElementById("replay-controls").hidden = false;
  showError("");
  renderReplayFrame(data.frame);
}

async function openRecord(file) {
  setState("busy");
  try {
    openedReplay(await api("POST", "/api/replays", await file.text()));
  } catch (error) {
    showError(error.message);
    setState("ready");
  }
}

async function replayGame(id) {
  setState("busy");
  try {
    openedReplay(await api("POST", `/api/games/${encodeURIComponent(id)}/replay`));
  } catch (error) {
    showError(error.message);
    setState("ready");
  }
}

function setUpReplay() {
  document.getElementById("replay").hidden = false;
  document.querySelector('[data-testid="replay-file"]').addEventListener("change", (event) => {
    if (event.target.files.length) openRecord(event.target.files[0]);
  });
  document.querySelector('[data-testid="replay-next"]').addEventListener("click", () => loadFrame(Math.min(replay.step + 1, replay.n)));
  document.querySelector('[data-testid="replay-prev"]').addEventListener("click", () => loadFrame(Math.max(replay.step - 1, 0)));
  document.querySelector('[data-testid="replay-first"]').addEventListener("click", () => loadFrame(0));
  document.querySelector('[data-testid="replay-last"]').addEventListener("click", () => loadFrame(replay.n));
  document.querySelector('[data-testid="replay-view"]').addEventListener("change", () => loadFrame(replay.step));
  const game = new URLSearchParams(location.search).get("game");
  loadRuleTexts()
    .then(() => (game ? replayGame(game) : setState("ready")))
    .catch((error) => {
      showError(error.message);
      setState("ready");
    });
}

// ---------------------------------------------------------------- routing

const ROUTES = {
  "/play/madiao": () => startGame("madiao", false),
  "/play/mao": () => startGame("mao", false),
  "/watch/madiao": () => startGame("madiao", true),
  "/watch/mao": () => startGame("mao", true),
  "/replay": setUpReplay,
};

if (ROUTES[location.pathname]) ROUTES[location.pathname]();
else {
  document.getElementById("home").hidden = false;
  setState("ready");
}
