"""Suggestion safety: which items the bot withholds, and when the file's own evidence allows them.

Pure rules over a :class:`~wikivel_bot.core.labelset.LabelSetView` (stdlib only), applied by
:func:`wikivel_bot.core.ranking.rank_candidates` before the hierarchy step, so a withheld
person never suppresses its ancestor ``human`` either. Three rules, each with a name that
outputs and counters group by:

* **named person** (:data:`PEOPLE`): an item that is an *instance* of human (Q5), or of a
  class the operator lists, is never suggested from the image alone: a visual linker that
  says *which* person a photo shows is both its least precise guess (look-alikes) and a
  personality-rights risk (Commons:Photographs of identifiable people). It is suggested
  only when the file's own **evidence ties the file to that item**
  (:func:`wikivel_bot.core.evidence.ties_file_to`): a category of the file linked to the
  item, a link in the description to it, or an identifier template naming it — and then
  carries the note :data:`TIED` with the evidence. A word of its label or alias somewhere in
  the file name, description or categories is *not* enough: "Harbor seal on the rocks" does
  not name Seal the singer, "Madonna and Child" not Madonna, "Michelle Obama in 2013" not
  Barack Obama, and "Category:Photographs by Barack Obama" names him only as the
  photographer (its category item's main topic is not the file's subject). A category that
  merely shares the item's name (evidence kind ``category label``) is not enough either.
  ``human`` itself and its subclasses (woman, child) are classes, not people, and stay
  suggestible.
* **sensitive class** (:data:`SENSITIVE`): items under a listed class (ethnic groups,
  religions, sexual orientations, medical conditions, ... see
  :data:`DEFAULT_SENSITIVE_CLASSES`) anywhere in the P31/P279 closure, subclasses
  included, are withheld the same way (tied to the file by evidence: allowed). The class
  item itself stays suggestible, like ``human``; block it by QID if it should not be.
* **blocked class** (:data:`BLOCKED_CLASS`): the class and everything under it, never
  suggested, whatever the evidence (the by-class counterpart of the item blocklist).

"Under" has no hop ceiling: a disease five P279 hops below *disease* is as sensitive as one
directly below it. A label set answers it from its whole P31/P279 graph
(``nearest_class``: computed once per group of classes, a set of items per group, not an
all-pairs table); any other view is walked up to the top (``walk_up``, a visited set
against Wikidata's cycles), and a view of items fetched from Wikidata bounds the items it
fetches (:class:`~wikivel_bot.core.classes.SafetyUnchecked` when it would need more: the
item is then withheld). The walk is :mod:`wikivel_bot.core.classes`.

"Instance of" needs the P31 targets of the item, which label sets built since the
instance-of data was added store (``instance_of``). For an older set the rule falls back to
the closure — any item with the class among its ancestors counts — which withholds the
subclasses of human too; :func:`coverage_note` says so in every output. An item **without
any P31** statement that has a property only people have (:data:`PERSON_PROPERTIES`: sex
or gender, date of birth, date of death, occupation) counts as a person too: new items of
people often lack their P31 for a while (``person_properties``; unknown for label sets
built before it was stored).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, Mapping, Optional, Protocol, Sequence, Tuple

from wikivel_bot.core.classes import SafetyUnchecked, nearest_listed
from wikivel_bot.core.evidence import KIND_CATEGORY_LABEL, TYING_KINDS, EvidenceLike, evidence_for, ties_file_to

# Rule names (what counters and outputs group withheld suggestions by).
PEOPLE = "named person"
SENSITIVE = "sensitive class"
BLOCKED_CLASS = "blocked class"
RULES: Tuple[str, ...] = (PEOPLE, SENSITIVE, BLOCKED_CLASS)
# Not a ranking rule: an item the rules could not check (its classes could not all be read)
# is withheld by the writer under this name rather than written unchecked.
UNCHECKED = "unchecked"
# The note a person or sensitive item carries when the file's evidence allows it.
TIED = "tied to the file by its evidence"

HUMAN = "Q5"

# Properties only people have on Wikidata: sex or gender, date of birth, date of death,
# occupation. An item without P31 that has one of them is a person (the bit order of the
# label set's ``person_properties`` array follows this tuple).
PERSON_PROPERTIES: Tuple[str, ...] = ("P21", "P569", "P570", "P106")
PERSON_PROPERTY_NAMES: Mapping[str, str] = {
    "P21": "sex or gender", "P569": "date of birth", "P570": "date of death", "P106": "occupation",
}

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

@dataclass(frozen=True)
class SafetyRules:
    """The knobs of the safety rules (built from ``Settings.safety`` by the linker).

    :param withhold_people: the named-person rule; False only with the community's consent.
    :param person_classes: instances of these classes are people (default: human, Q5).
    :param sensitive_classes: items under these classes are withheld unless the file's
        evidence ties the file to them.
    :param blocked_classes: these classes and everything under them are never suggested.

    "Under" reaches the whole P31 ∪ P279 closure: there is no hop ceiling.
    """

    withhold_people: bool = True
    person_classes: FrozenSet[str] = frozenset({HUMAN})
    sensitive_classes: FrozenSet[str] = frozenset(DEFAULT_SENSITIVE_CLASSES)
    blocked_classes: FrozenSet[str] = frozenset()

    def off_notes(self) -> Tuple[str, ...]:
        """What is switched off, in words (``suggest`` and ``status`` print these)."""
        notes = []
        if not self.withhold_people:
            notes.append("safety.withhold_people = false: named people are suggested from the image alone")
        if not self.sensitive_classes:
            notes.append("safety.sensitive_classes is empty: no sensitive classes are withheld")
        return tuple(notes)


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

# One item checked against one file's evidence (the ``sources`` a candidate row stores): what
# the review pages and the writer ask of the current rules (:func:`item_check` builds one).
ItemCheck = Callable[[str, Sequence[EvidenceLike]], Verdict]


class SafetyView(Protocol):
    """What :func:`check_item` needs of the items it checks (a label set has it all).

    Optional, asked for with ``getattr``: ``nearest_class(qid, classes)`` (the nearest of
    ``classes`` above ``qid`` and its hops, over the whole closure), ``instance_of(qid)``
    (P31 targets, None when unknown), ``person_properties(qid)`` (the person-only properties
    of an item without P31, None when unknown), ``aliases_of(qid)`` and ``label_of(qid)``.
    Without ``nearest_class`` the closure is walked with ``ancestors(qid, 1)``.
    """

    @property
    def labels(self) -> Sequence[str]: ...

    def index_of(self, qid: str) -> Optional[int]: ...

    def ancestors(self, qid: str, max_hops: int = 3) -> Mapping[str, int]: ...


def person_properties(labels: Any, qid: str) -> Optional[Sequence[str]]:
    """The person-only properties (:data:`PERSON_PROPERTIES`) of an item without P31; ()
    for an item with P31 or none of them; None when the view does not know."""
    lookup: Optional[Callable[[str], Optional[Sequence[str]]]] = getattr(labels, "person_properties", None)
    return lookup(qid) if lookup is not None else None


def instance_classes(labels: Any, qid: str) -> Optional[Sequence[str]]:
    """The item's P31 targets, or None when the label set has no instance-of data."""
    lookup: Optional[Callable[[str], Optional[Sequence[str]]]] = getattr(labels, "instance_of", None)
    return lookup(qid) if lookup is not None else None


