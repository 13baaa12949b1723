// madiao-mao web page: plain JS, no build step. The server holds the game; this page shows the
// view it gets (only the player's own seat) and sends the text of the move clicked, with the
// version of the view it was chosen from (the server refuses a stale or repeated move: 409).
"use strict";

const main = document.getElementById("main");
const errorBox = document.querySelector('[data-testid="error"]');
let version = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setState(state) {
  document.body.dataset.state = state;
  if (state === "ready") document.body.dataset.version = String(++version);
}

function showError(message) {
  errorBox.textContent = message || "";
  errorBox.hidden = !message;
}

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = typeof body === "string" ? body : JSON.stringify(body);
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
    const error = new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
    error.status = response.status;
    throw error;
  }
  return data;
}

function section(title, ...content) {
  return el("div", { class: "panel" }, el("h2", { text: title }), ...content);
}

// ---------------------------------------------------------------- Madiao

function madiaoCard(card) {
  if (!card) return el("span", { class: "card back", title: "face down", "aria-label": "face-down card" });
  return el(
    "span",
    { class: `card suit-${card.suit}`, title: `${card.chinese} ${card.name}`, "data-card": card.name },
    el("span", { class: "cn", text: card.chinese }),
    el("span", { class: "short", text: card.name })
  );
}

function madiaoTrick(plays) {
  if (!plays.length) return el("p", { class: "muted", text: "(no cards)" });
  return el(
    "div",
    { class: "trick" },
    plays.map((p) =>
      el("div", { class: "play" }, madiaoCard(p.card), el("div", { class: "who", text: `seat ${p.seat}` + (p.face_up ? "" : " (face down)") }))
    )
  );
}

function seatsTable(seats, extraHeader, extraCell) {
  return el(
    "table",
    { class: "seats", "data-testid": "seats" },
    el("tr", {}, el("th", { text: "seat" }), el("th", { text: "player" }), extraHeader.map((h) => el("th", { text: h }))),
    seats.map((s) => el("tr", {}, el("td", { text: s.seat }), el("td", { text: s.name }), extraCell(s).map((c) => el("td", { text: c }))))
  );
}

function settlementTable(settlement, names) {
  const rows = settlement.lines.map((line) =>
    el("tr", {}, el("td", { text: line.rule }), el("td", { text: `seat ${line.payer}` }), el("td", { text: `seat ${line.payee}` }), el("td", { class: "num", text: line.stakes }))
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 4, text: "(no payments)" })));
  return el(
    "div",
    { class: "panel" },
    el("h2", { text: "Settlement" }),
    el(
      "table",
      { "data-testid": "settlement", class: "settlement" },
      el("tr", {}, el("th", { text: "rule" }), el("th", { text: "payer" }), el("th", { text: "payee" }), el("th", { text: "stakes" })),
      rows
    ),
    el(
      "p",
      { "data-testid": "payoffs" },
      "Payoffs: ",
      settlement.payoffs.map((p, s) => `seat ${s} ${names ? "(" + names[s] + ") " : ""}${p > 0 ? "+" : ""}${p}`).join(", ")
    )
  );
}

function moveLabel(action, view) {
  const parts = action.split(" ");
  if (view.game === "madiao" && (parts[0] === "play" || parts[0] === "slough")) {
    const card = view.hand.find((c) => c.name === parts[1]);
    return `${parts[0] === "play" ? "play face up" : "slough face down"} ${card ? card.chinese : ""} ${parts[1]}`;
  }
  if (view.game === "mao") {
    if (parts[0] === "say") return `say “${view.phrases[parts[1]]}”`;
    if (parts[0] === "rule") return `${action}: ${view.rule_choices[action]}`;
    if (action === "end") return "end turn";
  }
  return action;
}

function movesPanel(view, onMove) {
  const buttons = view.legal.map((action) =>
    el("button", { class: "move", "data-action": action, onclick: () => onMove(action) }, moveLabel(action, view))
  );
  let note = null;
  if (!view.legal.length) note = el("p", { class: "muted", text: view.over ? "The game is over." : "Waiting for the other players." });
  return section("Your moves", el("div", { class: "moves", "data-testid": "moves" }, buttons), note);
}

function logPanel(lines) {
  const list = el("ol", { class: "log", "data-testid": "log" }, lines.map((line) => el("li", { text: line })));
  return section("Table talk", list);
}

