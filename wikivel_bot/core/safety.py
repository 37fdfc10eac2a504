"""Suggestion safety: which items the bot withholds, and when the file's own text allows them.

Pure rules over a :class:`~wikivel_bot.core.labelset.LabelSetView` (stdlib only), applied by
:func:`wikivel_bot.core.ranking.rank_candidates` before the hierarchy step, so a withheld
person never suppresses its ancestor ``human`` either. Three rules, each with a name that
outputs and counters group by:

* **named person** (:data:`PEOPLE`): an item that is an *instance* of human (Q5), or of a
  class the operator lists, is never suggested from the image alone: a visual linker that
  says *which* person a photo shows is both its least precise guess (look-alikes) and a
  personality-rights risk (Commons:Photographs of identifiable people). It is suggested
  when the file's own text names it — its label or an alias appears, as whole words, in
  the cleaned file name, the description or a category — and then carries the note
  :data:`NAMED` as evidence. ``human`` itself and its subclasses (woman, child) are classes,
  not people, and stay suggestible.
* **sensitive class** (:data:`SENSITIVE`): items under a listed class (ethnic groups,
  religions, sexual orientations, medical conditions, ... see
  :data:`DEFAULT_SENSITIVE_CLASSES`) within 1-3 hops of the label set's P31/P279 closure,
  subclasses included, are withheld the same way (named in the text: allowed). The class
  item itself stays suggestible, like ``human``; block it by QID if it should not be.
* **blocked class** (:data:`BLOCKED_CLASS`): the class and everything under it, never
  suggested, named or not (the by-class counterpart of the item blocklist).

"Instance of" needs the P31 targets of the item, which label sets built since the
instance-of data was added store (``instance_of``). For an older set the rule falls back to
the closure — any item with the class among its ancestors counts — which withholds the
subclasses of human too; :func:`coverage_note` says so in every output.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.labelset import LabelSetView

# Rule names (what counters and outputs group withheld suggestions by).
PEOPLE = "named person"
SENSITIVE = "sensitive class"
BLOCKED_CLASS = "blocked class"
RULES: Tuple[str, ...] = (PEOPLE, SENSITIVE, BLOCKED_CLASS)
# The evidence a person or sensitive item carries when the file's text allows it.
NAMED = "named in the file's text"

HUMAN = "Q5"

# The shipped sensitive classes: the special categories of personal data (GDPR art. 9) that
# a picture can be tagged with, as Wikidata classes. Documented in docs/operator.md.
DEFAULT_SENSITIVE_CLASSES: Mapping[str, str] = {
    "Q41710": "ethnic group",
    "Q9174": "religion",
    "Q13414953": "religious denomination",
    "Q17888": "sexual orientation",
    "Q48264": "gender identity",
    "Q12136": "disease",
    "Q12135": "mental disorder",
    "Q12131": "disability",
    "Q12909644": "political ideology",
    "Q7278": "political party",
    "Q178790": "trade union",
}

# Names shorter than this (after normalising) are not matched: an alias such as "Mo" or "J"
# would "name" half the files on Commons.
MIN_NAME_CHARS = 3

_EXTENSION = re.compile(r"\.(jpe?g|png|gif|tiff?|webp|svg|bmp|xcf|djvu|pdf|ogv|webm|tif)$", re.IGNORECASE)
_NOT_WORD = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class SafetyRules:
    """The knobs of the safety rules (built from ``Settings.safety`` by the linker).

    :param withhold_people: the named-person rule; False only with the community's consent.
    :param person_classes: instances of these classes are people (default: human, Q5).
    :param sensitive_classes: items under these classes are withheld unless named.
    :param blocked_classes: these classes and everything under them are never suggested.
    :param max_hops: how far up the P31 ∪ P279 closure "under a class" reaches (1-3).
    """

    withhold_people: bool = True
    person_classes: FrozenSet[str] = frozenset({HUMAN})
    sensitive_classes: FrozenSet[str] = frozenset(DEFAULT_SENSITIVE_CLASSES)
    blocked_classes: FrozenSet[str] = frozenset()
    max_hops: int = 3

    def off_notes(self) -> Tuple[str, ...]:
        """What is switched off, in words (``suggest`` and ``status`` print these)."""
        notes = []
        if not self.withhold_people:
            notes.append("safety.withhold_people = false: named people are suggested from the image alone")
        if not self.sensitive_classes:
            notes.append("safety.sensitive_classes is empty: no sensitive classes are withheld")
        return tuple(notes)


@dataclass(frozen=True)
class FileText:
    """A file's own text, normalised for name matching: (where, text) pairs."""

    parts: Tuple[Tuple[str, str], ...] = ()

    @classmethod
    def of(cls, title: str = "", description: str = "", categories: Iterable[str] = ()) -> "FileText":
        """From a file's title (cleaned: no ``File:``, no extension), description and categories."""
        parts = [("file name", normalise(clean_file_name(title))), ("description", normalise(description))]
        for category in categories:
            name = category.split(":", 1)[1] if category.lower().startswith("category:") else category
            parts.append((f"category {name.replace('_', ' ').strip()}", normalise(name)))
        return cls(tuple((where, text) for where, text in parts if text))

    def find(self, names: Iterable[str]) -> Optional[Tuple[str, str]]:
        """(name, where) of the first name that appears as whole words, or None."""
        for name in names:
            wanted = normalise(name)
            if len(wanted.replace(" ", "")) < MIN_NAME_CHARS:
                continue
            for where, text in self.parts:
                if f" {wanted} " in f" {text} ":
                    return name, where
        return None