def coverage_note(labels: Any) -> str:
    """A note when the label set cannot tell instances from subclasses ("" when it can)."""
    if getattr(labels, "has_instance_of", False):
        return ""
    return ("the label set stores no instance-of (P31) data (built before it was added): people are "
            "recognised through the P31/P279 closure, so subclasses of human are withheld too; "
            "rebuild the set to tell them apart")


def _under(labels: SafetyView, qid: str, classes: FrozenSet[str]) -> Optional[Tuple[str, int]]:
    """(class, hops) of the nearest listed class above ``qid``, the whole closure counting."""
    return nearest_listed(labels, qid, classes) if classes else None


def _instance_of(labels: SafetyView, qid: str, classes: FrozenSet[str]) -> Optional[str]:
    """The listed class ``qid`` is an instance of (P31 to it or to one of its subclasses)."""
    if not classes or qid in classes:
        return None
    direct = instance_classes(labels, qid)
    if direct is None:
        found = _under(labels, qid, classes)
        return found[0] if found else None
    for target in direct:
        if target in classes:
            return target
        found = _under(labels, target, classes)
        if found:
            return found[0]
    return None


def _person_by_properties(labels: SafetyView, qid: str) -> str:
    """Why an item without P31 is a person by its properties ("" when it is not, or unknown)."""
    found = person_properties(labels, qid)
    if not found:
        return ""
    named = ", ".join(f"{pid} ({PERSON_PROPERTY_NAMES.get(pid, pid)})" for pid in found)
    return f"no instance-of (P31) statement, but {named}, which only people have"


def _label(labels: SafetyView, qid: str) -> str:
    position = labels.index_of(qid)
    name = labels.labels[position] if position is not None else ""
    if not name:
        lookup: Optional[Callable[[str], str]] = getattr(labels, "label_of", None)
        name = lookup(qid) if lookup is not None else ""
    return f"{qid} ({name})" if name else qid


def _hops(n: int) -> str:
    return f"{n} hop{'s' * (n > 1)}"


