/* The review page: one file, keys 1/2/3/s/u, arrows, ?; decisions through /api/decisions. */
"use strict";
(function () {
  var root = document.getElementById("review");
  if (!root) { return; }
  var W = window.wikivel;
  var file = root.dataset.file;
  var mayDecide = root.dataset.mayDecide === "1";
  var me = root.dataset.me || "";
  var operator = root.dataset.operator === "1";
  var rows = Array.prototype.slice.call(document.querySelectorAll("#candidates .cand"));
  var message = document.getElementById("message");
  var help = document.getElementById("help");
  var undoKey = "wikivel-undo";
  var cursor = 0;
  var busy = false;

  function stack() { try { return JSON.parse(sessionStorage.getItem(undoKey) || "[]"); } catch (e) { return []; } }
  function saveStack(s) { sessionStorage.setItem(undoKey, JSON.stringify(s.slice(-200))); }
  function isOpen(row) { return row.dataset.state === "proposed" && !row.dataset.mine; }
  /* keepFocus: the keyboard focus is already inside the row (a button, a link): leave it. */
  function select(i, keepFocus) {
    if (!rows.length) { return; }
    cursor = (i + rows.length) % rows.length;
    rows.forEach(function (r, j) { r.classList.toggle("selected", j === cursor); r.setAttribute("aria-current", j === cursor ? "true" : "false"); });
    if (!keepFocus) { rows[cursor].focus({preventScroll: false}); }
  }
  /* What the page shows of a pair: sent with a decision, so it applies only if still so. */
  function seenOf(row) {
    return {state: row.dataset.state, reviewer: row.dataset.reviewer || null, prominent: row.dataset.prominent === "1"};
  }
  /* The same words as core/review_rules.py state_text: past approval the edit is the bot
     account's, and the reviewer is who approved it. */
  var BY_THE_BOT = {
    written: "written by the bot account",
    reverted: "reverted: removed again by the bot account",
    write_skipped: "write_skipped: the bot's re-check did not write it",
    write_failed: "write_failed: the bot's edit failed"
  };
  function described(state, reviewer, prominent) {
    if (Object.prototype.hasOwnProperty.call(BY_THE_BOT, state)) {
      return BY_THE_BOT[state] + (prominent && state === "written" ? " (prominent)" : "") + (reviewer ? ", approved by " + reviewer : "");
    }
    return state + (prominent && state === "approved" ? " (prominent)" : "") + (reviewer ? " by " + reviewer : "");
  }
  function firstOpen(from) {
    for (var k = 0; k < rows.length; k++) {
      var j = (from + k) % rows.length;
      if (isOpen(rows[j])) { return j; }
    }
    return -1;
  }
  function mark(row, state, text, reviewer, prominent) {
    row.dataset.state = state;
    row.dataset.reviewer = state === "proposed" ? "" : (reviewer || "");
    row.dataset.prominent = prominent ? "1" : "0";
    row.className = row.className.replace(/\bstate-\S+/g, "") + " state-" + state;
    W.say(row.querySelector(".status"), text);
  }
  function afterDecision() {
    var next = firstOpen(cursor + 1);
    if (next === -1) {
      W.say(message, "All suggestions of this file are decided: next file…");
      window.location.assign(root.dataset.next);
    } else { select(next); }
  }
  function act(action) {
    if (busy) { return; }
    if (!mayDecide) { W.say(message, "You may look but not decide (log in with an allowed account)."); return; }
    var row = rows[cursor];
    if (!row) { return; }
    var theirs = !isOpen(row) && (row.dataset.state === "approved" || row.dataset.state === "rejected") &&
        row.dataset.reviewer && row.dataset.reviewer !== me;
    if (!isOpen(row) && !(theirs && operator)) {
      W.say(message, row.dataset.item + " is already " + described(row.dataset.state, row.dataset.reviewer, row.dataset.prominent === "1") +
        (theirs ? ": only an operator may override another reviewer's decision" : " (u undoes your last decision)"));
      return;
    }
    busy = true;
    W.decide(file, row.dataset.item, action, seenOf(row)).then(function (res) {
      busy = false;
      if (res.status === 200) {
        row.dataset.mine = "1";
        mark(row, res.body.state, W.WORDS[action] + " by you" + (res.body.overrode ? " (override of " + res.body.overrode + "'s decision)" : ""),
             res.body.reviewer, res.body.prominent);
        var s = stack(); s.push({file: file, item: row.dataset.item, url: window.location.pathname + window.location.search}); saveStack(s);
        /* A pair being written: the server says what follows (removed again, rank changed). */
        W.say(message, res.body.message || (W.WORDS[action] + ": " + row.querySelector(".item a").textContent));
        showTally();
        afterDecision();
      } else if (res.status === 409) {
        mark(row, res.body.state || "gone", "already " + described(res.body.state || "gone", res.body.reviewer, res.body.prominent) + " elsewhere",
             res.body.reviewer, res.body.prominent);
        W.say(message, res.body.error || ("Decided elsewhere meanwhile: " + row.dataset.item));
        afterDecision();
      } else if (res.status === 401) {
        window.location.assign(root.dataset.login);
      } else {
        W.say(message, res.body.error || ("error " + res.status));
      }
    }, function () { busy = false; W.say(message, "The server did not answer; try again."); });
  }
  function undo() {
    if (busy) { return; }
    var s = stack();
    var last = s.pop();
    if (!last) { W.say(message, "Nothing to undo."); return; }
    busy = true;
    W.decide(last.file, last.item, "undo").then(function (res) {
      busy = false;
      saveStack(s);
      if (res.status !== 200) { W.say(message, res.body.error || ("cannot undo: " + res.status)); return; }
      if (last.file !== file) { window.location.assign("/review?file=" + encodeURIComponent(last.file)); return; }
      rows.forEach(function (r, j) {
        if (r.dataset.item === last.item) {
          delete r.dataset.mine;
          /* Back to waiting (no reviewer), or to the decision an operator's override replaced. */
          mark(r, res.body.state, res.body.state === "proposed" ? "" : described(res.body.state, res.body.reviewer, res.body.prominent),
               res.body.reviewer, res.body.prominent);
          select(j);
        }
      });
      W.say(message, res.body.message || ("Undone: " + last.item + (res.body.state === "proposed" ? " is open again." :
        " is " + described(res.body.state, res.body.reviewer, res.body.prominent) + " again.")));
    }, function () { busy = false; W.say(message, "The server did not answer; try again."); });
  }
  function toggleHelp() { help.hidden = !help.hidden; }

  rows.forEach(function (row, j) {
    row.addEventListener("click", function () { select(j); });
    /* Tab onto a row's button or link: that row is the one the keys act on. */
    row.addEventListener("focusin", function () { if (j !== cursor) { select(j, true); } });
    Array.prototype.forEach.call(row.querySelectorAll("button[data-action]"), function (b) {
      b.addEventListener("click", function (ev) { ev.stopPropagation(); select(j); act(b.dataset.action); });
    });
  });
  document.getElementById("undo").addEventListener("click", undo);
  document.getElementById("help-button").addEventListener("click", toggleHelp);
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA") { return; }
    var keys = {"1": "approve", "2": "prominent", "3": "reject", "s": "skip"};
    var focused = ev.target && ev.target.closest ? ev.target.closest("#candidates .cand") : null;
    if (focused && rows.indexOf(focused) !== -1 && rows.indexOf(focused) !== cursor) { select(rows.indexOf(focused), true); }
    if (keys[ev.key]) { ev.preventDefault(); act(keys[ev.key]); }
    else if (ev.key === "u") { ev.preventDefault(); undo(); }
    else if (ev.key === "?") { ev.preventDefault(); toggleHelp(); }
    else if (ev.key === "Escape") { help.hidden = true; }
    else if (ev.key === "ArrowDown" || ev.key === "j") { ev.preventDefault(); select(cursor + 1); }
    else if (ev.key === "ArrowUp" || ev.key === "k") { ev.preventDefault(); select(cursor - 1); }
    else if (ev.key === "ArrowRight" && root.dataset.forward) { window.location.assign(root.dataset.forward); }
    else if (ev.key === "ArrowLeft" && root.dataset.prev) { window.location.assign(root.dataset.prev); }
  });

  /* "Already decided elsewhere", live: look at the file again every 15 s. */
  function refresh() {
    fetch("/api/files/" + encodeURIComponent(file), {credentials: "same-origin"}).then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body) { return; }
        body.candidates.forEach(function (c) {
          rows.forEach(function (row) {
            if (row.dataset.item !== c.item) { return; }
            if (!row.dataset.mine && row.dataset.state === "proposed" && c.state !== "proposed") {
              mark(row, c.state, "already " + described(c.state, c.reviewer, c.prominent) + " elsewhere", c.reviewer, c.prominent);
            } else if (row.dataset.state !== c.state && c.state !== "proposed") {
              /* The writer moved it on (written, failed) or an operator overrode it. */
              mark(row, c.state, described(c.state, c.reviewer, c.prominent), c.reviewer, c.prominent);
            }
          });
        });
        showDepicts(body.depicts || []);
      }, function () {});
  }
  window.setInterval(refresh, parseInt(root.dataset.refreshMs, 10) || 15000);

  /* "Depicts now", redrawn from the file's latest reading (with the bot's own writes). */
  var depicts = document.getElementById("depicts");
  function showDepicts(list) {
    if (!depicts) { return; }
    var shown = list.map(function (d) { return d.item + (d.prominent ? "*" : ""); }).join(" ");
    if (depicts.dataset.shown === shown) { return; }
    depicts.dataset.shown = shown;
    depicts.textContent = list.length ? "" : "nothing yet";
    list.forEach(function (d) {
      var chip = document.createElement("span");
      chip.className = "chip";
      var label = document.createElement("span");
      label.lang = d.label_lang || "";
      label.textContent = d.label;
      chip.appendChild(label);
      chip.appendChild(document.createTextNode(" (" + d.item + ")" + (d.prominent ? " ★ prominent" : "") + (d.by_bot ? " · written by the bot" : "")));
      depicts.appendChild(chip);
    });
  }

  /* The personal and the global tally of today (UTC). */
  var tally = document.getElementById("tally");
  function showTally() {
    fetch("/api/stats", {credentials: "same-origin"}).then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body) { return; }
        function words(t) {
          return (t.approve + t.approve_prominent) + " approved, " + t.reject + " rejected, " + t.skip + " skipped";
        }
        var text = "Today – everyone: " + words(body.decisions_today);
        if (body.you) { text = "Today – you: " + words(body.you.decisions_today) + " · everyone: " + words(body.decisions_today); }
        W.say(tally, text + " · waiting: " + body.queue.candidates.proposed);
      }, function () {});
  }
  showTally();
  var start = firstOpen(0);
  select(start === -1 ? 0 : start);
})();
