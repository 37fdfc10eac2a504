"""Wikidata over HTTP: the one item client, and the bot's polite-HTTP rules.

A floor below ``labels/``, ``linker/``, ``review/``, ``web/`` and ``commons/``, so that each can
use it: it imports only ``types``, ``errors``, ``core``, ``requests`` and ``urllib3`` (never
pywikibot, which the web process keeps out; reading items needs no login).

* :mod:`~wikivel_bot.wikidata.client` — ``WikidataClient``: ``wbgetentities`` by id
  in batches of 50, items as ``ItemInfo`` in a bounded cache, P18 thumbnail URLs;
* :mod:`~wikivel_bot.wikidata.lookups` — items by sitelink and by statement (Commons' evidence),
  over the client's session;
* :mod:`~wikivel_bot.wikidata.entities` — reading an item: texts by language fallback,
  aliases, P31/P279, and the one image rule (``best_image``: preferred, then normal,
  never deprecated);
* :mod:`~wikivel_bot.wikidata.api` — one Action API request: ``maxlag``, retries, one-line errors;
* :mod:`~wikivel_bot.wikidata.retry` — the retry policy and the one ``Retry-After`` parser
  (urllib3's), used by the thumbnail downloads too;
* :mod:`~wikivel_bot.wikidata.agent` — the one User-Agent (Wikimedia's policy);
* :mod:`~wikivel_bot.wikidata.cache` — an LRU cache with a size bound and an expiry.

Importing this package is cheap (nothing is re-exported): ``labels.entities`` uses the image
rule inside dump workers without loading ``requests``. Import the modules themselves.
"""


from __future__ import annotations
