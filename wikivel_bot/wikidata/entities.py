"""What is shown and ranked of one Wikidata item, read from its JSON.

The rules, the same for the linker (through the label set, ``labels.entities``), the writer
and the review page:

* texts: the asked languages in order, then ``mul`` (Wikidata's language-neutral label), then
  English, then any language at all (a label in another language beats a bare QID);
* aliases in the chain's languages;
* **the image** (P18): the first preferred statement, else the first normal one, never a
  deprecated one (:func:`best_image`), so a reviewer and the linker see the same picture;
* P31/P279 targets without deprecated statements and ``somevalue``/``novalue`` snaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.safety import PERSON_PROPERTIES
from wikivel_bot.types import is_qid

MUL = "mul"  # Wikidata's language-neutral label, the last fallback before English


@dataclass(frozen=True)
class ItemInfo:
    """What is shown and ranked of one Wikidata item.

    :param qid: the id asked for.
    :param resolved: the item's own id: differs from ``qid`` when that is a redirect.
    :param label_language: the language the label came from ("" when none).
    :param image: the P18 file name (without ``File:``), by :func:`best_image`.
    """

    qid: str
    label: str = ""
    label_language: str = ""
    description: str = ""
    description_language: str = ""
    aliases: Tuple[str, ...] = ()
    image: str = ""
    instance_of: Tuple[str, ...] = ()
    subclass_of: Tuple[str, ...] = ()
    resolved: str = ""
    # An item without P31: which person-only properties (core.safety.PERSON_PROPERTIES) it
    # has statements for; the safety rules count it as a person then. () with P31.
    person_properties: Tuple[str, ...] = ()


def language_chain(languages: Sequence[str]) -> Tuple[str, ...]:
    """The configured languages in order, then ``mul``; duplicates dropped."""
    chain = [lang for lang in languages if lang] + [MUL]
    return tuple(dict.fromkeys(chain))


def request_languages(languages: Sequence[str]) -> Tuple[str, ...]:
    """The languages to ask the API for: the chain and English (an item has hundreds)."""
    return tuple(dict.fromkeys([*language_chain(languages), "en"]))


def best_image(values: Iterable[Tuple[Any, bool]]) -> str:
    """The one image rule: of (file name, preferred?) pairs of the usable P18 statements in
    order (deprecated ones already left out), the first preferred one, else the first."""
    best = ""
    for value, preferred in values:
        if not isinstance(value, str) or not value:
            continue
        if preferred:
            return value
        best = best or value
    return best


def item_info(entity: Mapping[str, Any], languages: Sequence[str], asked: str = "") -> Optional[ItemInfo]:
    """An :class:`ItemInfo` from ``wbgetentities`` (or dump) JSON; None for non-items.

    :param languages: the text fallback order (``mul``, English, any follow).
    :param asked: the id the entity was asked under (a redirect's own id); default its id.
    """
    qid = entity.get("id")
    if entity.get("type", "item") != "item" or not isinstance(qid, str) or not is_qid(qid):
        return None
    chain = language_chain(languages)
    claims = entity.get("claims")
    claims = claims if isinstance(claims, dict) else {}
    label, label_lang = pick_text(entity.get("labels"), chain)
    description, description_lang = pick_text(entity.get("descriptions"), chain)
    return ItemInfo(
        qid=asked or qid,
        label=label,
        label_language=label_lang,
        description=description,
        description_language=description_lang,
        aliases=_aliases(entity.get("aliases"), chain),
        image=best_image((value, rank == "preferred") for value, rank in _values(claims.get("P18"))),
        instance_of=_targets(claims.get("P31")),
        subclass_of=_targets(claims.get("P279")),
        resolved=qid,
        person_properties=() if _targets(claims.get("P31")) else _person_properties(claims),
    )


def _person_properties(claims: Mapping[str, Any]) -> Tuple[str, ...]:
    """The person-only properties with a statement that is not deprecated (any snak type:
    an unknown date of death is a person's too), in ``PERSON_PROPERTIES`` order."""
    return tuple(pid for pid in PERSON_PROPERTIES
                 if any(isinstance(st, dict) and st.get("rank") != "deprecated" for st in claims.get(pid) or ()))


def pick_text(texts: Any, chain: Sequence[str]) -> Tuple[str, str]:
    """(text, language): the chain first, then English, then any language at all."""
    # An entity without texts serialises them as [] (PHP's empty array), not {}.
    if not isinstance(texts, dict):
        return "", ""
    for lang in [*chain, "en", *sorted(texts)]:
        entry = texts.get(lang)
        if isinstance(entry, dict) and entry.get("value"):
            return str(entry["value"]), lang
    return "", ""


def _aliases(aliases: Any, chain: Sequence[str]) -> Tuple[str, ...]:
    if not isinstance(aliases, dict):
        return ()
    out: List[str] = []
    for lang in chain:
        for entry in aliases.get(lang) or ():
            value = entry.get("value") if isinstance(entry, dict) else None
            if value and value not in out:
                out.append(value)
    return tuple(out)


def _values(statements: Any) -> Iterator[Tuple[Any, str]]:
    """(value, rank) of the statements that carry a value and are not deprecated."""
    for statement in statements if isinstance(statements, list) else ():
        if not isinstance(statement, dict) or statement.get("rank") == "deprecated":
            continue
        snak = statement.get("mainsnak") or {}
        if snak.get("snaktype", "value") != "value":
            continue
        datavalue = snak.get("datavalue") or {}
        if "value" in datavalue:
            yield datavalue["value"], statement.get("rank", "normal")


def _targets(statements: Any) -> Tuple[str, ...]:
    out: List[str] = []
    for value, _rank in _values(statements):
        qid = value.get("id") if isinstance(value, dict) else None
        if not qid and isinstance(value, dict) and isinstance(value.get("numeric-id"), int):
            qid = f"Q{value['numeric-id']}"
        if isinstance(qid, str) and is_qid(qid) and qid not in out:
            out.append(qid)
    return tuple(out)
