"""Comparison with human depicts and the aggregated numbers, against hand-computed values.

The rankings are constructed (no linker), so every number is exact; the hierarchy is the
worked example of ``core.metrics`` (see tests/liveeval_support.py).
"""

from __future__ import annotations

import json

import pytest

from tests.liveeval_support import RUN, compared, media, worked_example, write_jsonl
from wikivel_bot.errors import UsageError
from wikivel_bot.liveeval.aggregate import score_bands, summarize_run
from wikivel_bot.liveeval.compare import human_items, writer_verdict
from wikivel_bot.liveeval.records import ALREADY, MORE_SPECIFIC, PAGE, FileResult, read_results
from wikivel_bot.types import Depiction, MediaFile


def test_each_suggestion_gets_its_hop_match_and_writer_verdict() -> None:
    a, _ = worked_example()
    got = [(s.rank, s.qid, s.hop, s.match, s.writer, s.category) for s in a.suggestions]
    assert got == [
        (1, "Q5", None, "", "", "human"),
        (2, "Q729", 2, "Q144", MORE_SPECIFIC, "animal"),   # animal: 2 hops above both; Q144 sorts first
        (3, "Q144", 0, "Q144", ALREADY, "animal"),
        (4, "Q7377", 1, "Q144", MORE_SPECIFIC, "animal"),
        (5, "Q146", 0, "Q146", ALREADY, "animal"),
    ]
    assert a.suggestions[1].writer_reason.startswith("a more specific item is already depicted")
    assert a.truth == ("Q144", "Q146") and a.truth_categories == {"Q144": "animal", "Q146": "animal"}
    assert a.truth_labels == {"Q144": "dog", "Q146": "house cat"}
    # First rank standing for each human item at hops 0, 1, 2, 3.
    assert a.found == {"Q144": (3, 3, 2, 2), "Q146": (5, 4, 2, 2)}