@dataclass(frozen=True)
class Verdict:
    """What the safety rules say about one item.

    :param rule: the rule that applies (:data:`RULES`), "" when none does.
    :param withheld: True when the item must not be suggested.
    :param reason: why, in words (for dropped items and notes).
    """

    rule: str = ""
    withheld: bool = False
    reason: str = ""


ALLOWED = Verdict()


def clean_file_name(title: str) -> str:
    """``File:Barack_Obama_in_2012.jpg`` → ``Barack Obama in 2012``."""
    name = title.split(":", 1)[1] if title.lower().startswith(("file:", "image:")) else title
    name = _EXTENSION.sub("", name.rsplit("/", 1)[-1])
    return " ".join(name.replace("_", " ").split())


def normalise(text: str) -> str:
    """Lower case, accents dropped, anything but letters and digits as one space.

    "Pablo_Picasso's" and "pablo picasso s" compare equal; "Frida Kahlo" matches "FRIDA
    KAHLO" and "Kahló" matches "Kahlo" (a file name typed without the accent still names her).
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _NOT_WORD.sub(" ", stripped).strip()


def instance_classes(labels: LabelSetView, qid: str) -> Optional[Sequence[str]]:
    """The item's P31 targets, or None when the label set has no instance-of data."""
    lookup: Optional[Callable[[str], Optional[Sequence[str]]]] = getattr(labels, "instance_of", None)
    return lookup(qid) if lookup is not None else None


def names_of(labels: LabelSetView, qid: str) -> Tuple[str, ...]:
    """The item's label and aliases (aliases only when the set stored them)."""
    position = labels.index_of(qid)
    label = labels.labels[position] if position is not None else ""
    lookup: Optional[Callable[[str], Sequence[str]]] = getattr(labels, "aliases_of", None)
    aliases = tuple(lookup(qid)) if lookup is not None else ()
    return tuple(n for n in (label, *aliases) if n)


def coverage_note(labels: Any) -> str:
    """A note when the label set cannot tell instances from subclasses ("" when it can)."""
    if getattr(labels, "has_instance_of", False):
        return ""
    return ("the label set stores no instance-of (P31) data (built before it was added): people are "
            "recognised through the P31/P279 closure, so subclasses of human are withheld too; "
            "rebuild the set to tell them apart")


def _under(labels: LabelSetView, qid: str, classes: FrozenSet[str], max_hops: int,
           ancestors: Optional[Mapping[str, int]] = None) -> Optional[Tuple[str, int]]:
    """(class, hops) of the nearest listed class above ``qid`` within ``max_hops``.

    :param ancestors: ``labels.ancestors(qid, max_hops)`` when the caller has it already.
    """
    if not classes:
        return None
    if ancestors is None:
        ancestors = labels.ancestors(qid, max_hops)
    found = [(hops, cls) for cls, hops in ancestors.items() if cls in classes]
    if not found:
        return None
    hops, cls = min(found)
    return cls, hops


