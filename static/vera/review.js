// Review queue: keyboard shortcuts and showing conflicts that the server answers with 4xx.
// An "item" is a row, or in the by-document view a document's card: j/k move between
// cards, a/r decide the whole card, Enter steps into its claim rows (where the same keys
// work on one claim) and Esc steps back out to the card.
(() => {
  "use strict";
  // htmx leaves 4xx answers unswapped by default; here they carry a row to show.
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status === 400 || status === 403 || status === 409) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  const cardOf = (item) => (item && item.matches("tr.item") ? item.closest("article.card") : null);
  // The items j/k walk: the rows of the card the focus is in, else the top-level items.
  const items = (from) => {
    const card = cardOf(from);
    if (card) return Array.from(card.querySelectorAll("tr.item"));
    return Array.from(document.querySelectorAll(".item")).filter((item) => !cardOf(item));
  };
  const current = () => document.activeElement?.closest?.(".item") || null;

  function focusRow(offset) {
    const all = items(current());
    if (!all.length) return;
    const index = all.indexOf(current());
    const next = all[Math.max(0, Math.min(all.length - 1, index + offset))] || all[0];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }

  function press(key) {
    const row = current();
    if (!row) return;
    const card = row.matches("article.card");
    const target = row.querySelector(card ? `[data-card-key="${key}"]` : `[data-key="${key}"]`);
    if (!target) return;
    if (key === "r") {
      const reason = row.querySelector(card ? "input.card-reason" : "input.reason");
      if (reason && !reason.value) { reason.focus(); return; }
    }
    target.click();
    if (key !== "e") focusRowAfterDecision(row);
  }

  function focusRowAfterDecision(row) {
    // Move on to the next undecided row once the decision has been swapped in.
    const all = items(row);
    const next = all[all.indexOf(row) + 1] || cardOf(row);
    if (next) setTimeout(() => next.focus(), 0);
  }

  // A decision sent from a row's form (Enter in the reason field) swaps that row out with
  // the focus inside it, which would leave the focus nowhere: once the decided row is in,
  // move on to the next undecided row, as the keyboard shortcuts do.
  let refocusAfter = null;
  document.addEventListener("submit", (event) => {
    const row = event.target.closest(".item");
    refocusAfter = row && row.contains(document.activeElement) ? row.id : null;
  });
  document.body.addEventListener("htmx:afterSettle", () => {
    if (!refocusAfter) return;
    const decided = document.getElementById(refocusAfter);
    if (!decided || decided.matches(".item")) return;  // not swapped yet, or refused
    refocusAfter = null;
    let next = decided.nextElementSibling;
    while (next && !next.matches(".item")) next = next.nextElementSibling;
    next = next || decided.closest("article.card");  // a card's last row: back to the card
    if (next && (document.activeElement === document.body || !document.activeElement)) next.focus();
  });

  document.addEventListener("keydown", (event) => {
    const typing = event.target.matches("input, textarea, select");
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Enter" && event.target.matches("article.card")) {
      const first = event.target.querySelector("tr.item");
      if (first) { event.preventDefault(); first.focus(); }
      return;
    }
    if (event.key === "Escape" && cardOf(current())) {
      event.preventDefault();
      cardOf(current()).focus();
      return;
    }
    const actions = {
      j: () => focusRow(1), k: () => focusRow(-1),
      a: () => press("a"), r: () => press("r"), e: () => press("e"),
      x: () => { const box = current()?.querySelector("input[type=checkbox]"); if (box) box.checked = !box.checked; },
    };
    const action = actions[event.key];
    if (action) { event.preventDefault(); action(); }
  });

  document.addEventListener("change", (event) => {
    if (event.target.id !== "select-all") return;
    document.querySelectorAll('input[name="item"]').forEach((box) => { box.checked = event.target.checked; });
  });
})();
