/* The grid: one item across many files; click or drag to select, bulk approve/reject, undo. */
"use strict";
(function () {
  var root = document.getElementById("grid");
  if (!root) { return; }
  var W = window.wikivel;
  var item = root.dataset.item;
  var mayDecide = root.dataset.mayDecide === "1";
  var tiles = Array.prototype.slice.call(document.querySelectorAll("#tiles .tile"));
  var message = document.getElementById("message");
  var count = document.getElementById("selected-count");
  var lastBulk = [];
  var dragging = false, dragValue = true;

  function setSelected(tile, on) {
    if (tile.dataset.state !== "proposed") { on = false; }
    tile.classList.toggle("selected", on);
    tile.querySelector(".pick").setAttribute("aria-pressed", on ? "true" : "false");
  }
  function selected() { return tiles.filter(function (t) { return t.classList.contains("selected"); }); }
  function update() { W.say(count, selected().length + " selected"); }
  tiles.forEach(function (tile) {
    var pick = tile.querySelector(".pick");
    pick.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0) { return; }
      dragging = true; dragValue = !tile.classList.contains("selected");
      setSelected(tile, dragValue); update(); ev.preventDefault();
    });
    pick.addEventListener("mouseenter", function () { if (dragging) { setSelected(tile, dragValue); update(); } });
    pick.addEventListener("keydown", function (ev) {
      if (ev.key === " " || ev.key === "Enter") { ev.preventDefault(); setSelected(tile, !tile.classList.contains("selected")); update(); }
    });
  });
  document.addEventListener("mouseup", function () { dragging = false; });

  function mark(tile, state, text) {
    tile.dataset.state = state;
    tile.className = tile.className.replace(/\bstate-\S+/g, "") + " state-" + state;
    W.say(tile.querySelector(".status"), text);
  }
  function bulk(action) {
    if (!mayDecide) { W.say(message, "You may look but not decide (log in with an allowed account)."); return; }
    var chosen = selected();
    if (!chosen.length) { W.say(message, "Select files first (click or drag)."); return; }
    var done = [], conflicts = 0, errors = [];
    var chain = Promise.resolve();
    chosen.forEach(function (tile) {
      chain = chain.then(function () {
        return W.decide(tile.dataset.file, item, action).then(function (res) {
          setSelected(tile, false);
          if (res.status === 200) { mark(tile, res.body.state, W.WORDS[action]); done.push(tile); }
          else if (res.status === 409) { conflicts += 1; mark(tile, res.body.state || "gone", "already " + (res.body.state || "gone") + " elsewhere"); }
          else { errors.push(res.body.error || ("error " + res.status)); }
        });
      });
    });
    chain.then(function () {
      lastBulk = done;
      update();
      W.say(message, W.WORDS[action] + ": " + done.length + (conflicts ? ", decided elsewhere: " + conflicts : "") + (errors.length ? ", failed: " + errors[0] : ""));
    });
  }
  function undo() {
    if (!lastBulk.length) { W.say(message, "Nothing to undo."); return; }
    var batch = lastBulk; lastBulk = [];
    var undone = 0, chain = Promise.resolve();
    batch.forEach(function (tile) {
      chain = chain.then(function () {
        return W.decide(tile.dataset.file, item, "undo").then(function (res) {
          if (res.status === 200) { undone += 1; mark(tile, res.body.state, ""); }
        });
      });
    });
    chain.then(function () { W.say(message, "Undone: " + undone); });
  }
  document.getElementById("select-all").addEventListener("click", function () { tiles.forEach(function (t) { setSelected(t, true); }); update(); });
  document.getElementById("select-none").addEventListener("click", function () { tiles.forEach(function (t) { setSelected(t, false); }); update(); });
  document.getElementById("bulk-approve").addEventListener("click", function () { bulk("approve"); });
  document.getElementById("bulk-reject").addEventListener("click", function () { bulk("reject"); });
  document.getElementById("bulk-undo").addEventListener("click", undo);
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (ev.key === "a") { tiles.forEach(function (t) { setSelected(t, true); }); update(); }
    else if (ev.key === "Escape") { tiles.forEach(function (t) { setSelected(t, false); }); update(); }
    else if (ev.key === "u") { undo(); }
  });
})();
