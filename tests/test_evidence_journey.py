"""A newcomer sees Commons' own evidence on the offline wiki, and ``suggest -v`` says why an
item the evidence named was not suggested.

The bundled uploads of the test wiki carry evidence of their own (``fixture_files``): a
description link to an item outside the starter label set, a linked category, a link to an
item of the set and an identifier template. Linked by ``suggest`` as a newcomer runs it
(starter label set, tiny open_clip model with random weights: the scores are SYNTHETIC and
mean nothing), their suggestions say why; an evidence item the image scores under a threshold
is not dropped without a word: ``-v`` names the evidence, the item, its score and the
threshold — ``linker.min_score`` or a learned checkpoint's operating threshold — in one line.
Items a safety rule covers are counted, never named, unless ``--show-withheld``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

pytest.importorskip("pywikibot")

from tests.commons_support import local_only, pywikibot_dir, wiki  # noqa: E402,F401 - fixtures by name
from wikivel_bot.cli.dropped_evidence import dropped_evidence_lines, why_dropped  # noqa: E402
from wikivel_bot.core.evidence import KIND_CATEGORY, KIND_ID, KIND_LINK, Evidence  # noqa: E402
from wikivel_bot.core.ranking import DroppedItem, Ranking  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# What the bundled uploads' own evidence names (tests/testwiki/fixture_files.py).
BUNDLED = {
    "File:Black cat on sofa.jpg": ("link", "[[w:en:Couch]]", "Q131514"),
    "File:Red bridge over river.jpg": ("category", "Category:Rhine", "Q584"),
    "File:Village church.png": ("link", "[[w:en:Church building]]", "Q16970"),
    "File:Windmill in fields.jpg": ("identifier", "{{Rijksmonument|990010}}", "Q990010"),
}
LINE = re.compile(r"^    (?P<sources>.+) → (?P<qid>Q\d+)(?: \((?P<label>[^)]*)\))?: score (?P<score>-?\d+\.\d{4}) "
                  r"below the image threshold linker\.min_score (?P<threshold>-?\d+\.\d{4})$")


def people() -> set:
    """Every item of the test wiki that is a human (P31 Q5)."""
    found = set()
    for line in (ROOT / "tests" / "testwiki" / "fixtures" / "items.jsonl").read_text(encoding="utf-8").splitlines():
        entity = json.loads(line)
        p31 = [c["mainsnak"].get("datavalue", {}).get("value", {}).get("id")
               for c in entity.get("claims", {}).get("P31", [])]
        if "Q5" in p31:
            found.add(entity["id"])
    return found


# --- the lines themselves (no model, no wiki) -------------------------------------------


def outcome(dropped: List[DroppedItem], evidence: List[Evidence], kept: List[str] = ()) -> Any:
    candidates = tuple(SimpleNamespace(qid=q) for q in kept)
    withheld = tuple(d for d in dropped if d.rule)
    return SimpleNamespace(candidates=candidates, ranking=Ranking((), tuple(dropped), withheld),
                           evidence=tuple(evidence))


def ready(min_score: float = 0.0, operating: Any = None, checkpoint: str = "") -> Any:
    return SimpleNamespace(rules=SimpleNamespace(min_score=min_score), operating_threshold=operating,
                           operating_checkpoint=checkpoint)


def test_each_dropped_evidence_item_gets_its_threshold_and_score() -> None:
    couch = Evidence(KIND_LINK, "[[w:en:Couch]]", "Q131514")
    rhine = Evidence(KIND_CATEGORY, "Category:Rhine", "Q584")
    rhine_id = Evidence(KIND_ID, "{{Rijksmonument|990010}}", "Q584")
    lines = dropped_evidence_lines(
        outcome([DroppedItem("Q131514", -0.1719, "score -0.172 below the threshold 0.000"),
                 DroppedItem("Q584", 0.1857, "ancestor of Q5 (x), which is more specific"),
                 DroppedItem("Q668", 0.01, "score 0.010 below the threshold 0.000")],  # image only: not here
                [couch, rhine, rhine_id]),
        ready(0.0), 0.0, label_set=None)
    assert lines == [
        "  evidence not suggested:",
        "    [[w:en:Couch]] → Q131514: score -0.1719 below the image threshold linker.min_score 0.0000",
        "    Category:Rhine; {{Rijksmonument|990010}} → Q584: ancestor of Q5 (x), which is more specific "
        "(score 0.1857)",
    ]
    # A suggested evidence item, or a file without evidence: nothing to say.
    assert dropped_evidence_lines(outcome([], [couch], kept=["Q131514"]), ready(), 0.0, None) == []
    assert dropped_evidence_lines(outcome([DroppedItem("Q668", -1.0, "x")], []), ready(), 0.0, None) == []


def test_a_learned_operating_threshold_is_named_as_the_one_that_dropped_it() -> None:
    item = DroppedItem("Q131514", 0.2, "score 0.200 below the threshold 0.450")
    said = why_dropped(item, ready(0.45, operating=0.45, checkpoint="models/heads-7"), 0.0)
    assert said == ("score 0.2000 below the operating threshold 0.4500 of the learned checkpoint models/heads-7 "
                    "(it replaces linker.min_score 0.0000)")
    own = DroppedItem("Q131514", 0.2, "score 0.200 below the item's threshold 0.300")
    assert why_dropped(own, ready(), 0.0) == "score 0.2000 below the item's own threshold 0.300"


def test_an_evidence_item_a_safety_rule_covers_is_counted_never_named_without_show_withheld() -> None:
    person = Evidence(KIND_CATEGORY, "Category:Bob Photographer", "Q990003")
    gone = outcome([DroppedItem("Q990003", -0.3, "score -0.300 below the threshold 0.000; named person",
                                "named_people")], [person])
    lines = dropped_evidence_lines(gone, ready(), 0.0, None)
    assert lines == ["  evidence not suggested:",
                     "    and 1 more that a safety rule covers (--show-withheld names them)"]
    assert not any("Q990003" in line or "Bob" in line for line in lines)
    shown = dropped_evidence_lines(gone, ready(), 0.0, None, show_withheld=True)
    assert shown[1] == ("    Category:Bob Photographer → Q990003: score -0.3000 below the image threshold "
                        "linker.min_score 0.0000; named person")
    # An item the evidence named that could not be scored at all is counted too.
    lost = outcome([], [Evidence(KIND_LINK, "[[w:en:Gone]]", "Q999999999")])
    assert dropped_evidence_lines(lost, ready(), 0.0, None)[1].startswith("    and 1 more that could not be scored")


# --- against the offline wiki, as a newcomer runs it ------------------------------------

@pytest.fixture(scope="module")
def config(tmp_path_factory, wiki) -> Path:  # noqa: F811
    """The newcomer's settings on the test wiki: starter set, random weights, the default
    threshold (linker.min_score = 0); the tiny model stands in for the default one."""
    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    from tests.commons_support import CONTACT
    from tests.linker_support import tiny_model_file

    root = tmp_path_factory.mktemp("evidence-journey")
    path = root / "wikivel.toml"
    path.write_text(
        f'[site]\napi_url = "{wiki.api_url}"\noperator_contact = "{CONTACT}"\nlanguages = ["en"]\n\n'
        f'[linker]\nmodel = "{tiny_model_file()}"\nweights = "random"\ndevice = "cpu"\nprecision = "fp32"\n'
        f'cache_dir = "{root / "cache"}"\n', encoding="utf-8")
    return path


def suggest(config: Path, *args: str, env: Dict[str, str] = None) -> Any:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    result = CliRunner().invoke(main, ["--config", str(config), "suggest", *args], env=env or {},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def test_the_bundled_uploads_say_why_and_v_says_what_a_threshold_dropped(config, local_only,  # noqa: F811
                                                                          pywikibot_dir):  # noqa: F811
    titles = list(BUNDLED)
    # With every score kept (the README's WIKIVEL_LINKER_MIN_SCORE=-1), every evidence item
    # is a suggestion that says why, in its own kind.
    kept = json.loads(suggest(config, *titles, "--json", env={"WIKIVEL_LINKER_MIN_SCORE": "-1"}).stdout)
    for entry in kept["files"]:
        kind, source, qid = BUNDLED[entry["title"]]
        found = {c["qid"]: c for c in entry["candidates"]}
        assert qid in found, (entry["title"], sorted(found))
        assert found[qid]["evidence_kind"] == kind
        assert found[qid]["why"].startswith(f"{source} → {qid}")
        others = [c for c in entry["candidates"] if c["qid"] != qid]
        assert others and all(c["why"] == "image only" for c in others)

    # The default threshold: what it dropped is in --json's drops, and -v says it in words,
    # one line per evidence item, with the same score and the threshold that did it.
    doc = json.loads(suggest(config, *titles, "--json").stdout)
    drops = {(entry["title"], d["qid"]): d for entry in doc["files"] for d in entry["dropped"]}
    below = {title: qid for title, (_, _, qid) in BUNDLED.items() if (title, qid) in drops}
    assert "File:Black cat on sofa.jpg" in below, drops  # SYNTHETIC: random weights score the couch below 0
    text = suggest(config, *titles, "-v").stdout
    blocks = {block.splitlines()[0]: block for block in text.split("\n\n") if block.startswith("File:")}
    for title, qid in below.items():
        lines = [m for m in map(LINE.match, blocks[title].splitlines()) if m]
        assert [m["qid"] for m in lines] == [qid], blocks[title]
        assert lines[0]["sources"] == BUNDLED[title][1] and lines[0]["threshold"] == "0.0000"
        assert float(lines[0]["score"]) == pytest.approx(drops[(title, qid)]["score"], abs=6e-5)
        assert float(lines[0]["score"]) < 0
    for title in set(BUNDLED) - set(below):
        assert "evidence not suggested" not in blocks[title]  # its evidence item is a suggestion
    # Without -v the table stays as it was.
    assert "evidence not suggested" not in suggest(config, *titles).stdout


def test_the_readme_shows_the_line_suggest_v_prints(config, local_only, pywikibot_dir):  # noqa: F811
    """The README's example of ``suggest -v`` (after the journey block) is what it prints."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"`WIKIVEL_LINKER_MIN_SCORE=0 \.venv/bin/wikivel-bot suggest (--weights random -v "
                        r"\"(File:[^\"]+)\")`", readme)
    example = re.search(r"\(`(\[\[[^`]+?) -0\.… below the\s+image threshold linker\.min_score 0\.0000`\)", readme)
    assert command and example, "README.md lost the suggest -v example"
    out = suggest(config, "--weights", "random", "-v", command.group(2), env={"WIKIVEL_LINKER_MIN_SCORE": "0"}).stdout
    assert re.search(re.escape(example.group(1)) + r" -0\.\d{4} below the image threshold linker\.min_score 0\.0000",
                     out), out


