"""Score calibration on held-out files, the thresholds file, and `--calibrated` filtering.

The score distributions are constructed so the thresholds can be found by hand (the
example of ``core.calibration`` on the calibration files).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from click.testing import CliRunner

from tests.db_support import open_store
from tests.liveeval_support import files_in, result, write_jsonl
from tests.review_support import CAT, DOG, HUMAN, PARK, TABBY, add_file
from wikivel_bot.cli import main
from wikivel_bot.core.ranking import Ranking
from wikivel_bot.core.review_rules import ReviewCandidate, ReviewFile
from wikivel_bot.errors import UsageError
from wikivel_bot.linker.link import Linked, LinkFailed
from wikivel_bot.liveeval.apply import filter_outcomes, filter_review_files, review_threshold
from wikivel_bot.liveeval.calibrate import CALIBRATE, HELD_OUT, calibrate_results, split_of
from wikivel_bot.liveeval.thresholds import CalibratedFilter, load_thresholds, parse_thresholds, thresholds_document
from wikivel_bot.queue import migrate
from wikivel_bot.types import Candidate, CandidateState, MediaFile


def constructed():
    """Calibration files: animal .9 .8 .7 .6 .5 .4 (correct 1 1 1 0 1 0), human .35 .30 .25 .20
    (1 1 0 0). Held-out files: animal .95 .75 .72 .65 .3 (1 1 0 1 0), human .32 .28 (1 0)."""
    c1, c2, c3 = files_in(CALIBRATE, 3)
    h1, h2 = files_in(HELD_OUT, 2)
    return [
        result(c1, [(0.9, 0, "animal"), (0.8, 0, "animal"), (0.7, 0, "animal")]),
        result(c2, [(0.6, None, "animal"), (0.5, 0, "animal"), (0.4, None, "animal")]),
        result(c3, [(0.35, 0, "human"), (0.30, 0, "human"), (0.25, None, "human"), (0.20, None, "human")]),
        result(h1, [(0.95, 0, "animal"), (0.75, 0, "animal"), (0.72, None, "animal"), (0.32, 0, "human")]),
        result(h2, [(0.65, 0, "animal"), (0.3, None, "animal"), (0.28, None, "human")]),
    ]


def test_the_split_is_deterministic_and_about_even() -> None:
    names = [f"M{n}" for n in range(1, 2001)]
    held = [n for n in names if split_of(n) == HELD_OUT]
    assert 850 < len(held) < 1150
    assert [split_of(n) for n in reversed(names)] == [split_of(n) for n in names][::-1]
    assert sum(split_of(n, 0.2) == HELD_OUT for n in names) < len(held)


def test_threshold_reaches_the_target_on_calibration_files_and_is_checked_on_held_out() -> None:
    document = calibrate_results(constructed(), target=0.9, min_support=1)
    entry = document["linkers"]["zero-shot"]
    assert entry["files"] == {"calibrate": 3, "held_out": 2}
    # .9 .8 .7 all correct; .6 brings 3/4: the lowest threshold reaching 0.9 is 0.7.
    assert entry["threshold"] == 0.7
    assert entry["calibration"]["precision"] == 1.0 and entry["calibration"]["accepted"] == 3
    held = entry["held_out"]
    # Held out, >= 0.7 accepts .95 .75 .72: 2 of 3 correct; 4 correct of 7 in all.
    assert (held["accepted"], held["correct"], held["total"], held["total_correct"]) == (3, 2, 7, 4)
    assert held["precision"] == pytest.approx(2 / 3) and held["reached"] is False
    assert calibrate_results(constructed(), target=0.8, min_support=1)["linkers"]["zero-shot"]["threshold"] == 0.5


def test_per_category_thresholds_and_their_combined_held_out_precision() -> None:
    entry = calibrate_results(constructed(), target=0.9, min_support=1, by_category=True)["linkers"]["zero-shot"]
    animal, human = entry["categories"]["animal"], entry["categories"]["human"]
    assert animal["threshold"] == 0.7 and human["threshold"] == 0.30
    assert (human["held_out"]["accepted"], human["held_out"]["correct"]) == (1, 1)
    combined = entry["held_out_combined"]
    # animal >= .7 accepts .95 .75 .72 (2 correct), human >= .30 accepts .32 (correct).
    assert (combined["accepted"], combined["correct"], combined["total"]) == (4, 3, 7)
    assert combined["precision"] == pytest.approx(0.75) and combined["recall"] == pytest.approx(0.75)


def test_min_support_keeps_one_lucky_score_from_setting_the_threshold() -> None:
    c1, = files_in(CALIBRATE, 1)
    results = [result(c1, [(0.9, 0, "a"), (0.8, None, "a"), (0.7, 0, "a")])]
    assert calibrate_results(results, target=1.0, min_support=1)["linkers"]["zero-shot"]["threshold"] == 0.9
    entry = calibrate_results(results, target=1.0, min_support=2)["linkers"]["zero-shot"]
    assert entry["threshold"] is None and entry["calibration"]["reached"] is False
    assert entry["held_out"]["accepted"] == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"target": 0.0}, "--target"), ({"holdout": 1.0}, "--holdout"), ({"hops": 4}, "--hops"),
    ({"min_support": 0}, "--min-support"),
])
def test_bad_calibration_options(kwargs: Dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        calibrate_results(constructed(), **kwargs)


def thresholds_file(path: Path, threshold: Optional[float], categories: Optional[Dict[str, Optional[float]]] = None,
                    linker: str = "zero-shot") -> Path:
    entry: Dict[str, Any] = {"threshold": threshold}
    if categories:
        entry["categories"] = {name: {"threshold": value} for name, value in categories.items()}
    document = thresholds_document({linker: entry}, target=0.9, hops=0, holdout=0.5, min_support=10,
                                   by_category=bool(categories), results=["r.jsonl"])
    path.write_text(json.dumps(document))
    return path


def test_filter_uses_the_category_threshold_else_the_linker_one(tmp_path: Path) -> None:
    thresholds = load_thresholds(thresholds_file(tmp_path / "t.json", 0.5, {"animal": 0.8, "human": None}))
    categories = {"Q146": "animal", "Q5": "human", "Q22698": "settlement"}
    flt = CalibratedFilter(thresholds, categories.get)
    assert flt.keep("zero-shot", "Q146", 0.8) and not flt.keep("zero-shot", "Q146", 0.79)
    assert not flt.keep("zero-shot", "Q5", 0.99)  # the target was not reached for humans
    assert flt.keep("zero-shot", "Q22698", 0.5)  # no category threshold: the linker's
    assert not flt.keep("naive-mlp", "Q146", 0.99)  # never calibrated: left out
    assert flt.keep("naive-mlp", "Q146", None)  # added by a reviewer: nothing to calibrate
    assert (flt.kept, flt.removed, flt.uncalibrated) == (3, 3, {"naive-mlp": 1})
    assert "no threshold for linker(s) naive-mlp (1)" in flt.summary()


def test_thresholds_files_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a thresholds file"):
        parse_thresholds({"linkers": {}}, "x.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(thresholds_file(tmp_path / "t.json", 0.5).read_text()),
                               "linkers": {"zero-shot": {"threshold": "high"}}}))
    with pytest.raises(UsageError, match="zero-shot: threshold 'high'"):
        load_thresholds(bad)


def test_calibrate_command_writes_the_thresholds(tmp_path: Path) -> None:
    results = write_jsonl(tmp_path / "results.jsonl", constructed())
    out = tmp_path / "thresholds.json"
    run = CliRunner().invoke(main, ["calibrate", str(results), "--target", "0.9", "--min-support", "1",
                                    "--by-category", "--out", str(out)])
    assert run.exit_code == 0, run.output
    document = json.loads(out.read_text())
    assert document["linkers"]["zero-shot"]["threshold"] == 0.7
    assert document["results"] == [str(results)] and document["by_category"] is True
    assert "| zero-shot | (all)" in run.stdout and "0.7000" in run.stdout
    assert "held-out files reach only 0.667" in run.stderr
    assert load_thresholds(out).linkers["zero-shot"].categories == {"animal": 0.7, "human": 0.3}
    bad = CliRunner().invoke(main, ["calibrate", str(results), "--target", "1.5", "--out", str(out)])
    assert bad.exit_code == 2 and "--target must be a precision" in bad.output


def candidate(qid: str, score: float, linker: str = "zero-shot") -> Candidate:
    return Candidate(qid=qid, score=score, rank=1, linker=linker, linker_version="1", labelset_hash="h")


def test_suggest_outcomes_and_review_files_are_filtered(tmp_path: Path) -> None:
    flt = CalibratedFilter(load_thresholds(thresholds_file(tmp_path / "t.json", 0.5)))
    linked = Linked(MediaFile(1, "File:A.jpg"), (candidate("Q146", 0.7), candidate("Q5", 0.4)), Ranking(()))
    failed = LinkFailed(MediaFile(2, "File:B.jpg"), "corrupt")
    kept = filter_outcomes([linked, failed], flt)
    assert [c.qid for c in kept[0].candidates] == ["Q146"] and kept[1] is failed

    def review_file(page_id: int, *scores: float) -> ReviewFile:
        made = tuple(ReviewCandidate(i, f"Q{i + 1}", s, i + 1, "zero-shot", CandidateState.PROPOSED)
                     for i, s in enumerate(scores))
        return ReviewFile(page_id, page_id, f"File:{page_id}.jpg", candidates=made)

    files = list(filter_review_files([review_file(1, 0.6, 0.3), review_file(2, 0.2)], flt))
    assert [(f.page_id, [c.qid for c in f.candidates]) for f in files] == [(1, ["Q1"])]


def test_review_threshold_needs_one_calibrated_linker(tmp_path: Path) -> None:
    one = load_thresholds(thresholds_file(tmp_path / "t.json", 0.5, {"animal": 0.8}))
    assert review_threshold(one, None) == ("zero-shot", 0.5, True)
    with pytest.raises(UsageError, match="no threshold for linker 'fusion'"):
        review_threshold(one, "fusion")
    unreached = load_thresholds(thresholds_file(tmp_path / "u.json", None))
    with pytest.raises(UsageError, match="did not reach the target"):
        review_threshold(unreached, None)


@pytest.fixture
def queue(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG, HUMAN], title="File:Cat on a sofa.jpg")    # .91 .82 .73
    add_file(store, 2, [TABBY, PARK], title="File:Tabby in a park.jpg")      # .64 .55
    add_file(store, 3, [("Q42", 0.99, "Douglas Adams", "writer")], linker="naive-mlp")
    yield url
    store.close()


def test_export_calibrated_applies_per_category_thresholds(queue: str, tmp_path: Path) -> None:
    # Starter label set: Q146 and Q144 are animals, Q5 human, Q22698 settlement.
    path = thresholds_file(tmp_path / "t.json", 0.8, {"animal": 0.85, "human": 0.7})
    run = CliRunner().invoke(main, ["--db-url", queue, "export", "--calibrated", str(path)])
    assert run.exit_code == 0, run.output
    pairs = [(r["mid"], r["qid"]) for r in csv.DictReader(io.StringIO(run.stdout))]
    assert pairs == [("M1", "Q146"), ("M1", "Q5")]  # dog .82 < .85; M2 < .8; naive-mlp not calibrated
    assert "kept 2, left out 4" in run.stderr
    plain = CliRunner().invoke(main, ["--db-url", queue, "export"])
    assert len(list(csv.DictReader(io.StringIO(plain.stdout)))) == 6


def test_review_calibrated_shows_only_candidates_above_the_threshold(queue: str, tmp_path: Path) -> None:
    path = thresholds_file(tmp_path / "t.json", 0.8)
    run = CliRunner().invoke(main, ["--db-url", queue, "review", "--calibrated", str(path), "--reviewer", "Ann"],
                             input="q\n")
    assert run.exit_code == 0, run.output
    assert "Q146" in run.stdout and "Q144" in run.stdout and "Q5 " not in run.stdout
    assert "zero-shot suggestions scoring at least 0.8000" in run.stderr
    several = tmp_path / "two.json"
    doc = json.loads(path.read_text())
    doc["linkers"]["naive-mlp"] = {"threshold": 0.5}
    several.write_text(json.dumps(doc))
    run = CliRunner().invoke(main, ["--db-url", queue, "review", "--calibrated", str(several), "--reviewer", "Ann"])
    assert run.exit_code == 2 and "choose one with --linker" in run.output


def test_linker_calibrated_setting_is_the_default_thresholds_file(queue: str, tmp_path: Path) -> None:
    path = thresholds_file(tmp_path / "t.json", 0.8, {"animal": 0.85, "human": 0.7})
    run = CliRunner().invoke(main, ["--db-url", queue, "export"], env={"WIKIVEL_LINKER_CALIBRATED": str(path)})
    assert run.exit_code == 0, run.output
    pairs = [(r["mid"], r["qid"]) for r in csv.DictReader(io.StringIO(run.stdout))]
    assert pairs == [("M1", "Q146"), ("M1", "Q5")]


def test_calibrate_on_the_verifier_probability() -> None:
    """Cascade suggestions carry a probability: thresholds can be fitted on it instead of the score.

    Scores are the constructed ones reversed (useless), probabilities carry the order: the
    threshold comes from the probabilities and the filter compares probabilities.
    """
    import dataclasses

    results = constructed()
    with_p = []
    for r in results:
        suggestions = tuple(dataclasses.replace(s, probability=s.score, score=1.0 - s.score) for s in r.suggestions)
        with_p.append(dataclasses.replace(r, suggestions=suggestions))
    document = calibrate_results(with_p, target=0.8, min_support=1, on="probability")
    entry = next(iter(document["linkers"].values()))
    assert entry["on"] == "probability"
    by_score = calibrate_results(results, target=0.8, min_support=1)
    assert entry["threshold"] == next(iter(by_score["linkers"].values()))["threshold"]
    thresholds = parse_thresholds(document)
    name = next(iter(thresholds.linkers))
    assert thresholds.linkers[name].on == "probability"
    flt = CalibratedFilter(thresholds)
    threshold = entry["threshold"]
    assert flt.keep(name, "Q1", 0.0, threshold + 0.01) and not flt.keep(name, "Q1", 0.99, threshold - 0.01)
    assert not flt.keep(name, "Q1", 0.99, None)  # no probability, no pass
    with pytest.raises(UsageError, match="review query cannot filter"):
        review_threshold(thresholds, name)
    with pytest.raises(UsageError, match="carries a probability"):
        calibrate_results(results, target=0.8, on="probability")
    with pytest.raises(UsageError, match="--on must be"):
        calibrate_results(results, target=0.8, on="cosine")
