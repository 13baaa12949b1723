// Mao's part of the page (registered with registerGamePage, see /static/app.js): the pile, the
// hand and the phrases, call windows, the secret rules, replay frames.
"use strict";

(() => {
  // The rule families and library rules in words: from /api/rules (views name rules by id).
  let ruleTexts = { families: [], rules: [] };

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
    const groups = ruleTexts.families
      .map((family, index) => Object.assign({ rules: ruleTexts.rules.filter((r) => r.family === index && offered.has(r.action)) }, family))
      .filter((group) => group.rules.length);
    const last = view.turns[view.turns.length - 1];
    const refused = last && last.kind === "rule" && last.refused ? last.rule : null;
    return panel(
      "You won the round: add a secret rule",
      { class: "panel rule-choice", "data-testid": "rule-choice" },
      refused ? el("p", { class: "refused", "data-testid": "rule-refused" }, `Mao Master: “${refused}” is already in force. Choose another.`) : null,
      el("p", { class: "hint", text: "Only you will know it. The others learn it from the calls it brings. A rule already in force (someone's secret) is refused, and you choose again." }),
      groups.map((group) =>
        el(
          "details",
          { class: "rule-family", open: true }, // every family in sight: folding is the reader's choice
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


  // The replay's table as a game's: seats around the pile (no moves offered, no "You").
  function replayTable(frame) {
    const view = Object.assign({}, frame, { seat: null, legal: [], animating: false, in_call_window: false, open_turn: null, judged_turn: null });
    return tableLayout(frame.seats.length, frame.seat === null ? 0 : frame.seat, (seat) => maoSeat(view, seat), maoCenter(view));
  }

  function replayFrame(frame) {
    const parts = [maoStatus(frame), replayTable(frame)];
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
    return parts;
  }

  registerGamePage("mao", {
    table: maoTable,
    hand: maoHand,
    panels: maoPanels,
    status: maoStatusText,
    cardFace: (card) => maoCardFace(card),
    replayFrame,
    rules: (texts) => {
      ruleTexts = texts;
    },
    // In a call window the safe default is to call nothing: Enter pressed twice never makes
    // two calls (each wrong one costs a card).
    focusSelector: '#game-panels .call-window button[data-action="no call"], #game-panels .rule-choice details[open] button[data-action]',
    recordFile: "mao-game.json",
  });
})();
