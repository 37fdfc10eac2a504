"""The safety rules through ``link_files`` with a real (tiny, random-weight) open_clip linker.

Random weights make the scores meaningless on purpose: with a top-k larger than the label
set every item reaches the ranking, so only the safety rules can keep people out.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tests.linker_support import image_bytes, tiny_settings  # noqa: E402
from tests.safety_support import LABELS, PEOPLE_QIDS  # noqa: E402
from wikivel_bot.config import SafetySettings, load_settings  # noqa: E402
from wikivel_bot.core.evidence import Evidence  # noqa: E402
from wikivel_bot.core.safety import PEOPLE, SENSITIVE, TIED  # noqa: E402
from wikivel_bot.labels import default_label_set  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.link import Linked, link_files, rules_from_settings  # noqa: E402
from wikivel_bot.types import MediaFile  # noqa: E402


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    found = create_linker("zero-shot", tiny_settings(batch_size=4))
    found.attach(LABELS, str(tmp_path_factory.mktemp("cache")))
    return found


def everything(top_k: int = len(LABELS.qids) + 10):
    """Tiny linker settings under which every scored item reaches the safety rules: random
    cosine scores may be negative (no threshold), and the specific item always wins over its
    ancestor (a person is never dropped as "more specific than human")."""
    return tiny_settings(top_k=top_k, min_score=-2.0, ancestor_margin=3.0)


def files():
    return [
        (MediaFile(page_id=1, title="File:DSC 0001.jpg", description="Walking in the park"), image_bytes(seed=1)),
        (MediaFile(page_id=2, title="File:DSC 0002.jpg", description="Barack Obama giving a speech"),
         image_bytes(color=(20, 40, 200), seed=2)),
        (MediaFile(page_id=3, title="File:Van Gogh self-portrait.jpg", categories=("Christianity",)),
         image_bytes(color=(20, 200, 40), seed=3)),
    ]


# What the resolver found for files 2 and 3 (file 1 has none): a category linked to Obama; the
# religion's category and a description link to the painter. File 2's description naming
# Obama and file 3's name naming Van Gogh are not evidence by themselves.
EVIDENCE = {
    2: (Evidence("category", "Category:Barack Obama", "Q76"),),
    3: (Evidence("category", "Category:Christianity", "Q5043"),
        Evidence("link", "[[w:en:Vincent van Gogh]]", "Q5582")),
}


def test_no_person_unless_evidence_ties_the_file_to_them_with_random_weights(linker):
    rules = rules_from_settings(everything())
    assert rules.safety is not None and rules.safety.withhold_people  # the defaults are safe
    outcomes = link_files(linker, files(), rules=rules, evidence=EVIDENCE)
    assert all(isinstance(o, Linked) for o in outcomes)
    plain, obama, gogh = [{c.qid: c for c in o.candidates} for o in outcomes]
    assert not PEOPLE_QIDS & set(plain)
    assert PEOPLE_QIDS & set(obama) == {"Q76"}
    assert obama["Q76"].evidence["tied_by_evidence"].startswith(f"{TIED}: Category:Barack Obama → Q76")
    assert obama["Q76"].evidence["evidence_kind"] == "category"
    assert PEOPLE_QIDS & set(gogh) == {"Q5582"}
    assert "[[w:en:Vincent van Gogh]] → Q5582" in gogh["Q5582"].evidence["tied_by_evidence"]
    # The same text without the evidence: the description and the file name name nobody.
    bare = link_files(linker, files(), rules=rules)
    assert not PEOPLE_QIDS & {c.qid for o in bare for c in o.candidates}
    # The category ties the file to the religion, so Christianity is not withheld there (and,
    # named by evidence, is kept whatever it scores); Catholicism is withheld everywhere.
    held = [{w.qid for w in o.ranking.withheld} for o in outcomes]
    assert "Q5043" in held[0] and "Q5043" not in held[2] and "Q1841" in held[0] and "Q1841" in held[2]
    assert "Q5043" in gogh
    withheld = {w.qid: w.rule for w in outcomes[0].ranking.withheld}
    assert {q: withheld[q] for q in PEOPLE_QIDS} == {q: PEOPLE for q in PEOPLE_QIDS}
    assert withheld["Q190168"] == SENSITIVE
    assert "Q146" in plain and "tied_by_evidence" not in plain["Q146"].evidence
    assert plain["Q146"].evidence["evidence_kind"] == "image only" and plain["Q146"].evidence["sources"] == []


def test_switching_the_rule_off_lets_people_through(linker):
    rules = rules_from_settings(everything(), safety=SafetySettings(withhold_people=False))
    (outcome,) = link_files(linker, files()[:1], rules=rules)
    assert PEOPLE_QIDS <= {c.qid for c in outcome.candidates}


def test_starter_set_people_stay_withheld_with_the_daemons_default_settings(tmp_path):
    """What `make run` does: default settings (no wikivel.toml), the starter label set."""
    settings = load_settings(env={})
    starter = default_label_set(settings.linker.labels_dir)
    people = [q for q in starter.qids if starter.instance_of(q) == ["Q5"]]
    assert len(people) >= 50  # painters, scientists, presidents... in the starter list
    linker_settings = everything(len(starter.qids) + 10)
    starter_linker = create_linker("zero-shot", linker_settings)
    starter_linker.attach(starter, str(tmp_path / "cache"))
    # The daemon's call: rules from its linker settings and its safety settings.
    rules = rules_from_settings(linker_settings, safety=settings.safety)
    media = [(MediaFile(page_id=i, title=f"File:Upload {i}.jpg"), image_bytes(seed=i)) for i in range(1, 4)]
    for outcome in link_files(starter_linker, media, rules=rules):
        suggested = {c.qid for c in outcome.candidates}
        assert not suggested & set(people)
        assert {"Q5", "Q467", "Q8441", "Q7569"} & suggested  # human and its subclasses are not people
        assert {w.qid for w in outcome.ranking.withheld} == set(people)