def test_hits_per_hop_level_follow_core_metrics() -> None:
    a, _ = worked_example()
    assert a.hits[0] == ((3, 5), (3, 5))
    assert a.hits[1] == ((3, 4, 5), (3, 4))  # mammal takes the cat; the cat itself adds nothing new
    assert a.hits[2] == ((2, 3, 4, 5), (2, 2))  # animal covers both at once
    # Every prediction matching a relevant item counts (§4.4): animal, dog, mammal, cat.
    assert a.hits_at(2).average_precision(5) == pytest.approx((1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 4)


def test_summary_equals_hand_computed_means() -> None:
    a, b = worked_example()
    summary = summarize_run([a, b], ks=(1, 5))
    hop0, hop2 = summary.metrics[0], summary.metrics[2]
    # File A hop 0: P@1 0, P@5 2/5, R@5 1, DivR@5 2/2, AP@5 (1/3 + 2/5)/2. File B: Q5 at rank 1 of 2.
    assert hop0["P@1"] == pytest.approx(0.5)
    assert hop0["P@5"] == pytest.approx((0.4 + 0.5) / 2)
    assert hop0["R@1"] == pytest.approx(0.5) and hop0["R@5"] == pytest.approx(1.0)
    assert hop0["DivR@1"] == pytest.approx(0.5) and hop0["DivR@5"] == pytest.approx(1.0)
    assert hop0["mAP@5"] == pytest.approx(((1 / 3 + 2 / 5) / 2 + 1.0) / 2)
    # Hop credit: animal and mammal count for file A at hops 2.
    assert hop2["P@5"] == pytest.approx((0.8 + 0.5) / 2)
    assert hop2["mAP@5"] == pytest.approx(((1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 4 + 1.0) / 2)
    assert summary.metrics[1]["P@5"] == pytest.approx((0.6 + 0.5) / 2)
    assert summary.curve[0][0] == (1, pytest.approx(0.5), pytest.approx(0.5))
    assert [k for k, _, _ in summary.curve[0]] == [1, 2, 3, 4, 5]
    assert (summary.files, summary.suggestions, summary.human_items) == (2, 7, 3)
    assert summary.uploaded == ("2024-05-01T08:00:00Z", "2024-05-02T09:30:00Z")


def test_writer_rates_bands_and_categories() -> None:
    summary = summarize_run(list(worked_example()), ks=(1, 5), bands=2)
    # A: Q144, Q146 already there, Q729, Q7377 below a depicted item, Q5 new; B: Q5 there, Q146 new.
    assert summary.writer == {ALREADY: 3, MORE_SPECIFIC: 2, PAGE: 0, "would-write": 2}
    assert summary.writer_rate() == pytest.approx(5 / 7)
    # Scores .5 .6 .7 .8 | .85 .9 .95: hops of the low band 0, 1, 0, 2; high band None, None, 0.
    low, high = summary.bands
    assert (low.name, low.suggestions, low.correct) == ("0.500-0.800", 4, (2, 3, 4, 4))
    assert (high.name, high.suggestions, high.correct) == ("0.850-0.950", 3, (1, 1, 1, 1))
    animal, human = summary.categories
    assert (animal.name, animal.suggestions, animal.correct, animal.human, animal.found) == \
        ("animal", 5, (2, 3, 4, 4), 2, (2, 2, 2, 2))
    assert (human.name, human.suggestions, human.correct, human.human, human.found) == \
        ("human", 2, (1, 1, 1, 1), 1, (1, 1, 1, 1))


def test_equal_scores_stay_in_one_band() -> None:
    a = compared(3, [("Q5", 0.3), ("Q146", 0.3), ("Q144", 0.3), ("Q729", 0.1)], ["Q5"])
    bands = score_bands(a.suggestions, 2)
    assert [(b.low, b.high, b.suggestions) for b in bands] == [(0.1, 0.1, 1), (0.3, 0.3, 3)]


def test_human_items_leave_out_deprecated_statements() -> None:
    file = MediaFile(1, "File:Cows.jpg", depicts=(Depiction("Q830"), Depiction("Q726", "deprecated"),
                                                   Depiction("Q830", "preferred")))
    assert human_items(file) == ("Q830",)


def test_a_page_the_bot_may_not_edit_is_its_own_verdict() -> None:
    kind, reason = writer_verdict(media(5, "Q146", bots_allowed=False), "Q146", lambda q: {})
    assert kind == PAGE and "bots" in reason
    assert writer_verdict(media(5, "Q146"), "Q5", lambda q: {}) == ("", "")


def test_results_round_trip_and_bad_lines_are_named(tmp_path) -> None:
    a, b = worked_example()
    path = write_jsonl(tmp_path / "r.jsonl", [a, b])
    back = read_results(path)
    assert [r.file for r in back] == ["M1", "M2"]
    assert back[0].suggestions == a.suggestions and back[0].hits == a.hits and back[0].found == a.found
    assert back[0].run == RUN
    # The line is also a predictions line of the evaluation kit.
    first = json.loads(path.read_text().splitlines()[0])
    assert first["items"] == ["Q5", "Q729", "Q144", "Q7377", "Q146"] and first["scores"][0] == 0.9
    broken = tmp_path / "bad.jsonl"
    broken.write_text(path.read_text() + '{"file": "M3", "items": []}\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:3: missing key 'suggestions'"):
        read_results(broken)
    twice = tmp_path / "twice.jsonl"
    twice.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(UsageError, match=r"twice.jsonl:3: M1 of linker 'zero-shot' already on .*:1"):
        read_results(twice)


def test_empty_truth_is_refused() -> None:
    with pytest.raises(ValueError):
        compared(9, [("Q5", 0.5)], [])
    data = worked_example()[0].to_json()
    data["truth"] = []
    with pytest.raises(UsageError, match="no human items"):
        FileResult.from_json(data, "x:1")
