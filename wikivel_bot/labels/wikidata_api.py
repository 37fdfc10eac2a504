"""Small label sets through the Wikidata API, for users without dumps (``--from-qids``).

``wbgetentities`` returns entities in the dumps' JSON format, so the same extraction applies.
The listed items are fetched with texts and claims, then their parents for two more levels
(ancestors within 3 hops need the claims of items 0, 1 and 2 hops up), then the classes
above with labels and claims only, up to the top of the graph (the safety rules' "under a
class" has no hop ceiling; at most :data:`MAX_UPPER_ITEMS` of them). Requests go through the bot's one Wikidata client
(:class:`wikivel_bot.wikidata.client.WikidataClient`: a User-Agent that names the operator,
``maxlag``, retries, batches of 50); the base URL is a parameter so tests can point it at a
local server.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

import numpy as np

from wikivel_bot.labels.assemble import Collected, assemble, edges_of, instance_edges_of, texts_table
from wikivel_bot.labels.artifact import write_artifact
from wikivel_bot.labels.entities import ItemFields, extract_item, language_chain, qid_text
from wikivel_bot.labels.hierarchy import MAX_HOPS
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.labels.lists import default_p31_blocklist
from wikivel_bot.wikidata.client import WIKIDATA_API, WikidataClient

# Classes read above the third level (Wikidata's upper ontology above a few hundred items is
# a few thousand classes): a bound on requests, not a hop ceiling.
MAX_UPPER_ITEMS = 20_000


def build_from_api(
    out_dir: Optional[Path],
    qids: Iterable[int],
    *,
    api_url: str = WIKIDATA_API,
    contact: str = "",
    languages: Sequence[str] = ("en",),
    display_languages: Sequence[str] = ("en",),
    with_aliases: bool = False,
    p31_blocklist: Iterable[int] = (),
    blocklist: Iterable[int] = (),
    allowlist: Iterable[int] = (),
    overwrite: bool = False,
    client: Optional[WikidataClient] = None,
) -> LabelSet:
    """A label set of the listed items (all kept unless removed), built from the API.

    :param out_dir: where to write it (None: keep it in memory only).
    :param qids: numeric QIDs to keep.
    :param languages: the linker's text fallback; :param display_languages: also kept as they
        are, for the review page (``labels.languages``).
    :param api_url: the Wikibase API; :param contact: for the User-Agent.
    :raises WikiError: the API cannot be reached or answers with an error.
    """
    client = client or WikidataClient(api_url, contact=contact, cache_size=0)
    chain = language_chain(languages)
    display = tuple(dict.fromkeys(display_languages))
    asked = tuple(dict.fromkeys(chain + display))
    blocked = default_p31_blocklist() | frozenset(p31_blocklist)
    inputs = sorted(set(int(q) for q in qids))
    full = ("labels", "descriptions", "aliases", "claims") if with_aliases else ("labels", "descriptions", "claims")
    fields: List[ItemFields] = []
    with_claims: List[ItemFields] = []
    seen = set(inputs)
    level_qids = inputs
    level = 0
    while level_qids and len(seen) - len(inputs) <= MAX_UPPER_ITEMS:
        # Above the third level only what the safety rules read: the label and P31/P279.
        props = full if level < MAX_HOPS else ("labels", "claims")
        entities = client.get_entities([qid_text(q) for q in level_qids], props, asked)
        next_level: List[int] = []
        for entity in entities.values():
            item = extract_item(entity, chain, with_aliases, blocked, display)
            if item is None:
                continue
            fields.append(item)
            with_claims.append(item)
            next_level += [p for p in item.p31 + item.p279 if p not in seen]
        level_qids = sorted(set(next_level))
        seen.update(level_qids)
        level += 1
    collected = Collected(
        texts=texts_table(fields), edges=edges_of(with_claims),
        inputs=np.asarray(inputs, dtype=np.int64), direct=np.zeros(len(inputs), dtype=np.int64),
        instance_edges=instance_edges_of(with_claims),
    )
    label_set = assemble(
        collected, min_freq=0, languages=languages, display_languages=display, with_aliases=with_aliases,
        p31_blocklist=blocked,
        blocklist=blocklist, allowlist=allowlist,
        sources=[{"kind": "wikidata-api", "name": api_url, "date": time.strftime("%Y-%m-%d", time.gmtime()),
                  "items": len(inputs)}],
    )
    if out_dir is not None:
        label_set.path = write_artifact(label_set.data, Path(out_dir), overwrite=overwrite)
    return label_set
