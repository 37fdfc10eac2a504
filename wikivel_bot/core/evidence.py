"""Commons' own evidence for a depicted item: the rules, with no I/O (standard library only).

A file on Commons usually says what it shows in forms linked to Wikidata: its categories
(a category page tied to an item), the wikilinks of its description (``[[w:Eiffel Tower]]``,
``{{w|…}}``, ``[[d:Q243]]``) and identifier templates (``{{Rijksmonument|518452}}`` → the
item holding P359 = 518452). This module fixes what such evidence *is*, so every part of the
bot stores, shows and judges it the same way:

* the kinds (:data:`KIND_CATEGORY` …) and the one value that carries a piece of evidence,
  :class:`Evidence` (kind, the text it came from, the item), stored as JSON on a candidate;
* the unresolved references a :class:`~wikivel_bot.types.MediaFile` carries from the fetch to
  the resolver (``"link:enwiki:Eiffel Tower"``, ``"item:Q243"``, ``"id:P359:518452:Rijksmonument"``);
* the identifier-template table (:class:`IdentifierRule`, :data:`DEFAULT_IDENTIFIER_RULES`);
* the rules that need no network: following a category item to its main topic
  (:func:`category_target`), the "category label" match (:func:`category_label_evidence`),
  whether evidence ties a file to an item (:func:`ties_file_to`, what the safety rules ask
  instead of looking for words of a label in the text), and the bucket reports group by
  (:func:`kind_bucket`).

Reading the references from wikitext is ``wikivel_bot.commons.evidence_refs``; resolving them
against Commons and Wikidata is ``wikivel_bot.commons.evidence``.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.core.titles import page_name
from wikivel_bot.errors import ConfigError
from wikivel_bot.types import is_qid

# The kinds of evidence: stable strings, stored in the queue and shown to reviewers.
KIND_CATEGORY = "category"
KIND_CATEGORY_LABEL = "category label"
KIND_LINK = "link"
KIND_ID = "identifier"
KINDS = (KIND_CATEGORY, KIND_CATEGORY_LABEL, KIND_LINK, KIND_ID)
# Kinds that name *the item* through a link someone made on purpose; a category whose name
# merely equals a label is weaker and never unlocks a person (see ties_file_to).
TYING_KINDS = frozenset({KIND_CATEGORY, KIND_LINK, KIND_ID})

# Report buckets: no evidence at all, one kind, or several kinds at once.
BUCKET_IMAGE_ONLY = "image only"
BUCKET_SEVERAL = "several"
BUCKETS = (BUCKET_IMAGE_ONLY, KIND_CATEGORY, KIND_CATEGORY_LABEL, KIND_LINK, KIND_ID, BUCKET_SEVERAL)

# Wikimedia category (Q4167836): an item standing for a category page, not for a topic.
WIKIMEDIA_CATEGORY = "Q4167836"

# A Wikidata property id, as the identifier table names them.
_PROPERTY = re.compile(r"P[1-9][0-9]*")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Evidence:
    """One reason, read from the file's own page, to think it depicts ``qid``.

    :param kind: one of :data:`KINDS`.
    :param source: the text it came from, as a reviewer would recognise it:
        ``Category:Eiffel Tower``, ``[[w:en:Eiffel Tower]]``, ``{{Rijksmonument|518452}}``.
    :param qid: the item it names.
    :raises ValueError: an unknown kind, an empty source or a malformed item id.
    """

    kind: str
    source: str
    qid: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown evidence kind {self.kind!r} (known: {', '.join(KINDS)})")
        if not self.source:
            raise ValueError(f"evidence for {self.qid!r} has no source text")
        if not is_qid(self.qid):
            raise ValueError(f"evidence {self.source!r} names {self.qid!r}, not a Wikidata item id")

    def describe(self) -> str:
        """What a reviewer reads: ``Category:Eiffel Tower → Q243``."""
        return f"{self.source} → {self.qid}"

    def as_dict(self) -> Dict[str, str]:
        """The stored form (``Candidate.evidence["sources"]`` holds a list of these)."""
        return {"kind": self.kind, "source": self.source, "qid": self.qid, "text": self.describe()}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "Evidence":
        """Back from :meth:`as_dict` (``text`` is derived, so it is not read).

        :raises ValueError: a key is missing or a value is invalid (the message names it).
        """
        try:
            return cls(str(doc["kind"]), str(doc["source"]), str(doc["qid"]))
        except KeyError as exc:
            raise ValueError(f"stored evidence {dict(doc)!r} has no {exc.args[0]!r}") from None


EvidenceLike = Union[Evidence, Mapping[str, Any]]


def _as_evidence(item: EvidenceLike) -> Evidence:
    return item if isinstance(item, Evidence) else Evidence.from_dict(item)


# --- references: what the fetcher read, not yet resolved ---------------------------------

REF_CATEGORY = "category"
REF_LINK = "link"
REF_ITEM = "item"
REF_ID = "id"


@dataclass(frozen=True)
class Ref:
    """A parsed reference (:func:`parse_ref`); unused fields are ``""``.

    :param kind: ``category``, ``link``, ``item`` or ``id``.
    :param name: the category name (no prefix), the linked title, or the item id.
    :param site: for links, the wiki's database name (``enwiki``).
    :param prop: for identifiers, the property (``P359``).
    :param value: for identifiers, the identifier.
    :param template: for identifiers, the template it came from.
    """

    kind: str
    name: str = ""
    site: str = ""
    prop: str = ""
    value: str = ""
    template: str = ""

    @property
    def text(self) -> str:
        """The reference string this was parsed from (the stored form)."""
        if self.kind == REF_LINK:
            return ref_link(self.site, self.name)
        if self.kind == REF_ITEM:
            return ref_item(self.name)
        if self.kind == REF_ID:
            return ref_id(self.prop, self.value, self.template)
        return ref_category(self.name)

    @property
    def source(self) -> str:
        """How the reference reads on the page, for :attr:`Evidence.source`.

        Links are shown in one canonical spelling (``[[w:en:Title]]``) whichever form the
        page used (``[[:en:Title]]``, ``{{w|Title}}``), since the reference keeps only the
        site and title.
        """
        if self.kind == REF_LINK:
            return link_source(self.site, self.name)
        if self.kind == REF_ITEM:
            return f"[[d:{self.name}]]"
        if self.kind == REF_ID:
            return f"{{{{{self.template}|{self.value}}}}}"
        return f"Category:{self.name}"


def ref_category(name: str) -> str:
    """``"category:<Name>"`` (the name without ``Category:``)."""
    return f"{REF_CATEGORY}:{page_name(name)}"


def ref_link(site: str, title: str) -> str:
    """``"link:enwiki:Eiffel Tower"``: a page on another wiki, named by its database name."""
    if not site or ":" in site:
        raise ValueError(f"{site!r} is not a wiki database name (like enwiki)")
    return f"{REF_LINK}:{site}:{page_name(title)}"


def ref_item(qid: str) -> str:
    """``"item:Q243"``: a direct link to an item."""
    if not is_qid(qid):
        raise ValueError(f"{qid!r} is not a Wikidata item id")
    return f"{REF_ITEM}:{qid}"


def ref_id(prop: str, value: str, template: str) -> str:
    """``"id:P359:518452:Rijksmonument"``: an identifier read from a template."""
    if not _PROPERTY.fullmatch(prop):
        raise ValueError(f"{prop!r} is not a Wikidata property id (like P359)")
    value = value.strip()
    if not value:
        raise ValueError(f"{{{{{template}}}}} gives an empty {prop} identifier")
    return f"{REF_ID}:{prop}:{value}:{template.strip()}"


def parse_ref(text: str) -> Ref:
    """A stored reference string back as a :class:`Ref`.

    :raises ValueError: not a reference this module writes (the message quotes it).
    """
    kind, sep, rest = text.partition(":")
    if sep and rest:
        if kind == REF_CATEGORY:
            return Ref(REF_CATEGORY, name=rest)
        if kind == REF_ITEM and is_qid(rest):
            return Ref(REF_ITEM, name=rest)
        if kind == REF_LINK:
            site, sep, title = rest.partition(":")
            if sep and site and title:
                return Ref(REF_LINK, name=title, site=site)
        if kind == REF_ID:
            prop, sep, tail = rest.partition(":")
            # The identifier may hold colons (URNs); template names practically never do.
            value, sep2, template = tail.rpartition(":")
            if sep and sep2 and _PROPERTY.fullmatch(prop) and value and template:
                return Ref(REF_ID, prop=prop, value=value, template=template)
    raise ValueError(f"{text!r} is not an evidence reference (category:, link:, item: or id:)")


def link_source(site: str, title: str) -> str:
    """``[[w:en:Eiffel Tower]]`` for ``enwiki``; ``[[enwikivoyage:…]]`` style for other wikis."""
    if site.endswith("wiki") and site not in ("commonswiki", "wikidatawiki", "specieswiki", "metawiki"):
        language = site[: -len("wiki")].replace("_", "-")
        return f"[[w:{language}:{title}]]"
    return f"[[{site}:{title}]]"


# --- identifier templates ------------------------------------------------------------------


@dataclass(frozen=True)
class IdentifierRule:
    """``{{template|…}}``'s ``parameter`` holds a value of ``property``.

    :param template: the template's name without ``Template:`` (matched like MediaWiki
        names: case-insensitive first letter, ``_`` as space; here all of it, lower-cased).
    :param parameter: ``"1"`` for the first unnamed parameter, else the parameter's name.
    :param property: the Wikidata property holding the identifier (``P359``).
    """

    template: str
    parameter: str
    property: str

    # builtins.property: the field above hides the name ``property`` in this class's body.
    @builtins.property
    def key(self) -> str:
        """The template name as the extractor compares it."""
        return template_key(self.template)


def template_key(name: str) -> str:
    """A template name as compared: no ``Template:`` prefix, ``_`` as space, lower case."""
    name = _SPACES.sub(" ", name.replace("_", " ")).strip()
    if name.lower().startswith("template:"):
        name = name[len("template:"):].strip()
    return name.lower()


# A few well-known Commons templates. Template names from the Wiki Loves Monuments bot's
# configuration (wikimedia/labs-tools-heritage erfgoedbot/monuments_config/*.json,
# "commonsTemplate"); properties from Wikidata (P359's use in nl-wd_nl.json there;
# Property talk:P808 names Commons:Template:BIC as its template parameter).
DEFAULT_IDENTIFIER_RULES: Tuple[IdentifierRule, ...] = (
    IdentifierRule("Rijksmonument", "1", "P359"),  # Rijksmonument ID (Netherlands)
    IdentifierRule("Mérimée", "1", "P380"),  # Mérimée ID (France)
    IdentifierRule("Listed building England", "1", "P1216"),  # National Heritage List for England
    IdentifierRule("NRHP", "1", "P649"),  # NRHP reference number (United States)
    IdentifierRule("Cultural Heritage Russia", "1", "P1483"),  # kulturnoe-nasledie.ru ID
    IdentifierRule("BIC", "1", "P808"),  # Bien de Interés Cultural code (Spain)
)

RULE_KEYS = ("template", "parameter", "property")


def rules_from_table(rows: Iterable[Any], where: str = "evidence.identifier_templates") -> Tuple[IdentifierRule, ...]:
    """Identifier rules from user-given rows (``{template, parameter, property}`` tables).

    :param rows: mappings, or :class:`IdentifierRule` values (kept as they are, checked too).
    :param where: named in errors (the setting and where it came from).
    :raises ConfigError: a row that is not a table, lacks or adds a key, or holds an empty
        template, an empty parameter or a property that is not ``P`` and a number.
    """
    out = []
    for number, row in enumerate(rows, 1):
        if isinstance(row, IdentifierRule):
            row = {"template": row.template, "parameter": row.parameter, "property": row.property}
        if not isinstance(row, Mapping):
            raise ConfigError(f"{where}: row {number} must be a table like "
                              f'{{template = "Rijksmonument", parameter = "1", property = "P359"}}, not {row!r}')
        unknown = sorted(set(map(str, row)) - set(RULE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: row {number} has unknown key {unknown[0]!r} "
                              f"(known: {', '.join(RULE_KEYS)})")
        values = {}
        for key in RULE_KEYS:
            value = row.get(key, "1" if key == "parameter" else None)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: row {number} needs a non-empty string {key}, not {value!r}")
            values[key] = value.strip()
        if not _PROPERTY.fullmatch(values["property"]):
            raise ConfigError(f"{where}: row {number}: {values['property']!r} is not a Wikidata "
                              f"property id (like P359)")
        out.append(IdentifierRule(values["template"], values["parameter"], values["property"]))
    return tuple(out)


def merged_rules(extra: Sequence[IdentifierRule]) -> Tuple[IdentifierRule, ...]:
    """The defaults with ``extra`` added; a row for a template already in the table replaces
    that template's default (an operator correcting a shipped row)."""
    replaced = {rule.key for rule in extra}
    return tuple(r for r in DEFAULT_IDENTIFIER_RULES if r.key not in replaced) + tuple(extra)


