/**
 * wikivel-bot user script: machine suggestions of what a Commons file depicts, on its page.
 *
 * Source: wikivel_bot/web/static/gadget.js in the wikivel-bot repository; the tool serves it
 * at <tool>/gadget.js. Load it from your common.js (docs/reviewer.md):
 *     mw.loader.load('https://wikivel.toolforge.org/gadget.js');
 *
 * On File: pages only. It shows the bot's suggestions for the file (item, label, description,
 * image, score, and why: "image only" or the file's own categories and links), marked as
 * machine suggestions, and lets a logged-in reviewer approve (a), approve as prominent (p) or
 * reject (r) a suggestion (one the bot had not queued yet is queued first, as the bot would
 * have); j/k or the arrows move between them. Decisions
 * go to the bot's review queue as from the tool's review page, and the bot account makes the
 * edit, naming you.
 *
 * What the tool sees and keeps: every file page you open sends the file's M-id and your
 * interface language to the tool (with your token once you logged in). The tool's process
 * writes no access log; it keeps your IP address (logged in: your user name) in memory for 60
 * seconds to count requests, and the suggestions by file, not by reader, until it restarts.
 * Toolforge's front proxy keeps its own request logs with IP addresses and URLs (so which files
 * were looked at) under the Wikimedia Cloud Services terms of use. Your decisions are kept in
 * the tool's queue with your user name (the audit trail of the bot's edits). The login is a
 * token kept in this browser's localStorage for the wiki's pages, sent only to the tool;
 * "log out" below ends it on the tool.
 *
 * It fetches only JSON from the tool (no HTML, no script) and shows every text it receives as
 * text, never as markup.
 */
