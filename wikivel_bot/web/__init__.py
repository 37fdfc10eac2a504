"""The patrollers' review page and its JSON API (Flask), above ``review/`` in the layering.

Modules, one concept each:

* :mod:`~wikivel_bot.web.app` — :func:`create_app`: the Flask app on one queue and Settings.
* :mod:`~wikivel_bot.web.security` — CSRF check, security headers, the decision rate limit:
  all in one place, as ``before_request``/``after_request`` hooks.
* :mod:`~wikivel_bot.web.reviewer` — who is logged in and what they may do (pure rules).
* :mod:`~wikivel_bot.web.oauth` — login with the reviewer's wiki account (MediaWiki OAuth 2.0,
  with PKCE).
* :mod:`~wikivel_bot.web.sessions` — logins kept in the queue database, ended by logout and an
  absolute lifetime; the wiki profile (blocked, groups) re-read every few minutes.
* :mod:`~wikivel_bot.web.api_errors` — every answer under ``/api/`` is JSON, errors included.
* :mod:`~wikivel_bot.web.decisions` — the one decision function the page and the API share.
* :mod:`~wikivel_bot.web.api` — ``/api/queue``, ``/api/files/<M-id>``, ``/api/stats``,
  ``/api/decisions``.
* :mod:`~wikivel_bot.web.suggest` — ``/api/suggest``: suggestions for any file from the
  resident linker the CLI hands to ``create_app`` (``wikivel_bot.resident``; the web imports
  neither it nor the linker), with its own cache rule, limit and CORS.
* :mod:`~wikivel_bot.web.gadget` — the Commons user script (``/gadget.js``), its login popup
  that hands the wiki's page a token, ``/api/me``.
* :mod:`~wikivel_bot.web.pages` — the review page, the grid, batches, ``/healthz``.
* :mod:`~wikivel_bot.web.items` — item labels, descriptions and P18 images in the reviewer's
  language: from the label set for the items it keeps, else from the bot's one Wikidata
  client (``wikivel_bot.wikidata.client``).
* :mod:`~wikivel_bot.web.views` — values as the templates and the API show them.
* :mod:`~wikivel_bot.web.context` — what every handler needs (store, settings, helpers).
* :mod:`~wikivel_bot.web.secrets_file` — the OAuth client secret and the session key.
* :mod:`~wikivel_bot.web.serve` — the WSGI server (waitress).
"""