# --- rules over resolved data --------------------------------------------------------------


def category_target(linked_item: str, instance_of: Sequence[str], main_topic: Sequence[str]) -> Optional[str]:
    """The item a category page stands for, given the item its page is linked to.

    A category page is linked either to the topic's own item (the sitelink sits on the
    topic) or to a *category item* (instance of Wikimedia category, Q4167836) whose P301
    "category's main topic" names the topic. The second must be followed, or every file
    would "depict" a category.

    :param linked_item: the item the page is linked to (pageprops ``wikibase_item``).
    :param instance_of: that item's P31 targets.
    :param main_topic: that item's P301 targets.
    :return: the topic's item; None for a category item without exactly one main topic
        (none: nothing to follow; several: no single item is named).
    """
    if WIKIMEDIA_CATEGORY not in instance_of:
        return linked_item
    topics = [q for q in dict.fromkeys(main_topic) if is_qid(q)]
    return topics[0] if len(topics) == 1 else None


def category_label_evidence(
    categories: Iterable[str],
    names: Mapping[str, Sequence[str]],
    evidence: Iterable[EvidenceLike] = (),
) -> Tuple[Evidence, ...]:
    """:data:`KIND_CATEGORY_LABEL` evidence: unlinked categories named exactly like an item.

    A category whose page is linked to nothing may still be called exactly what one item is
    called ("Category:Mallard" and the item *mallard*). That is weaker than a link — names
    are shared — so it is its own kind, and only a name that belongs to exactly one item
    counts.

    :param categories: the file's direct categories (``MediaFile.categories``, no prefix).
    :param names: {label or alias: [items]} (the label set's exact texts); keys are compared
        as MediaWiki compares titles: first letter case-insensitive, the rest exact.
    :param evidence: the file's resolved evidence; a category that already gave
        :data:`KIND_CATEGORY` evidence is linked, so it is skipped.
    """
    linked = {ev.source for ev in map(_as_evidence, evidence) if ev.kind == KIND_CATEGORY}
    index: Dict[str, set] = {}
    for name, qids in names.items():
        index.setdefault(page_name(name), set()).update(q for q in qids if is_qid(q))
    out = []
    for category in dict.fromkeys(page_name(c) for c in categories):
        source = f"Category:{category}"
        if not category or source in linked:
            continue
        items = index.get(category, set())
        if len(items) == 1:
            out.append(Evidence(KIND_CATEGORY_LABEL, source, next(iter(items))))
    return tuple(out)