def _instance_of(labels: LabelSetView, qid: str, classes: FrozenSet[str], max_hops: int) -> Optional[str]:
    """The listed class ``qid`` is an instance of (P31 to it or to one of its subclasses)."""
    if not classes or qid in classes:
        return None
    direct = instance_classes(labels, qid)
    if direct is None:
        found = _under(labels, qid, classes, max_hops)
        return found[0] if found else None
    for target in direct:
        if target in classes:
            return target
        found = _under(labels, target, classes, max(max_hops - 1, 0))
        if found:
            return found[0]
    return None


def _label(labels: LabelSetView, qid: str) -> str:
    position = labels.index_of(qid)
    name = labels.labels[position] if position is not None else ""
    if not name:
        lookup: Optional[Callable[[str], str]] = getattr(labels, "label_of", None)
        name = lookup(qid) if lookup is not None else ""
    return f"{qid} ({name})" if name else qid


def check_item(labels: LabelSetView, qid: str, text: FileText, rules: SafetyRules) -> Verdict:
    """The safety verdict for one candidate item of one file.

    :param labels: label set with labels, aliases (when stored), P31 and the closure.
    :param qid: the candidate.
    :param text: the file's own text (:meth:`FileText.of`).
    :param rules: which rules apply.
    :returns: :data:`ALLOWED`; or a withheld verdict with its rule and reason; or, for a
        person or sensitive item the text names, ``withheld=False`` with the rule and the
        :data:`NAMED` note as reason.
    """
    hops = max(1, min(rules.max_hops, 3))
    # One closure lookup serves the blocked and the sensitive classes.
    ancestors = labels.ancestors(qid, hops) if (rules.blocked_classes or rules.sensitive_classes) else {}
    if rules.blocked_classes:
        if qid in rules.blocked_classes:
            return Verdict(BLOCKED_CLASS, True, f"{BLOCKED_CLASS}: {_label(labels, qid)} is on safety.blocked_classes")
        found = _under(labels, qid, rules.blocked_classes, hops, ancestors)
        if found:
            return Verdict(BLOCKED_CLASS, True,
                           f"{BLOCKED_CLASS}: under {_label(labels, found[0])} ({found[1]} hop{'s' * (found[1] > 1)})")
    rule, why = "", ""
    if rules.withhold_people:
        person_class = _instance_of(labels, qid, rules.person_classes, hops)
        if person_class:
            rule, why = PEOPLE, f"instance of {_label(labels, person_class)}"
    if not rule and rules.sensitive_classes:
        found = _under(labels, qid, rules.sensitive_classes, hops, ancestors)
        if found:
            rule, why = SENSITIVE, f"under {_label(labels, found[0])} ({found[1]} hop{'s' * (found[1] > 1)})"
    if not rule:
        return ALLOWED
    named = text.find(names_of(labels, qid))
    if named is None:
        return Verdict(rule, True, f"{rule}: {why}, not named in the file's text")
    name, where = named
    return Verdict(rule, False, f"{NAMED}: {name!r} in the {where} ({rule}, {why})")


def rules_from(settings: Any) -> SafetyRules:
    """:class:`SafetyRules` from ``Settings.safety`` (read by attribute: core does not import
    the settings module)."""
    return SafetyRules(
        withhold_people=bool(settings.withhold_people),
        person_classes=frozenset(settings.person_classes),
        sensitive_classes=frozenset(settings.sensitive_classes),
        blocked_classes=frozenset(settings.blocked_classes),
    )


def describe_rules(rules: SafetyRules) -> str:
    """One line for ``status`` and ``suggest``: which rules are on."""
    people = ("named people withheld unless the file's text names them" if rules.withhold_people
              else "named people NOT withheld (safety.withhold_people = false)")
    return (f"{people}; {len(rules.sensitive_classes)} sensitive classes; "
            f"{len(rules.blocked_classes)} blocked classes")
