/* Shared by the review page and the grid: post one decision through the JSON API. */
"use strict";
window.wikivel = (function () {
  var token = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  /* seen: the pair as the page shows it ({state, reviewer, prominent}); the server changes
     the pair only if it is still so (default: waiting for review). */
  function decide(file, item, action, seen) {
    var body = {file: file, item: item, action: action};
    if (seen) { body.seen = seen; }
    return fetch("/api/decisions", {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": token},
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (body) { return {status: r.status, body: body}; });
    });
  }
  var WORDS = {approve: "approved", prominent: "approved as prominent", reject: "rejected",
               skip: "skipped", approve_prominent: "approved as prominent"};
  function say(el, text) { if (el) { el.textContent = text; } }
  return {decide: decide, WORDS: WORDS, say: say};
})();