def ties_file_to(qid: str, evidence: Iterable[EvidenceLike]) -> bool:
    """Whether the file's evidence names ``qid`` through a link someone made on purpose.

    True for a category linked to the item, a description link to it, or an identifier
    template that resolves to it; a category that merely shares the item's name
    (:data:`KIND_CATEGORY_LABEL`) is not enough. The safety rules ask this before
    suggesting a named person or a sensitive item.
    """
    return any(ev.qid == qid and ev.kind in TYING_KINDS for ev in map(_as_evidence, evidence))


def kind_bucket(sources: Iterable[EvidenceLike]) -> str:
    """The report bucket of a candidate's evidence: ``image only`` (none), the one kind it
    has, or ``several`` (more than one kind)."""
    kinds = {ev.kind for ev in map(_as_evidence, sources)}
    if not kinds:
        return BUCKET_IMAGE_ONLY
    if len(kinds) == 1:
        return next(iter(kinds))
    return BUCKET_SEVERAL


def evidence_for(qid: str, evidence: Iterable[EvidenceLike]) -> Tuple[Evidence, ...]:
    """The pieces of ``evidence`` naming ``qid``, each once, in order."""
    return tuple(dict.fromkeys(ev for ev in map(_as_evidence, evidence) if ev.qid == qid))