def test_no_output_names_a_person_the_files_do_not_name(config, local_only, pywikibot_dir):  # noqa: F811
    """Evidence changes nothing for people: over every bundled upload the fetcher can use,
    with every score kept, no suggestion, drop or -v line names a human unless the file's own
    evidence ties it to that very person (none of the bundled uploads does)."""
    from tests.commons_support import fixture_titles

    humans = people()
    assert {"Q76", "Q990003"} <= humans
    titles = fixture_titles()
    env = {"WIKIVEL_LINKER_MIN_SCORE": "-1"}
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    result = CliRunner().invoke(main, ["--config", str(config), "suggest", *titles, "--json"], env=env,
                                catch_exceptions=False)
    doc = json.loads(result.stdout)
    named = {c["qid"] for f in doc["files"] if f["ok"] for c in f["candidates"]}
    named |= {d["qid"] for f in doc["files"] if f["ok"] for d in f["dropped"]}
    tied = {c["qid"] for f in doc["files"] if f["ok"] for c in f["candidates"] if c["sources"]}
    assert not (named & humans) - tied, sorted((named & humans) - tied)
    verbose = CliRunner().invoke(main, ["--config", str(config), "suggest", *titles, "-v"], env=env,
                                 catch_exceptions=False).stdout
    assert not [q for q in humans if re.search(rf"\b{q}\b", verbose)]
