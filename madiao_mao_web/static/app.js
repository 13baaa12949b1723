// madiao-mao web page: plain JS, no build step. The server holds the game; this page shows the
// view it gets (only the person's own seat) and sends the text of the move clicked, with the
// version of the view it was made on (a stale one is refused with 409: the page looks again).
// Every request body is JSON sent as application/json; the page has no inline script or style
// (the server's Content-Security-Policy allows only these files).
"use strict";

const errorBox = document.querySelector('[data-testid="error"]');
const announceBox = document.getElementById("announce");
const statusBox = document.getElementById("game-status");
// Read here, never sent to the API; "game" is the id of the game the page shows (a reload or
// Back shows that game again).
const PAGE_ONLY_PARAMETERS = ["pause", "game"];
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
// counter-clockwise order), placed on the right side, across the top, on the left.
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

// ---------------------------------------------------------------- the games' pages

// Each game's script (listed in the page by the server, after this one) registers how its views
// look: registerGamePage(name, page), where page has
//   table(view), hand(view): the table and the person's hand (DOM nodes; also called while the
//     other seats' moves are shown, with view.animating set and the frame's table),
//   panels(view): the panels below (an array of nodes), status(view): the status line (text),
//   cardFace(card): a card of the open hands of a watched game,
//   replayFrame(frame): the parts of a replay frame below its event line (an array of nodes),
// and optionally rules(texts): the game's entry of /api/rules, given before any view is shown;
// newView(view): a new view came (forget choices made on the last one); focusSelector: its
// controls in the panels that take the focus after a move, before the table's; recordFile: the
// file name of the record a person downloads once the game is over.
const gamePages = {};

function registerGamePage(name, page) {
  gamePages[name] = page;
}

function pageOf(view) {
  return gamePages[view.game];
}

function endLinks(view, again) {
  const recordFile = view.seat !== null && pageOf(view).recordFile;
  return el(
    "p",
    { class: "end-links" },
    el("a", { href: `/replay?game=${encodeURIComponent(currentGame)}`, "data-testid": "replay-link" }, "Replay this game"),
    " · ",
    recordFile ? el("a", { href: `/api/games/${currentGame}/record`, download: recordFile, "data-testid": "download-record" }, "Download the record") : null,
    recordFile ? " · " : null,
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

// ---------------------------------------------------------------- the rules in words

// Views name rules by id; their words come once from /api/rules (the server's one table), and
// each game's page takes its own.
async function loadRuleTexts() {
  const texts = await api("GET", "/api/rules");
  for (const [name, page] of Object.entries(gamePages)) if (page.rules) page.rules(texts[name]);
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
  params.delete("game");
  const text = params.toString();
  return text ? "?" + text : "";
}

function renderTable(view) {
  document.getElementById("game-table").replaceChildren(pageOf(view).table(view));
}

function renderGame(view) {
  renderTable(view);
  const page = pageOf(view);
  const hand = document.getElementById("game-hand");
  if (view.seat === null) {
    hand.replaceChildren(watchControls(view), handsPanel(view, view.hands, page.cardFace));
  } else {
    hand.replaceChildren(page.hand(view));
  }
  document.getElementById("game-panels").replaceChildren(...page.panels(view));
  statusBox.textContent = page.status(view);
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
  const panelControls = pageOf(view).focusSelector;
  const target =
    document.querySelector("#game-hand button.card.legal") ||
    (panelControls && document.querySelector(panelControls)) ||
    document.querySelector("#game-hand button[data-action], #game-table button[data-action]");
  (target || statusBox).focus();
}

async function showView(view, animate = true) {
  currentView = view;
  const page = pageOf(view);
  if (page.newView) page.newView(view);
  const frames = animate ? view.frames : [];
  const pause = pauseMs();
  if (frames.length > 1 && pause > 0 && view.seat !== null) {
    setState("busy");
    statusBox.focus();
    for (const frame of frames) {
      const shown = Object.assign({}, view, frame, { animating: true, hand: handBefore || view.hand });
      renderTable(shown);
      document.getElementById("game-hand").replaceChildren(page.hand(shown));
      // The status says what is being shown, not the turn still to come.
      statusBox.textContent = frame.text;
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
  statusBox.textContent = `${action}: sent; the other seats play…`; // no longer the person's turn
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
    const shown = params.get("game");
    // A reload or Back shows the game of the URL as it now is; a new game puts its id there.
    const data = shown ? await api("GET", `/api/games/${encodeURIComponent(shown)}`) : await api("POST", "/api/games", body);
    currentGame = data.id;
    document.body.dataset.game = data.id;
    if (!shown) {
      params.set("game", data.id);
      history.replaceState(null, "", `${location.pathname}?${params}`);
    }
    await showView(data.view, !shown);
  } catch (error) {
    document.getElementById("game").hidden = true;
    showError(error.message);
    setState("ready");
  }
}

// ---------------------------------------------------------------- replay

const replay = { id: null, step: 0, n: 0, game: null, seats: [], playing: false };

// Play: the replay steps forward by itself (at the pace of the "others' moves" setting) until
// its end or Pause.
async function toggleReplayPlay() {
  const button = document.querySelector('[data-testid="replay-play"]');
  replay.playing = !replay.playing;
  button.textContent = replay.playing ? "pause" : "play";
  button.setAttribute("aria-pressed", String(replay.playing));
  while (replay.playing && replay.step < replay.n) {
    await loadFrame(replay.step + 1);
    await sleep(pauseMs());
  }
  replay.playing = false;
  button.textContent = "play";
  button.setAttribute("aria-pressed", "false");
}

function renderReplayFrame(frame) {
  const parts = [el("p", { class: "event", "data-testid": "replay-event", text: frame.event }), ...gamePages[frame.game].replayFrame(frame)];
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
  document.querySelector('[data-testid="replay-play"]').addEventListener("click", () => toggleReplayPlay());
  const game = new URLSearchParams(location.search).get("game");
  loadRuleTexts()
    .then(() => (game ? replayGame(game) : setState("ready")))
    .catch((error) => {
      showError(error.message);
      setState("ready");
    });
}


// ---------------------------------------------------------------- routing

// /play/<game> and /watch/<game> for the games whose scripts the server listed, after they ran.
function route() {
  const [, mode, game, ...rest] = location.pathname.split("/");
  if ((mode === "play" || mode === "watch") && Object.hasOwn(gamePages, game) && !rest.length) startGame(game, mode === "watch");
  else if (location.pathname === "/replay") setUpReplay();
  else {
    document.getElementById("home").hidden = false;
    setState("ready");
  }
}

document.addEventListener("DOMContentLoaded", route);
