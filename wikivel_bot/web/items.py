"""Item labels, descriptions and P18 images in the reviewer's language.

A candidate's evidence carries the label and description the linker saw (one language); the
review page shows each item in the reviewer's language (``uselang``, falling back to English
and then to the evidence) with the item's own image (P18) beside the file. :func:`items_in`
takes the texts and the P18 file of the items the label set keeps from the set itself (in
``labels.languages``), and asks the bot's one Wikidata client
(:class:`wikivel_bot.wikidata.client.WikidataClient`) only for the others (e.g. depicts
already on the file), for the P18 of items the set keeps without a picture (the starter
set has none), and for thumbnail URLs. The client caches its answers (bounded in size
and time): a reviewer's session asks for the same items over and over, and Wikidata's API
etiquette asks tools not to. Both sides choose an item's picture by the same rule
(preferred P18, then normal, never deprecated), so the reviewer sees the linker's picture.

A wiki that does not answer leaves the page usable: one line is logged and the page falls
back to the evidence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterable, Mapping, Optional

from wikivel_bot.errors import WikiError
from wikivel_bot.wikidata.client import WikidataClient
from wikivel_bot.wikidata.entities import ItemInfo

if TYPE_CHECKING:
    from wikivel_bot.labels.labelset import LabelSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShownItem:
    """An item as the page shows it; empty strings where the wiki had nothing."""

    qid: str
    label: str = ""
    description: str = ""
    # The language the label is in ("" when none was found).
    lang: str = ""
    # The P18 file's title (``File:…``) and a thumbnail URL of it.
    image_title: str = ""
    image_thumb: str = ""
    # The language the description is in (it may differ from the label's).
    description_lang: str = ""


def items_in(qids: Iterable[str], lang: str, labels: Optional["LabelSet"],
             client: Optional[WikidataClient]) -> Dict[str, ShownItem]:
    """The items in ``lang`` (else ``mul``, English, any): the label set's texts and P18 for
    the items it keeps, the Wikidata client for the others; items neither knows are left out.

    :param client: None: the label set alone (the page falls back to the evidence).
    """
    wanted = sorted(set(q for q in qids if q))
    texts = labels.texts_in(wanted, lang) if labels is not None else {}
    others = [q for q in wanted if q not in texts]
    # The label set may keep an item's texts without its picture (the starter set carries
    # none): its P18 then comes from the wiki too, through the same cached client.
    imageless = [q for q, t in texts.items() if not t.image]
    found: Mapping[str, ItemInfo] = {}
    if client is not None and (others or imageless):
        try:
            found = client.get(others + imageless, languages=(lang,))
        except WikiError as exc:
            log.warning("item look-up failed, showing the linker's labels: %s", exc)
    titles = {q: "File:" + t.image for q, t in texts.items() if t.image}
    titles.update({q: "File:" + info.image for q, info in found.items() if info.image})
    thumbs: Mapping[str, str] = {}
    if client is not None and titles:
        try:
            thumbs = client.thumbnails(titles.values())
        except WikiError as exc:
            log.warning("image look-up failed, items shown without images: %s", exc)
    out: Dict[str, ShownItem] = {}
    for qid, info in found.items():
        if qid in texts:
            continue  # only its picture was looked up: the label set's texts are shown
        title = titles.get(qid, "")
        out[qid] = ShownItem(qid, info.label, info.description, info.label_language, title, thumbs.get(title, ""),
                             description_lang=info.description_language)
    for qid, text in texts.items():
        title = titles.get(qid, "")
        out[qid] = ShownItem(qid, text.label, text.description, text.label_lang, title, thumbs.get(title, ""),
                             description_lang=text.description_lang)
    return out

