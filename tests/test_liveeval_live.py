"""`wikivel-bot evaluate-live` end to end: the local test wiki over real pywikibot, the tiny
open_clip model with random weights, the starter label set.

The model's suggestions are meaningless, so the checks are about the machinery: which files
are compared, that their human statements were hidden from the linker, the JSON Lines
structure, and that the numbers equal what ``wikivel-bot evaluate`` computes from the same
lines. The exact metric values are tested on constructed rankings (test_liveeval_compare).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Tuple

import pytest

pytest.importorskip("torch")
pytest.importorskip("pywikibot")

from click.testing import CliRunner  # noqa: E402

from tests.commons_support import CONTACT, local_only, pywikibot_dir, wiki  # noqa: E402,F401
from tests.linker_support import tiny_model_file  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.labels import default_label_set, starter_label_set_path  # noqa: E402
from wikivel_bot.liveeval.records import ALREADY, HOP_LEVELS, read_results  # noqa: E402

# Fixture files uploaded on 2024-05-01 that carry a P180 item statement, at least 200 px and
# of an image type (tests/testwiki/README.md): M10044 has only an "unknown value" statement.
WITH_DEPICTS = ["M10001", "M10002", "M10003", "M10005", "M10006", "M10007", "M10009", "M10011", "M10013",
                "M10032", "M10035", "M10037", "M10038", "M10040", "M10041", "M10042", "M10045"]


@pytest.fixture(scope="module")
def linker_env(tmp_path_factory) -> Dict[str, str]:
    tiny_model_file()
    return {
        "WIKIVEL_LINKER_MODEL": str(tiny_model_file()), "WIKIVEL_LINKER_PRETRAINED": "",
        "WIKIVEL_LINKER_WEIGHTS": "random", "WIKIVEL_LINKER_DEVICE": "cpu",
        "WIKIVEL_LINKER_CACHE_DIR": str(tmp_path_factory.mktemp("cache")), "WIKIVEL_SITE_OPERATOR_CONTACT": CONTACT,
        # Keep every item the model scores: no threshold, and a specific item is never
        # pushed out by an ancestor, so a human item can only be missing if it was not hidden.
        "WIKIVEL_LINKER_MIN_SCORE": "-2", "WIKIVEL_LINKER_ANCESTOR_MARGIN": "100",
    }


@pytest.fixture(scope="module")
def live_run(wiki, local_only, pywikibot_dir, linker_env, tmp_path_factory) -> Tuple[Path, Path, str]:  # noqa: F811
    out = tmp_path_factory.mktemp("live")
    results, truth = out / "results.jsonl", out / "truth.jsonl"
    run = CliRunner().invoke(main, ["--api-url", wiki.api_url, "evaluate-live", "--since", "2024-05-01",
                                    "--until", "2024-05-01", "--top", "400", "--k", "1,5",
                                    "--out", str(results), "--truth-out", str(truth)], env=linker_env)
    assert run.exit_code == 0, run.output
    return results, truth, run.output


def human_statements(server, mid: str) -> Tuple[str, ...]:
    """Non-deprecated P180 item values as the test wiki stores them (not through our code)."""
    statements = server.entity(mid).get("statements", {}).get("P180", [])
    return tuple(sorted(s["mainsnak"]["datavalue"]["value"]["id"] for s in statements
                        if s["rank"] != "deprecated" and s["mainsnak"].get("snaktype") == "value"))


def test_files_with_human_depicts_are_compared(live_run, wiki) -> None:  # noqa: F811
    path, truth_path, output = live_run
    results = read_results(path)
    assert [r.file for r in results] == WITH_DEPICTS
    for result in results:
        assert result.truth == human_statements(wiki, result.file), result.file
    assert {r.file: r.truth for r in results}["M10038"] == ("Q830",)  # the deprecated Q726 is no truth
    truth_lines = [json.loads(x) for x in truth_path.read_text().splitlines()]
    assert truth_lines == [{"file": r.file, "items": list(r.truth)} for r in results]
    assert "compared with human depicts: 17" in output
    assert "without human depicts statements: 21" in output
    assert "| hops | P@1 | P@5 | R@1 | R@5 |" in output
    # Precision by kind of Commons' own evidence, every kind with a row.
    evidence = output.split("precision by evidence kind (%)", 1)[1]
    assert all(f"| {kind} " in evidence for kind in ("image only", "category", "category label", "link",
                                                       "identifier", "several"))


def test_human_statements_were_hidden_from_the_linker(live_run) -> None:
    """With no threshold and specific items always kept, every human item the label set
    keeps (and that is not an ancestor of another kept item) must be suggested; the linker
    would have dropped them as "already depicted" had it seen the statements."""
    labels = default_label_set()
    ancestors = {a for q in labels.qids for a in labels.ancestors(q, 3)}
    # An item the file's own evidence names replaces a more general candidate: the bridge is in
    # Category:Rhine (a river outside the label set), which replaces its "river" (docs/evidence.md).
    replaced = {("M10003", "Q4022"): "Q584"}
    checked = 0
    for result in read_results(live_run[0]):
        by_qid = {s.qid: s for s in result.suggestions}
        for item in result.truth:
            if labels.index_of(item) is None or item in ancestors:
                continue
            if (result.file, item) in replaced:
                assert item not in by_qid and by_qid[replaced[result.file, item]].evidence_kind == "category"
                continue
            assert item in by_qid, f"{result.file}: human item {item} missing from the suggestions"
            assert by_qid[item].hop == 0 and by_qid[item].writer == ALREADY
            checked += 1
    assert checked >= 15


def test_results_lines_have_the_documented_structure(live_run, wiki) -> None:  # noqa: F811
    lines = [json.loads(x) for x in live_run[0].read_text().splitlines()]
    first = lines[0]
    assert list(first)[:3] == ["file", "items", "scores"]
    assert {"title", "uploaded", "page_url", "thumb_url", "truth", "truth_unknown", "truth_categories",
            "truth_labels", "suggestions", "found", "hits", "run"} <= set(first)
    assert first["truth_labels"] == {"Q146": "house cat"}
    for line in lines:
        ranks = [s["rank"] for s in line["suggestions"]]
        assert ranks == list(range(1, len(ranks) + 1)) and len(ranks) > 150
        # The starter set's people are withheld (safety rules), and the line says so.
        assert line["withheld"].get("named person", 0) >= 50 and len(ranks) + line["withheld"]["named person"] > 200
        assert line["scores"] == sorted(line["scores"], reverse=True)
        assert sorted(line["hits"]) == [str(h) for h in HOP_LEVELS]
        assert set(line["found"]) == set(line["truth"])
        assert line["uploaded"].startswith("2024-05-01T") and line["page_url"].startswith(wiki.server)
        assert line["thumb_url"].startswith(wiki.server)
    run = first["run"]
    assert run["linker"] == "zero-shot" and run["random_weights"] is True and run["weights"] == "random"
    assert run["labelset_hash"] == default_label_set().content_hash and run["site"] == wiki.api_url
    assert run["top_k"] == 400 and "upload log" in run["selection"]
    # Q25348 (mallard) is not in the starter set.
    assert {x["file"]: x["truth_unknown"] for x in lines}["M10005"] == ["Q25348"]


def test_numbers_equal_the_evaluation_kit_on_the_same_lines(live_run) -> None:
    from wikivel_bot.liveeval.aggregate import summarize_run

    results, truth, _ = live_run
    run = CliRunner().invoke(main, ["evaluate", "--predictions", str(results), "--truth", str(truth), "--labels",
                                    str(starter_label_set_path()), "--k", "1,5,10", "--json"])
    assert run.exit_code == 0, run.output
    kit = json.loads(run.stdout)["scores"]
    ours = summarize_run(read_results(results), ks=(1, 5, 10)).metrics
    for hops in HOP_LEVELS:
        for name in ("R@1", "R@10", "DivR@5", "DivR@10", "mAP@10", "P@5"):
            assert ours[hops][name] == pytest.approx(kit[str(hops)][name]), (hops, name)


def test_generator_arguments_and_limit(wiki, local_only, pywikibot_dir, linker_env, tmp_path) -> None:  # noqa: F811
    out = tmp_path / "cats.jsonl"
    run = CliRunner().invoke(main, ["--api-url", wiki.api_url, "evaluate-live", "-cat:Cats and dogs", "-cat:Cattle",
                                    "--limit", "1", "--top", "3", "--out", str(out)], env=linker_env)
    assert run.exit_code == 0, run.output
    results = read_results(out)
    assert len(results) == 1 and results[0].file in ("M10040", "M10038")
    assert len(results[0].suggestions) == 3
    assert results[0].run.selection.startswith("-cat:Cats and dogs -cat:Cattle")
    bad = CliRunner().invoke(main, ["--api-url", wiki.api_url, "evaluate-live", "Cats"], env=linker_env)
    assert bad.exit_code == 2 and "generator arguments" in bad.output


def test_suggest_calibrated_keeps_only_scores_above_the_threshold(linker_env, tmp_path, monkeypatch) -> None:
    from tests.linker_support import image_bytes
    from wikivel_bot.liveeval.thresholds import thresholds_document

    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    for name, value in linker_env.items():
        monkeypatch.setenv(name, value)
    plain = CliRunner().invoke(main, ["suggest", str(photo), "--top", "10", "--json"])
    assert plain.exit_code == 0, plain.output
    scores = [c["score"] for c in json.loads(plain.stdout)["files"][0]["candidates"]]
    threshold = scores[4]  # the fifth best: five pass
    path = tmp_path / "t.json"
    path.write_text(json.dumps(thresholds_document({"zero-shot": {"threshold": threshold}}, target=0.9, hops=0,
                                                   holdout=0.5, min_support=10, by_category=False, results=[])))
    run = CliRunner().invoke(main, ["suggest", str(photo), "--top", "10", "--json", "--calibrated", str(path)])
    assert run.exit_code == 0, run.output
    doc = json.loads(run.stdout)
    kept = [c["score"] for c in doc["files"][0]["candidates"]]
    assert kept == scores[:5] and doc["calibrated"]["left_out"] == 5
