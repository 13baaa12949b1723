// Madiao's part of the page (registered with registerGamePage, see /static/app.js): the table,
// the hand with its face-up / face-down choice, settlements and match totals, replay frames.
"use strict";

(() => {
  // Payment rules by name, in words: from /api/rules (settlements name them by rule).
  let paymentRules = {};

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

  // What is behind a payment (the card or trick) names every seat "seat N": the viewer's own is "you".
  function behindWords(view, text) {
    return view.seat === null || view.seat === undefined ? text : text.replace(new RegExp(`\\bseat ${view.seat}\\b`, "g"), "you");
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
          [
            ...rule.payments.map((p) => {
              const payer = whoName(view, p.payer);
              const pays = p.payer === view.seat ? "pay" : "pays";
              return el(
                "li",
                { class: "payment" },
                `${payer[0].toUpperCase()}${payer.slice(1)} ${pays} ${plural(p.stakes, "stake")} to ${whoName(view, p.payee)}`,
                p.behind ? el("span", { class: "behind", "data-testid": "behind", text: ` — ${behindWords(view, p.behind)}` }) : null
              );
            }),
            rule.cancelled ? el("li", { class: "muted", text: "Payments both ways between the same seats cancel out (netted)." }) : null,
          ]
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


  function replayFrame(frame) {
    const parts = [];
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
    return parts;
  }

  registerGamePage("madiao", {
    table: madiaoTable,
    hand: madiaoHand,
    panels: madiaoPanels,
    status: madiaoStatus,
    cardFace: (card) => madiaoCardFace(card),
    replayFrame,
    rules: (texts) => {
      paymentRules = Object.fromEntries(texts.payments.map((r) => [r.rule, r]));
    },
    newView: () => {
      faceDown = null;
    },
  });
})();