def check_item(labels: SafetyView, qid: str, evidence: Iterable[EvidenceLike], rules: SafetyRules) -> Verdict:
    """The safety verdict for one candidate item of one file.

    :param labels: label set (or another :class:`SafetyView`) with labels, P31 and the
        P31/P279 graph.
    :param qid: the candidate.
    :param evidence: the file's own evidence (:class:`~wikivel_bot.core.evidence.Evidence`
        values or their stored dicts, for any items: only those naming ``qid`` count).
    :param rules: which rules apply.
    :returns: :data:`ALLOWED`; or a withheld verdict with its rule and reason; or, for a
        person or sensitive item the evidence ties the file to
        (:func:`~wikivel_bot.core.evidence.ties_file_to`), ``withheld=False`` with the rule
        and the :data:`TIED` note as reason.
    :raises SafetyUnchecked: the view could not read every class above the item.
    :raises ValueError: a stored evidence dict that does not parse.
    """
    if rules.blocked_classes:
        if qid in rules.blocked_classes:
            return Verdict(BLOCKED_CLASS, True, f"{BLOCKED_CLASS}: {_label(labels, qid)} is on safety.blocked_classes")
        found = _under(labels, qid, rules.blocked_classes)
        if found:
            return Verdict(BLOCKED_CLASS, True, f"{BLOCKED_CLASS}: under {_label(labels, found[0])} ({_hops(found[1])})")
    rule, why = "", ""
    if rules.withhold_people:
        person_class = _instance_of(labels, qid, rules.person_classes)
        if person_class:
            rule, why = PEOPLE, f"instance of {_label(labels, person_class)}"
        else:
            why = _person_by_properties(labels, qid)
            rule = PEOPLE if why else ""
    if not rule and rules.sensitive_classes:
        found = _under(labels, qid, rules.sensitive_classes)
        if found:
            rule, why = SENSITIVE, f"under {_label(labels, found[0])} ({_hops(found[1])})"
    if not rule:
        return ALLOWED
    mine = evidence_for(qid, evidence)
    if not ties_file_to(qid, mine):
        weak = " (a category merely named like it does not count)" if any(
            ev.kind == KIND_CATEGORY_LABEL for ev in mine) else ""
        return Verdict(rule, True, f"{rule}: {why}, and no category, link or identifier of the file names it{weak}")
    tying = next(ev for ev in mine if ev.kind in TYING_KINDS)  # the note names what tied it
    return Verdict(rule, False, f"{TIED}: {tying.describe()} ({rule}, {why})")


def item_check(rules: SafetyRules, labels: Optional[SafetyView] = None,
               outside: Optional[Callable[[str], Optional[SafetyView]]] = None) -> ItemCheck:
    """The current rules as one function ``(qid, evidence) -> Verdict``, for what is
    already queued: the review pages hide, and the writer refuses, what it withholds.

    :param labels: the label set: the items it keeps are checked against it.
    :param outside: a view of an item the label set does not keep (e.g. read from
        Wikidata); None, or a view of None, lets such an item pass (the review pages have
        no Wikidata lookup; the writer, which does, is the last guard).
    :returns: the check; an item whose classes cannot all be read is withheld under
        :data:`UNCHECKED` rather than passed.
    """

    def check(qid: str, evidence: Sequence[EvidenceLike]) -> Verdict:
        view: Optional[SafetyView] = labels if labels is not None and labels.index_of(qid) is not None else None
        try:
            if view is None and outside is not None:
                view = outside(qid)
            return ALLOWED if view is None else check_item(view, qid, evidence, rules)
        except SafetyUnchecked as exc:
            return Verdict(UNCHECKED, True, f"{UNCHECKED}: the safety rules could not check {qid}: {exc}")

    return check


# The rules' names for more than one withheld suggestion ("27 named people", not "27 named person").
RULE_PLURALS: Mapping[str, str] = {
    PEOPLE: "named people", SENSITIVE: "sensitive classes", BLOCKED_CLASS: "blocked classes",
}


def rule_count(n: int, rule: str) -> str:
    """``n`` suggestions withheld by ``rule`` in words: "1 named person", "27 named people"."""
    return f"{n} {rule if n == 1 else RULE_PLURALS.get(rule, rule)}"


def rule_counts(by_rule: Mapping[str, int]) -> str:
    """``{rule: n}`` as one phrase, rules in name order: "27 named people, 1 sensitive class"."""
    return ", ".join(rule_count(n, rule) for rule, n in sorted(by_rule.items()))


def withheld_by_rule(record: Any) -> Dict[str, int]:
    """``{rule: n}`` of a file's withheld record: counts as they are; the per-item list
    (``qid``, ``rule``, ...) that versions before counts-only stored, counted. The one rule
    the store (which writes only counts), the review queries and the counters share."""
    counts: Dict[str, int] = {}
    if isinstance(record, Mapping):
        for rule, n in record.items():
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                counts[str(rule)] = counts.get(str(rule), 0) + n
    elif isinstance(record, (list, tuple)):
        for entry in record:
            rule = str(entry.get("rule", "")) if isinstance(entry, Mapping) else ""
            if rule:
                counts[rule] = counts.get(rule, 0) + 1
    return counts


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
    people = ("named people withheld unless the file's evidence ties it to them" if rules.withhold_people
              else "named people NOT withheld (safety.withhold_people = false)")
    return (f"{people}; {len(rules.sensitive_classes)} sensitive classes; "
            f"{len(rules.blocked_classes)} blocked classes")