function renderMadiao(view, onMove) {
  const names = view.seats.map((s) => s.name);
  const toAct = view.to_act === null ? "nobody (hand over)" : view.to_act === view.seat ? "you" : `seat ${view.to_act}`;
  const parts = [
    el(
      "div",
      { class: "panel status", "data-testid": "status" },
      el("p", {}, `You are seat ${view.seat}, the ${view.role}. Banker: seat ${view.banker}. First dealt: seat ${view.first}.`),
      el("p", {}, "Upcard: ", madiaoCard(view.upcard), ` Trick ${view.trick_number} of 8. Phase: ${view.phase}. To act: ${toAct}.`)
    ),
    section(
      "Table",
      seatsTable(view.seats, ["role", "tricks won", "cards"], (s) => [s.role, s.tricks_won, view.hand_sizes[s.seat]]),
      el("h3", { text: "Trick in progress" }),
      el("div", { "data-testid": "trick" }, madiaoTrick(view.trick)),
      el("h3", { text: "Last trick" }),
      madiaoTrick(view.last_trick)
    ),
    section("Your hand", el("div", { class: "hand", "data-testid": "hand" }, view.hand.map(madiaoCard))),
    movesPanel(view, onMove),
  ];
  if (view.settlement) parts.push(settlementTable(view.settlement, names));
  if (view.over) parts.push(el("p", {}, el("a", { href: location.pathname + newGameQuery(), "data-testid": "again" }, "Deal another hand")));
  parts.push(logPanel(view.log));
  return parts;
}

// ---------------------------------------------------------------- Mao

function maoCard(name) {
  const suit = name === "JK" ? "J" : name.slice(-1);
  return el("span", { class: `card mao suit-${suit}`, "data-card": name }, el("span", { class: "short", text: name }));
}

function callsList(calls) {
  const items = calls.map((c) =>
    el("li", {}, `Mao Master to seat ${c.seat}: “${c.call}” (${c.cards} penalty card${c.cards === 1 ? "" : "s"})`)
  );
  if (!items.length) items.push(el("li", { class: "muted", text: "(no calls yet)" }));
  return section("Calls of the Mao Master", el("ol", { class: "calls", "data-testid": "calls" }, items));
}

function rulesPanel(title, rules, withAuthor) {
  const items = rules.map((r) => el("li", {}, `rule ${r.rule}: ${r.description}` + (withAuthor ? ` (by seat ${r.author})` : "")));
  if (!items.length) items.push(el("li", { class: "muted", text: "(none)" }));
  return section(title, el("ul", { "data-testid": "rules" }, items));
}

function maoStatus(view) {
  return el(
    "div",
    { class: "panel status", "data-testid": "status" },
    el("p", {}, view.seat === null ? "All hands open." : `You are seat ${view.seat}.`, ` Round ${view.round} of ${view.rounds}. ` + (view.over ? "Game over." : `To act: seat ${view.to_act}.`)),
    el(
      "p",
      {},
      "Pile top: ",
      maoCard(view.top),
      ` Suit to follow: ${view.suit}${view.named_suit ? " (named)" : ""}. Direction: ${view.direction}.` +
        (view.pending_seven ? ` Seven chain pending: ${view.pending_seven} card(s).` : "") +
        ` Stack: ${view.stack_size} cards.`
    )
  );
}

function renderMao(view, onMove) {
  const parts = [
    maoStatus(view),
    section("Table", seatsTable(view.seats, ["cards"], (s) => [view.hand_sizes[s.seat] + (s.seat === view.to_act ? "  ◀ to act" : "")])),
    section("Your hand", el("div", { class: "hand", "data-testid": "hand" }, view.hand.map(maoCard))),
    movesPanel(view, onMove),
    callsList(view.calls),
    rulesPanel("Secret rules you authored", view.my_rules, false),
  ];
  if (view.over) {
    parts.push(
      el(
        "p",
        {},
        `Game over. Returns: ${view.returns.map((r, s) => `seat ${s} ${r > 0 ? "+" : ""}${r}`).join(", ")}. `,
        el("a", { href: `/api/games/${currentGame}/record`, download: "mao-game.json", "data-testid": "download-record" }, "Download the record"),
        " · ",
        el("a", { href: location.pathname + newGameQuery() }, "Play again")
      )
    );
  }
  parts.push(logPanel(view.log));
  return parts;
}

// ---------------------------------------------------------------- playing

let currentGame = null;
let currentView = null;

function newGameQuery() {
  const params = new URLSearchParams(location.search);
  params.delete("seed"); // a new hand is a new deal
  const text = params.toString();
  return text ? "?" + text : "";
}

function showView(view) {
  currentView = view;
  const container = document.getElementById("game");
  container.replaceChildren(...(view.game === "madiao" ? renderMadiao(view, sendMove) : renderMao(view, sendMove)));
  container.hidden = false;
  const log = container.querySelector("ol.log");
  if (log) log.scrollTop = log.scrollHeight; // the latest table talk in sight
  setState("ready");
}

