// Review queue: keyboard shortcuts and showing conflicts that the server answers with 4xx.
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

  const rows = () => Array.from(document.querySelectorAll("tr.item"));
  const current = () => document.activeElement?.closest?.("tr.item") || null;

  function focusRow(offset) {
    const all = rows();
    if (!all.length) return;
    const index = all.indexOf(current());
    const next = all[Math.max(0, Math.min(all.length - 1, index + offset))] || all[0];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }

  function press(key) {
    const row = current();
    if (!row) return;
    const target = row.querySelector(`[data-key="${key}"]`);
    if (!target) return;
    if (key === "r") {
      const reason = row.querySelector("input.reason");
      if (reason && !reason.value) { reason.focus(); return; }
    }
    target.click();
    if (key !== "e") focusRowAfterDecision(row);
  }

  function focusRowAfterDecision(row) {
    // Move on to the next undecided row once the decision has been swapped in.
    const all = rows();
    const next = all[all.indexOf(row) + 1];
    if (next) setTimeout(() => next.focus(), 0);
  }

  // A decision sent from a row's form (Enter in the reason field) swaps that row out with
  // the focus inside it, which would leave the focus nowhere: once the decided row is in,
  // move on to the next undecided row, as the keyboard shortcuts do.
  let refocusAfter = null;
  document.addEventListener("submit", (event) => {
    const row = event.target.closest("tr.item");
    refocusAfter = row && row.contains(document.activeElement) ? row.id : null;
  });
  document.body.addEventListener("htmx:afterSettle", () => {
    if (!refocusAfter) return;
    const decided = document.getElementById(refocusAfter);
    if (!decided || decided.matches("tr.item")) return;  // not swapped yet, or refused
    refocusAfter = null;
    let next = decided.nextElementSibling;
    while (next && !next.matches("tr.item")) next = next.nextElementSibling;
    if (next && (document.activeElement === document.body || !document.activeElement)) next.focus();
  });

  document.addEventListener("keydown", (event) => {
    const typing = event.target.matches("input, textarea, select");
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
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
