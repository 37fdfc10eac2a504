"""What is kept from one Wikibase entity (the block parsers that call this are ``blocks.py``).

Two entity kinds are read:

* Wikidata **items** (``"type":"item"``, statements under ``claims``): QID, label and
  description with language fallback (the linker's text), the label and description in each
  kept display language (``labels.languages``, for the review page), aliases (optional), the
  first P18 image and the P31 and P279 targets. Deprecated statements and ``somevalue``/``novalue`` snaks are skipped.
* Commons **MediaInfo** entities (``"type":"mediainfo"``, statements under ``statements``):
  the page id and the P180 (depicts) items with their rank.

Entities come as dicts (orjson) or as lazy simdjson objects; the functions here only use
``.get()``, iteration and type checks, so both work and only the values read are converted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from wikivel_bot.core.safety import PERSON_PROPERTIES
from wikivel_bot.types import is_qid
from wikivel_bot.wikidata.entities import best_image

# Wikidata's language-neutral label ("mul", 2024): the last resort of every fallback chain.
MUL = "mul"
RANK_NORMAL = 0
RANK_PREFERRED = 1

_simdjson: Any
try:
    # simdjson parses lazily: only the few values read below become Python objects, so an
    # item line parses about twice as fast as with orjson. Optional; orjson is the fallback.
    import simdjson

    _simdjson = simdjson
except ImportError:  # pragma: no cover - depends on the installation
    _simdjson = None
# JSON objects as the parsers hand them out: dicts (orjson) or lazy simdjson objects. The
# extraction below only uses .get(), iteration and isinstance checks against this tuple.
_OBJECTS: Any = (dict, _simdjson.Object) if _simdjson is not None else (dict,)

TEXT_SCHEMA = pa.schema(
    [
        ("qid", pa.int64()),
        ("label", pa.string()),
        ("label_lang", pa.string()),
        ("description", pa.string()),
        ("description_lang", pa.string()),
        ("image", pa.string()),
        ("aliases", pa.list_(pa.string())),
        # The first P31 target on the non-depictable list (0 = depictable by P31).
        ("blocked_by", pa.int64()),
        # Items without P31: a bitmask of the person-only properties they have
        # (core.safety.PERSON_PROPERTIES; the safety rules count such an item as a person).
        ("person_properties", pa.int8()),
        # Label and description in each kept display language the item has (``texts.py``).
        ("texts", pa.list_(pa.struct([("lang", pa.string()), ("label", pa.string()),
                                      ("description", pa.string())]))),
    ]
)


def qid_text(number: int) -> str:
    """146 → ``"Q146"``."""
    return f"Q{int(number)}"


def language_chain(languages: Sequence[str]) -> Tuple[str, ...]:
    """The fallback order for texts: the configured languages, then ``mul``."""
    chain = [lang for lang in languages if lang]
    if MUL not in chain:
        chain.append(MUL)
    return tuple(dict.fromkeys(chain))


def _pick_text(texts: Any, chain: Sequence[str]) -> Tuple[str, str]:
    # An entity without texts serialises them as [] (PHP's empty array), not {}.
    if not isinstance(texts, _OBJECTS):
        return "", ""
    for lang in chain:
        entry = texts.get(lang)
        if entry is not None:
            value = entry.get("value") if isinstance(entry, _OBJECTS) else None
            if value:
                return value, lang
    return "", ""


def _aliases(aliases: Any, chain: Sequence[str]) -> List[str]:
    if not isinstance(aliases, _OBJECTS):
        return []
    out: List[str] = []
    for lang in chain:
        entries = aliases.get(lang)
        for entry in entries if entries is not None else ():
            value = entry.get("value") if isinstance(entry, _OBJECTS) else None
            if value and value not in out:
                out.append(value)
    return out


def display_texts(labels: Any, descriptions: Any, languages: Sequence[str]) -> List[Dict[str, str]]:
    """``[{"lang", "label", "description"}]`` for each of ``languages`` the item has a text in
    (no fallback: a language without either text is left out)."""
    # Runs for every item of the dump: one lookup per language and kind, nothing else.
    labels = labels if isinstance(labels, _OBJECTS) else {}
    descriptions = descriptions if isinstance(descriptions, _OBJECTS) else {}
    out: List[Dict[str, str]] = []
    for lang in languages:
        label = _value(labels.get(lang))
        description = _value(descriptions.get(lang))
        if label or description:
            out.append({"lang": lang, "label": label, "description": description})
    return out


def _value(entry: Any) -> str:
    value = entry.get("value") if entry is not None and isinstance(entry, _OBJECTS) else None
    return value if isinstance(value, str) else ""


def statement_values(statements: Any) -> Iterator[Tuple[Any, int]]:
    """(datavalue value, rank) of the usable statements of one property, in order.

    Deprecated statements and ``somevalue``/``novalue`` snaks carry no usable target.
    """
    if statements is None or isinstance(statements, (str, bytes)) or isinstance(statements, _OBJECTS):
        return
    for statement in statements:
        if not isinstance(statement, _OBJECTS):
            continue
        rank = statement.get("rank", "normal")
        if rank == "deprecated":
            continue
        snak = statement.get("mainsnak")
        if not isinstance(snak, _OBJECTS) or snak.get("snaktype", "value") != "value":
            continue
        datavalue = snak.get("datavalue")
        value = datavalue.get("value") if isinstance(datavalue, _OBJECTS) else None
        if value is None:
            continue
        yield value, RANK_PREFERRED if rank == "preferred" else RANK_NORMAL


def item_targets(statements: Any) -> List[int]:
    """Numeric QIDs of the usable item-valued statements (duplicates removed, order kept)."""
    out: List[int] = []
    for value, _rank in statement_values(statements):
        number = _item_number(value)
        if number and number not in out:
            out.append(number)
    return out


def _item_number(value: Any) -> int:
    if not isinstance(value, _OBJECTS):
        return 0
    if value.get("entity-type", "item") != "item":
        return 0
    text = value.get("id")
    if is_qid(text):
        return int(text[1:])
    number = value.get("numeric-id")
    return int(number) if isinstance(number, int) and number > 0 else 0


def first_image(statements: Any) -> str:
    """The P18 file name to show, by the bot's one image rule (preferred, then normal, never
    deprecated): the review page and the Wikidata client choose the same picture."""
    return best_image((value, rank == RANK_PREFERRED) for value, rank in statement_values(statements))


@dataclass
class ItemFields:
    """What is kept of one Wikidata item (also what tests and the API path build from)."""

    qid: int
    label: str = ""
    label_lang: str = ""
    description: str = ""
    description_lang: str = ""
    image: str = ""
    aliases: List[str] = field(default_factory=list)
    p31: List[int] = field(default_factory=list)
    p279: List[int] = field(default_factory=list)
    blocked_by: int = 0
    # Label and description in each display language the item has (``display_texts``).
    texts: List[Dict[str, str]] = field(default_factory=list)
    # Without P31: which person-only properties the item has (:func:`person_property_bits`).
    person_properties: int = 0


def person_property_bits(claims: Any) -> int:
    """Bit i set when the item has a statement (not deprecated, any snak type: "date of death
    unknown" is a person's too) for ``core.safety.PERSON_PROPERTIES[i]``."""
    bits = 0
    for bit, pid in enumerate(PERSON_PROPERTIES):
        statements = claims.get(pid)
        if statements is None or isinstance(statements, (str, bytes)) or isinstance(statements, _OBJECTS):
            continue
        if any(isinstance(st, _OBJECTS) and st.get("rank", "normal") != "deprecated" for st in statements):
            bits |= 1 << bit
    return bits


def extract_item(
    entity: Mapping[str, Any],
    chain: Sequence[str],
    with_aliases: bool = False,
    p31_blocklist: FrozenSet[int] = frozenset(),
    display: Sequence[str] = (),
) -> Optional[ItemFields]:
    """The kept fields of an item entity dict, or None when it is not an item.

    :param entity: one entity as in the dump or in ``wbgetentities``.
    :param chain: language fallback order (see :func:`language_chain`).
    :param with_aliases: also keep aliases in the chain's languages.
    :param p31_blocklist: numeric QIDs of non-depictable classes; the first P31 target found
        there is recorded in ``blocked_by`` (and the item's description is not kept).
    :param display: languages whose label and description are kept as they are, for the
        review page (``labels.languages``); the linker's text above is unaffected.
    """
    qid = entity.get("id")
    if entity.get("type", "item") != "item" or not is_qid(qid):
        return None
    number = int(qid[1:])
    claims = entity.get("claims")
    if not isinstance(claims, _OBJECTS):
        claims = {}
    p31 = item_targets(claims.get("P31"))
    p279 = item_targets(claims.get("P279"))
    blocked_by = next((target for target in p31 if target in p31_blocklist), 0)
    label, label_lang = _pick_text(entity.get("labels"), chain)
    fields = ItemFields(qid=number, label=label, label_lang=label_lang, p31=p31, p279=p279,
                        person_properties=0 if p31 else person_property_bits(claims))
    if blocked_by:
        # Never kept: only the label is worth storing, to explain the removal.
        fields.blocked_by = blocked_by
        return fields
    fields.description, fields.description_lang = _pick_text(entity.get("descriptions"), chain)
    fields.image = first_image(claims.get("P18"))
    if display:
        fields.texts = display_texts(entity.get("labels"), entity.get("descriptions"), display)
    if with_aliases:
        fields.aliases = _aliases(entity.get("aliases"), chain)
    return fields


def depicts_of(entity: Mapping[str, Any]) -> Dict[int, int]:
    """{numeric QID: rank} of the usable P180 statements of a MediaInfo entity.

    A file that depicts the same item twice counts once, with the higher rank.
    """
    statements = entity.get("statements")
    if not isinstance(statements, _OBJECTS):
        # Commons serialises a file without statements as "statements": [].
        return {}
    out: Dict[int, int] = {}
    for value, rank in statement_values(statements.get("P180")):
        number = _item_number(value)
        if number:
            out[number] = max(rank, out.get(number, RANK_NORMAL))
    return out