(function () {
  'use strict';
  if (typeof mw === 'undefined' || !window.fetch) { return; }
  var current = document.currentScript;
  var TOOL = window.wikivelToolUrl || (current && current.src ? new URL(current.src).origin : '');
  if (!TOOL) { return; }
  if (mw.config.get('wgNamespaceNumber') !== 6) { return; }
  var action = mw.config.get('wgAction');
  if (action && action !== 'view') { return; }
  var pageId = mw.config.get('wgArticleId');
  if (!pageId) { return; }
  var MID = 'M' + pageId;
  var LANG = mw.config.get('wgUserLanguage') || 'en';
  var STORE = 'wikivel-token:' + TOOL;
  var token = '';
  try { token = window.localStorage.getItem(STORE) || ''; } catch (e) { token = ''; }
  var me = null;       // {name, may_decide, why_not} once a token is known to work
  var rows = [];
  var cursor = 0;
  var decidable = false;
  var pending = false;  // suggestions the bot has not queued yet: queued on the first decision

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function style() {
    var css = '#wikivel-suggestions{border:2px dashed #72777d;border-radius:4px;padding:.5em 1em;margin:.5em 0 1em;background:#f8f9fa}' +
      '#wikivel-suggestions h2{font-size:1.1em;margin:0 0 .3em;border:0}' +
      '.wikivel-machine{display:inline-block;background:#fef6e7;border:1px solid #fc3;padding:0 .4em;font-size:.85em;margin-left:.4em}' +
      '.wikivel-list{list-style:none;margin:0;padding:0}' +
      '.wikivel-cand{display:flex;gap:.6em;align-items:flex-start;padding:.4em;border-top:1px solid #c8ccd1}' +
      '.wikivel-cand.selected{outline:2px solid #36c;background:#eaf3ff}' +
      '.wikivel-cand img{width:60px;height:60px;object-fit:cover;flex:none}' +
      '.wikivel-text{flex:1}.wikivel-why{color:#54595d;font-size:.9em}' +
      '.wikivel-cand[data-state=approved] .wikivel-state{color:#14866d}.wikivel-cand[data-state=rejected] .wikivel-state{color:#d33}' +
      '.wikivel-error{color:#d33}';
    var s = el('style', {}, css);
    document.head.appendChild(s);
  }

  var box = el('div', {id: 'wikivel-suggestions', role: 'region', 'aria-label': 'Machine suggestions (wikivel-bot)', lang: 'en'});
  var head = el('h2', {}, 'Suggested depicts');
  head.appendChild(el('span', {'class': 'wikivel-machine'}, 'machine suggestions – not reviewed'));
  box.appendChild(head);
  var note = el('p', {'class': 'wikivel-note'},
    'A computer model (wikivel-bot) suggests these from the image and this page\'s own categories and links. ' +
    'Check each before approving: the bot adds an approved one to this file as "depicts".');
  box.appendChild(note);
  var account = el('p', {'class': 'wikivel-account'});
  box.appendChild(account);
  var list = el('ol', {'class': 'wikivel-list'});
  box.appendChild(list);
  var status = el('p', {'class': 'wikivel-status', role: 'status', 'aria-live': 'polite'});
  box.appendChild(status);

  function say(text, isError) {
    status.textContent = text || '';
    status.className = 'wikivel-status' + (isError ? ' wikivel-error' : '');
  }

  function call(path, options) {
    options = options || {};
    var headers = {};
    if (options.auth && token) { headers.Authorization = 'Bearer ' + token; }
    if (options.body) { headers['Content-Type'] = 'application/json'; }
    // credentials 'omit': the tool's cookie is never needed (nor sent) from the wiki's pages.
    return fetch(TOOL + path, {method: options.method || 'GET', headers: headers, credentials: 'omit',
      body: options.body ? JSON.stringify(options.body) : undefined}).then(function (r) {
      return r.json().catch(function () { return {error: 'the tool answered ' + r.status}; }).then(function (body) {
        return {status: r.status, body: body || {}};
      });
    });
  }

  function forget() {
    token = '';
    me = null;
    try { window.localStorage.removeItem(STORE); } catch (e) { /* private mode */ }
  }

  function showAccount() {
    account.textContent = '';
    if (me) {
      account.appendChild(document.createTextNode('Logged in to wikivel-bot as '));
      account.appendChild(el('strong', {'class': 'wikivel-me'}, me.name));
      if (!me.may_decide) { account.appendChild(el('span', {'class': 'wikivel-error wikivel-why-not'}, ' – ' + me.why_not)); }
      account.appendChild(document.createTextNode(' · '));
      var out = el('button', {type: 'button', 'class': 'wikivel-logout'}, 'log out');
      out.addEventListener('click', function () {
        call('/api/me/logout', {method: 'POST', auth: true, body: {}}).then(function () { forget(); showAccount(); render(); });
      });
      account.appendChild(out);
    } else {
      var login = el('button', {type: 'button', 'class': 'wikivel-login'}, 'Log in to wikivel-bot to decide');
      login.addEventListener('click', openLogin);
      account.appendChild(login);
    }
  }

  function openLogin() {
    window.open(TOOL + '/gadget/login?origin=' + encodeURIComponent(window.location.origin), 'wikivel-login',
      'width=640,height=720');
  }

  // The token comes from the tool's login popup, and only from the tool's origin.
  window.addEventListener('message', function (event) {
    if (event.origin !== TOOL || !event.data || event.data.type !== 'wikivel-token' || !event.data.token) { return; }
    token = String(event.data.token);
    try { window.localStorage.setItem(STORE, token); } catch (e) { /* kept for this page only */ }
    whoAmI().then(render);
  });

  function whoAmI() {
    if (!token) { me = null; showAccount(); return Promise.resolve(); }
    return call('/api/me', {auth: true}).then(function (answer) {
      if (answer.status === 200) { me = answer.body; } else if (answer.status === 401) { forget(); }
      showAccount();
    });
  }

  var STATES = {
    approved: 'approved', rejected: 'rejected', written: 'written by the bot account',
    reverted: 'reverted', write_skipped: 'not written (the bot\'s re-check)', write_failed: 'the bot\'s edit failed'
  };

  function stateText(row) {
    var d = row.dataset;
    if (d.state === 'proposed') { return ''; }
    var text = STATES[d.state] || d.state;
    if (d.state === 'approved' && d.prominent === '1') { text = 'approved as prominent'; }
    return text + (d.reviewer ? ' by ' + d.reviewer : '');
  }

  function render() {
    rows.forEach(function (row) {
      var open = row.dataset.state === 'proposed';
      row.querySelector('.wikivel-state').textContent = stateText(row);
      row.querySelectorAll('button').forEach(function (b) {
        b.hidden = !decidable;
        b.disabled = !(me && me.may_decide) || (!open && b.dataset.action !== 'undo');
      });
    });
  }

  function select(i) {
    if (!rows.length) { return; }
    cursor = (i + rows.length) % rows.length;
    rows.forEach(function (r, j) { r.classList.toggle('selected', j === cursor); });
    rows[cursor].focus();
  }

  function decide(row, what) {
    if (!decidable) { return; }
    if (!me) { say('Log in to wikivel-bot first.', true); return; }
    if (pending) {
      // The file is not in the bot's queue yet: queue these suggestions first (as the bot
      // would have), then decide.
      say('Sending…');
      call('/api/suggest/queue', {method: 'POST', auth: true, body: {file: MID}}).then(function (answer) {
        if (answer.status !== 200) { say(answer.body.error || ('the tool answered ' + answer.status), true); return; }
        pending = false;
        var byItem = {};
        (answer.body.file.candidates || []).forEach(function (c) { byItem[c.item] = c; });
        rows.forEach(function (r) {
          var c = byItem[r.dataset.item];
          if (c) { r.dataset.state = c.state; r.dataset.prominent = c.prominent ? '1' : '0'; r.dataset.reviewer = c.reviewer || ''; }
        });
        decide(row, what);
      }, function () { say('The tool could not be reached.', true); });
      return;
    }
    var d = row.dataset;
    var body = {file: MID, item: d.item, action: what,
      seen: {state: d.state, reviewer: d.reviewer || null, prominent: d.prominent === '1'}};
    say('Sending…');
    call('/api/decisions', {method: 'POST', auth: true, body: body}).then(function (answer) {
      var b = answer.body;
      if (answer.status === 200 || answer.status === 409) {
        if (b.state) { d.state = b.state; d.prominent = b.prominent ? '1' : '0'; d.reviewer = b.reviewer || ''; }
        say(answer.status === 200 ? (b.message || d.item + ': ' + stateText(row)) : b.error, answer.status !== 200);
      } else {
        if (answer.status === 401) { forget(); showAccount(); }
        say(b.error || ('the tool answered ' + answer.status), true);
      }
      render();
    }, function () { say('The tool could not be reached.', true); });
  }

  function row(c, item) {
    var li = el('li', {'class': 'wikivel-cand', tabindex: '0', 'data-item': c.qid, 'data-state': c.state || 'proposed',
      'data-prominent': c.prominent ? '1' : '0', 'data-reviewer': c.reviewer || ''});
    if (item.thumb) { li.appendChild(el('img', {src: item.thumb, alt: '', loading: 'lazy'})); }
    var text = el('div', {'class': 'wikivel-text'});
    var link = el('a', {href: 'https://www.wikidata.org/wiki/' + encodeURIComponent(c.qid), 'class': 'wikivel-label'},
      item.label || c.label || c.qid);
    if (item.lang) { link.setAttribute('lang', item.lang); }
    text.appendChild(link);
    text.appendChild(document.createTextNode(' (' + c.qid + ')'));
    var desc = item.description || c.description;
    if (desc) { text.appendChild(el('span', {'class': 'wikivel-desc', lang: item.description_lang || ''}, ' – ' + desc)); }
    text.appendChild(el('div', {'class': 'wikivel-why'},
      'why: ' + (c.why || 'image only') + (typeof c.score === 'number' ? ' · score ' + c.score.toFixed(2) : '')));
    text.appendChild(el('div', {'class': 'wikivel-state'}));
    li.appendChild(text);
    [['approve', 'Approve (a)'], ['prominent', 'Prominent (p)'], ['reject', 'Reject (r)']].forEach(function (b) {
      var button = el('button', {type: 'button', 'data-action': b[0]}, b[1]);
      button.addEventListener('click', function () { decide(li, b[0]); });
      li.appendChild(button);
    });
    li.addEventListener('click', function () { cursor = rows.indexOf(li); rows.forEach(function (r) { r.classList.toggle('selected', r === li); }); });
    return li;
  }

  var KEYS = {a: 'approve', p: 'prominent', r: 'reject'};
  box.addEventListener('keydown', function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName)) { return; }
    if (event.key === 'j' || event.key === 'ArrowDown') { select(cursor + 1); event.preventDefault(); return; }
    if (event.key === 'k' || event.key === 'ArrowUp') { select(cursor - 1); event.preventDefault(); return; }
    var what = KEYS[event.key];
    if (what && rows[cursor]) { decide(rows[cursor], what); event.preventDefault(); }
  });

  function show(answer) {
    var b = answer.body;
    if (answer.status !== 200) { say(b.error || ('the tool answered ' + answer.status), true); return; }
    var candidates = [];
    if (b.source === 'queue') {
      decidable = true;
      candidates = (b.file.candidates || []).map(function (c) {
        return {qid: c.item, label: c.label, description: c.description, score: c.score, why: c.why,
          state: c.state, prominent: c.prominent, reviewer: c.reviewer,
          item: {label: c.label, description: c.description, lang: c.label_lang, description_lang: c.description_lang,
            thumb: c.image}};
      });
    } else {
      decidable = true;
      pending = true;
      var items = b.items || {};
      candidates = ((b.files && b.files[0] && b.files[0].candidates) || []).map(function (c) {
        return {qid: c.qid, label: c.label, description: c.description, score: c.score, why: c.why,
          item: items[c.qid] || {}};
      });
      note.textContent += ' The bot has not queued this file yet: your first decision queues these suggestions.';
    }
    if (!candidates.length) { say('No suggestion for this file.'); }
    rows = candidates.map(function (c) { return row(c, c.item); });
    rows.forEach(function (r) { list.appendChild(r); });
    if (rows.length) { rows[0].classList.add('selected'); }
    render();
  }

  function start() {
    style();
    var anchor = document.getElementById('mw-content-text') || document.getElementById('bodyContent');
    if (anchor) { anchor.insertBefore(box, anchor.firstChild); } else {
      var heading = document.getElementById('firstHeading');
      if (heading && heading.parentNode) { heading.parentNode.insertBefore(box, heading.nextSibling); } else { document.body.appendChild(box); }
    }
    showAccount();
    say('Asking wikivel-bot…');
    var path = '/api/suggest?file=' + encodeURIComponent(MID) + '&uselang=' + encodeURIComponent(LANG);
    // With the token, the tool counts this reviewer's requests, not everyone's behind one proxy.
    whoAmI().then(function () { return call(path, {auth: true}); }).then(function (answer) {
      say('');
      show(answer);
    }, function () { say('wikivel-bot could not be reached.', true); });
  }

  if (document.readyState === 'loading') { document.addEventListener('DOMContentLoaded', start); } else { start(); }
}());