async function sendMove(action) {
  setState("busy");
  for (const button of document.querySelectorAll("button.move")) button.disabled = true;
  try {
    const data = await api("POST", `/api/games/${currentGame}/move`, { action, version: currentView.version });
    showError("");
    showView(data.view);
  } catch (error) {
    showError(error.message);
    if (error.status === 409) {
      // The game moved on (a move sent twice, another tab): show the table as it is now.
      try {
        showView((await api("GET", `/api/games/${currentGame}`)).view);
        return;
      } catch (_) {
        // keep the error shown
      }
    }
    for (const button of document.querySelectorAll("button.move")) button.disabled = false;
    setState("ready");
  }
}

async function startGame(game) {
  const params = new URLSearchParams(location.search);
  const body = { game };
  for (const [key, value] of params) body[key] = value;
  try {
    const data = await api("POST", "/api/games", body);
    currentGame = data.id;
    showView(data.view);
  } catch (error) {
    showError(error.message);
    setState("ready");
  }
}

// ---------------------------------------------------------------- replay

const replay = { id: null, step: 0, n: 0, game: null, seats: [] };

function renderReplayFrame(frame) {
  const parts = [el("p", { class: "event", "data-testid": "replay-event", text: frame.event })];
  if (frame.game === "madiao") {
    parts.push(
      el(
        "div",
        { class: "panel status" },
        el("p", {}, "Upcard: ", frame.upcard ? madiaoCard(frame.upcard) : "(not dealt)", ` Banker: seat ${frame.banker}. First dealt: seat ${frame.first}.`)
      ),
      section("Table", seatsTable(frame.seats, ["role", "tricks won", "cards"], (s) => [s.role, s.tricks_won, frame.hand_sizes[s.seat]])),
      section(
        frame.view === "all" ? "Hands" : `Hand of seat ${frame.view}`,
        frame.hands.map((hand, seat) =>
          hand === null
            ? null
            : el("div", { class: "hand-row" }, el("span", { class: "who", text: `seat ${seat} (${frame.seats[seat].name})` }), el("div", { class: "hand", "data-testid": frame.view === seat ? "hand" : `hand-${seat}` }, hand.map(madiaoCard)))
        )
      ),
      section("Trick in progress", el("div", { "data-testid": "trick" }, madiaoTrick(frame.trick)), el("h3", { text: "Last trick" }), madiaoTrick(frame.last_trick))
    );
    if (frame.settlement) parts.push(settlementTable(frame.settlement, frame.seats.map((s) => s.name)));
    parts.push(el("p", {}, "Totals so far: " + frame.totals.map((t, s) => `seat ${s} ${t > 0 ? "+" : ""}${t}`).join(", ")));
  } else {
    parts.push(maoStatus(frame), section("Table", seatsTable(frame.seats, ["cards"], (s) => [frame.hand_sizes[s.seat]])));
    if (frame.hands) {
      parts.push(
        section(
          "Hands",
          frame.hands.map((hand, seat) => el("div", { class: "hand-row" }, el("span", { class: "who", text: `seat ${seat} (${frame.seats[seat].name})` }), el("div", { class: "hand", "data-testid": `hand-${seat}` }, hand.map(maoCard))))
        ),
        rulesPanel("Secret rules", frame.rules, true)
      );
    } else {
      parts.push(section(`Hand of seat ${frame.seat}`, el("div", { class: "hand", "data-testid": "hand" }, frame.hand.map(maoCard))), rulesPanel("Secret rules this seat authored", frame.my_rules, false));
    }
    parts.push(callsList(frame.calls));
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

async function openRecord(file) {
  setState("busy");
  try {
    const data = await api("POST", "/api/replays", await file.text());
    Object.assign(replay, { id: data.id, step: 0, n: data.n_steps, game: data.game, seats: data.seats });
    const select = document.querySelector('[data-testid="replay-view"]');
    select.replaceChildren(el("option", { value: "all", text: "all hands open" }), ...data.seats.map((name, seat) => el("option", { value: String(seat), text: `seat ${seat} (${name})` })));
    document.getElementById("replay-controls").hidden = false;
    showError("");
    renderReplayFrame(data.frame);
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
  setState("ready");
}

// ---------------------------------------------------------------- routing

if (location.pathname === "/play/madiao") startGame("madiao");
else if (location.pathname === "/play/mao") startGame("mao");
else if (location.pathname === "/replay") setUpReplay();
else {
  document.getElementById("home").hidden = false;
  setState("ready");
}
