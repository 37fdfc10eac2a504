/* The end of the user script's login popup: hand the token to the file page that opened this
   window, addressed to the wiki's origin alone (the server checked it is one of the wiki's
   own), then close. A page of any other origin that opened the popup receives nothing. */
(function () {
  'use strict';
  var el = document.getElementById('gadget-login');
  if (!el || !window.opener) { return; }
  window.opener.postMessage({ type: 'wikivel-token', token: el.dataset.token, name: el.dataset.name },
    el.dataset.origin);
  el.removeAttribute('data-token');
  window.close();
}());
