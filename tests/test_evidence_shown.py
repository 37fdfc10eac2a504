"""Commons' own evidence shown everywhere: each suggestion's evidence in words, in every view.

One queue file carries two suggestions: Q243 with category + link evidence (kind
"several"), and Q12518 from a row written before evidence existed (no evidence keys at all,
so "image only"). ``suggest`` (table and --json), the exports (CSV, JSON Lines, wikitext),
the terminal review, the web page and its JSON API must all show the same words; the
live-evaluation report breaks precision down by evidence kind on a fixed set of suggestions
whose precision is counted by hand below.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Dict, List

import mwparserfromhell
import pytest
from click.testing import CliRunner

from tests.liveeval_support import CATEGORIES, LABELS, RUN, ancestors, media
from tests.review_support import T0
from tests.web_support import SECRETS, web_queue, web_settings, webwiki  # noqa: F401 - fixtures by name
from wikivel_bot.cli import main
from wikivel_bot.core.evidence import KIND_CATEGORY, KIND_CATEGORY_LABEL, KIND_ID, KIND_LINK, Evidence
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.core.review_rules import ReviewFilter, file_page_url
from wikivel_bot.errors import UsageError
from wikivel_bot.liveeval.aggregate import summarize_run
from wikivel_bot.liveeval.compare import compare
from wikivel_bot.liveeval.records import read_results, write_result
from wikivel_bot.liveeval.tables import evidence_table
from wikivel_bot.queue.reviews import iter_review_files
from wikivel_bot.queue.store import Store
from wikivel_bot.review.export import export_states, write_export
from wikivel_bot.review.session import ReviewSession
from wikivel_bot.review.terminal import render
from wikivel_bot.types import Candidate, MediaFile, Upload

CATEGORY = Evidence(KIND_CATEGORY, "Category:Eiffel Tower", "Q243")
LINK = Evidence(KIND_LINK, "[[w:en:Eiffel Tower]]", "Q243")
CATEGORY_TEXT = "Category:Eiffel Tower → Q243"
LINK_TEXT = "[[w:en:Eiffel Tower]] → Q243"
WHY = f"{CATEGORY_TEXT}; {LINK_TEXT}"

# As the linker stores them (design: "Where evidence lives on a candidate").
WITH_EVIDENCE = {"label": "Eiffel Tower", "description": "tower in Paris", "notes": [],
                 "sources": [CATEGORY.as_dict(), LINK.as_dict()], "evidence_kind": "several",
                 "visual_score": 0.31, "in_label_set": True}
# A row queued before evidence existed: none of the evidence keys.
OLD_ROW = {"label": "tower", "description": "tall structure", "notes": ["close to a more specific item"]}
TITLE = "File:Eiffel Tower at night.jpg"


def candidates() -> List[Candidate]:
    return [Candidate(qid="Q243", score=0.9, rank=1, linker="zero-shot", linker_version="1", labelset_hash="h" * 16,
                      evidence=WITH_EVIDENCE),
            Candidate(qid="Q12518", score=0.5, rank=2, linker="zero-shot", linker_version="1",
                      labelset_hash="h" * 16, evidence=OLD_ROW)]


def the_file(page_id: int = 1) -> MediaFile:
    return MediaFile(page_id=page_id, title=TITLE, thumb_url=f"https://upload.wikimedia.org/thumb/{page_id}/x.jpg",
                     description="The tower at night", categories=("Eiffel Tower",), revid=7)


def queue_file(store: Store, page_id: int = 1, cands: Any = None) -> int:
    """The file through the store's real path (enqueue, fetch, link), as the daemon leaves it."""
    store.enqueue([Upload(page_id=page_id, title=TITLE, timestamp=T0, uploader="Alice", log_id=1000 + page_id,
                          mime="image/jpeg", width=800, height=600)])
    file_id = store.file_id_of(page_id)
    store.mark_fetched(file_id, the_file(page_id))
    store.save_candidates(file_id, cands if cands is not None else candidates())
    return file_id


# --- the one reading -------------------------------------------------------------------


def test_stored_evidence_reads_as_kind_and_texts_and_old_rows_as_image_only() -> None:
    shown = shown_evidence(WITH_EVIDENCE)
    assert (shown.kind, shown.texts, shown.why()) == ("several", (CATEGORY_TEXT, LINK_TEXT), WHY)
    assert shown.as_json() == {"evidence_kind": "several", "sources": [CATEGORY.as_dict(), LINK.as_dict()],
                               "visual_score": 0.31, "in_label_set": True}
    for old in (OLD_ROW, {}, None, "not a mapping"):
        assert (shown_evidence(old).kind, shown_evidence(old).texts, shown_evidence(old).why()) == \
            ("image only", (), "image only")
    # One kind alone names its bucket; the kind follows the sources, not a stale stored word.
    assert shown_evidence({"sources": [CATEGORY.as_dict()], "evidence_kind": "link"}).kind == "category"
    # A malformed stored source is left out, never a crash; an item fetched on the fly says so.
    odd = shown_evidence({"sources": [{"kind": "rumour", "source": "x", "qid": "Q1"}, "junk", LINK.as_dict()],
                          "in_label_set": False})
    assert odd.texts == (LINK_TEXT,) and odd.why() == f"{LINK_TEXT} (not in the label set)"


def test_a_pair_added_by_hand_reads_as_added_by_hand_never_image_only() -> None:
    from wikivel_bot.core.evidence_view import ADDED_BY_HAND, HAND_MARK

    shown = shown_evidence(dict(HAND_MARK))
    assert (shown.kind, shown.texts, shown.why()) == (ADDED_BY_HAND, (), "added by hand")
    assert shown.as_json()["evidence_kind"] == "added by hand"


def hand_approved_then_reverted(store: Store, page_id: int = 1) -> None:
    """Q90 approved by hand (never suggested: no score, no linker), written, then reverted."""
    from sqlalchemy import select

    from wikivel_bot.queue.revert_queries import mark_reverted
    from wikivel_bot.queue.tables import candidates as candidate_rows
    from wikivel_bot.types import DecisionAction, Written

    queue_file(store, page_id)
    store.record_decision(page_id, "Q90", DecisionAction.APPROVE, "Ann", "cli")
    with store.transaction() as conn:
        cand = conn.execute(select(candidate_rows.c.id).where(candidate_rows.c.qid == "Q90")).scalar()
    store.record_edit(cand, "b-20261101120000-0001", Written(revid=70, statement_id=f"M{page_id}$h1"),
                      datetime(2026, 11, 1, 12, 0))
    mark_reverted(store, cand, "b-20261101120000-0001", revid=71, statement_id=f"M{page_id}$h1")


def test_a_hand_approved_reverted_pair_says_added_by_hand_in_the_exports(store: Store) -> None:
    hand_approved_then_reverted(store)
    everything = ReviewFilter(states=export_states("csv", ("all",)))
    (shown,) = [c for f in iter_review_files(store, everything) for c in f.candidates if c.qid == "Q90"]
    assert shown.score is None and shown.state.value == "reverted"
    assert shown.evidence.why() == "added by hand"
    out = io.StringIO(newline="")
    write_export(iter_review_files(store, everything), "csv", out, partial(file_page_url),
                 datetime(2026, 11, 2, tzinfo=timezone.utc))
    rows = {r["qid"]: r for r in csv.DictReader(io.StringIO(out.getvalue()))}
    assert (rows["Q90"]["evidence_kind"], rows["Q90"]["evidence"]) == ("added by hand", "added by hand")
    assert rows["Q12518"]["evidence"] == "image only"  # a linked row without evidence still is


def test_the_web_page_says_added_by_hand(webwiki, web_queue) -> None:  # noqa: F811
    hand_approved_then_reverted(web_queue, 10001)
    client = web_client(webwiki, web_queue)
    cands = {c["item"]: c for c in client.get("/api/files/M10001").json["candidates"]}
    assert (cands["Q90"]["score"], cands["Q90"]["why"], cands["Q90"]["evidence_kind"]) == \
        (None, "added by hand", "added by hand")
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert "</span> added by hand</p>" in page and "score –" in page
    assert page.count("</span> image only</p>") == 1  # Q12518's, not the hand-added pair's


# --- suggest -----------------------------------------------------------------------------


def linked_outcome() -> Any:
    pytest.importorskip("PIL")
    from wikivel_bot.core.ranking import Ranking
    from wikivel_bot.linker.link import Linked

    return Linked(the_file(), tuple(candidates()), Ranking(items=()))


def test_suggest_table_and_json_show_each_suggestions_evidence(capsys) -> None:
    from wikivel_bot.cli.suggest import _file_entry, _print_outcome

    outcome = linked_outcome()
    _print_outcome(outcome)
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "QID" in line)
    assert header.split()[:7] == ["rank", "QID", "label", "description", "score", "why", "notes"]
    rows = {line.split()[1]: line for line in lines if line.strip().startswith(("1 ", "2 "))}
    assert WHY in rows["Q243"]
    assert "image only" in rows["Q12518"] and rows["Q12518"].endswith("close to a more specific item")
    # The why column is as wide as its longest text: the notes start in one column.
    assert header.index("notes") == rows["Q12518"].index("close to")

    entry = json.loads(json.dumps(_file_entry(outcome, label_set=None)))
    by_qid = {c["qid"]: c for c in entry["candidates"]}
    assert by_qid["Q243"]["evidence_kind"] == "several" and by_qid["Q243"]["why"] == WHY
    assert [s["text"] for s in by_qid["Q243"]["sources"]] == [CATEGORY_TEXT, LINK_TEXT]
    assert by_qid["Q243"]["sources"][0] == {"kind": "category", "source": "Category:Eiffel Tower", "qid": "Q243",
                                            "text": CATEGORY_TEXT}
    assert (by_qid["Q12518"]["evidence_kind"], by_qid["Q12518"]["sources"]) == ("image only", [])


def test_a_full_suggest_run_says_why_in_the_table_and_json(tmp_path: Path, monkeypatch) -> None:
    """The real command with the top-k linker on a local image: a local file has no Commons
    page, so no evidence — every suggestion says "image only"."""
    pytest.importorskip("torch")
    from tests.linker_support import animals_label_set, image_bytes

    monkeypatch.setattr("wikivel_bot.labels.default_label_set", lambda labels_dir: animals_label_set())
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    runner = CliRunner()
    table = runner.invoke(main, ["suggest", str(photo), "--linker", "top-k", "--top", "3"], catch_exceptions=False)
    assert table.exit_code == 0, table.output
    rows = [line for line in table.stdout.splitlines() if line.strip().startswith(("1 ", "2 ", "3 "))]
    assert len(rows) == 3 and all("image only" in row for row in rows)
    doc = json.loads(runner.invoke(main, ["suggest", str(photo), "--linker", "top-k", "--top", "3", "--json"],
                                   catch_exceptions=False).stdout)
    assert [(c["evidence_kind"], c["sources"], c["why"]) for c in doc["files"][0]["candidates"]] == \
        [("image only", [], "image only")] * 3


# --- exports -----------------------------------------------------------------------------


def exported(store: Store, fmt: str) -> str:
    out = io.StringIO(newline="")
    files = iter_review_files(store, ReviewFilter(states=export_states(fmt, ())))
    write_export(files, fmt, out, partial(file_page_url), datetime(2026, 11, 2, tzinfo=timezone.utc))
    return out.getvalue()


def test_every_export_format_carries_the_evidence(store: Store) -> None:
    queue_file(store)
    rows = {r["qid"]: r for r in csv.DictReader(io.StringIO(exported(store, "csv")))}
    assert (rows["Q243"]["evidence_kind"], rows["Q243"]["evidence"]) == ("several", WHY)
    assert (rows["Q12518"]["evidence_kind"], rows["Q12518"]["evidence"]) == ("image only", "image only")

    records = {r["qid"]: r for r in map(json.loads, exported(store, "jsonl").splitlines())}
    assert records["Q243"]["evidence_kind"] == "several" and records["Q243"]["evidence"] == [CATEGORY_TEXT, LINK_TEXT]
    assert records["Q243"]["sources"] == [CATEGORY.as_dict(), LINK.as_dict()]
    assert (records["Q12518"]["evidence_kind"], records["Q12518"]["evidence"], records["Q12518"]["sources"]) == \
        ("image only", [], [])

    page = mwparserfromhell.parse(exported(store, "wikitext"))
    text = page.strip_code(normalize=True, collapse=True)
    assert f"why: {WHY}" in text and "why: image only" in text
    # The link in the evidence text is shown as written, not made a link on the page.
    assert "w:en:Eiffel Tower" not in {str(link.title) for link in page.filter_wikilinks()}


# --- terminal review ------------------------------------------------------------------------


def test_the_terminal_review_shows_why(store: Store) -> None:
    queue_file(store)
    session = ReviewSession(store, "Ann")
    session.start()
    screen = render(session, 120)
    assert f"        why: {WHY}" in screen.splitlines()
    assert "        why: image only" in screen.splitlines()
    # On a small terminal the selected suggestion keeps its evidence line.
    small = render(session, 120, height=18).splitlines()
    assert any(line.startswith("> #1") for line in small) and f"        why: {WHY}" in small


# --- web review ----------------------------------------------------------------------------


def web_client(wiki: Any, store: Store) -> Any:
    from wikivel_bot.web.app import create_app

    app = create_app(web_settings(wiki), store, secrets=SECRETS, items=None)
    app.testing = True
    return app.test_client()


def test_the_web_page_and_api_show_the_evidence(webwiki, web_queue) -> None:  # noqa: F811
    queue_file(web_queue, 10001)
    client = web_client(webwiki, web_queue)
    cands = {c["item"]: c for c in client.get("/api/files/M10001").json["candidates"]}
    assert cands["Q243"]["evidence_kind"] == "several" and cands["Q243"]["why"] == WHY
    assert [s["text"] for s in cands["Q243"]["sources"]] == [CATEGORY_TEXT, LINK_TEXT]
    assert (cands["Q12518"]["evidence_kind"], cands["Q12518"]["sources"], cands["Q12518"]["why"]) == \
        ("image only", [], "image only")
    queue = client.get("/api/queue").json["files"]
    assert queue[0]["candidates"][0]["sources"] == [CATEGORY.as_dict(), LINK.as_dict()]

    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert CATEGORY_TEXT in page and LINK_TEXT in page
    assert page.count('class="evidence"') == 2 and "</span> image only</p>" in page
    grid = client.get("/grid?item=Q243").get_data(as_text=True)
    assert f'<span class="tile-why">{WHY}</span>' in grid


def test_evidence_texts_are_escaped_on_the_page(webwiki, web_queue) -> None:  # noqa: F811
    evil = Evidence(KIND_CATEGORY, 'Category:<img src=x onerror="alert(1)">', "Q243")
    cands = [Candidate(qid="Q243", score=0.9, rank=1, linker="zero-shot", linker_version="1",
                       labelset_hash="h" * 16, evidence={"label": "Eiffel Tower", "sources": [evil.as_dict()]})]
    queue_file(web_queue, 10001, cands)
    client = web_client(webwiki, web_queue)
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert "<img src=x" not in page and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt; → Q243" in page
    api = client.get("/api/files/M10001")
    assert api.mimetype == "application/json" and api.json["candidates"][0]["why"] == evil.describe()


# --- precision by evidence kind (evaluate-live, the trial report) --------------------------


def ev(*pieces: Evidence) -> Dict[str, Any]:
    return {"sources": [p.as_dict() for p in pieces]}


def kind_results() -> list:
    """Three files; hops from the test hierarchy (Q146 house cat → Q7377 mammal → Q729 animal,
    Q144 dog → Q7377 → Q729, Q5 human alone).

    ======  =====  ======  ===============  ===============================
    file    truth  item    evidence         correct at hops 0 / within 3
    ======  =====  ======  ===============  ===============================
    1       Q146   Q146    category         yes / yes
    1              Q5      image only       no / no
    1              Q7377   link             no / yes (1 hop)
    2       Q144   Q144    category + link  yes / yes    (several)
    2              Q146    category         no / no
    2              Q729    image only (old  no / yes (2 hops)
                           row, no keys)
    3       Q5     Q5      identifier       yes / yes
    3              Q146    category label   no / no
    ======  =====  ======  ===============  ===============================
    """
    cat = lambda q: Evidence(KIND_CATEGORY, f"Category:{LABELS[q]}", q)  # noqa: E731
    link = lambda q: Evidence(KIND_LINK, f"[[w:en:{LABELS[q]}]]", q)  # noqa: E731
    files = [
        (1, ["Q146"], [("Q146", 0.9), ("Q5", 0.8), ("Q7377", 0.7)], {"Q146": ev(cat("Q146")), "Q7377": ev(link("Q7377"))}),
        (2, ["Q144"], [("Q144", 0.9), ("Q146", 0.6), ("Q729", 0.5)],
         {"Q144": ev(cat("Q144"), link("Q144")), "Q146": ev(cat("Q146")), "Q729": {"label": "animal"}}),
        (3, ["Q5"], [("Q5", 0.9), ("Q146", 0.4)],
         {"Q5": ev(Evidence(KIND_ID, "{{Some identifier|42}}", "Q5")),
          "Q146": ev(Evidence(KIND_CATEGORY_LABEL, "Category:House cat", "Q146"))}),
    ]
    return [compare(f"M{page}", ranked, truth, ancestors, media=media(page, *truth), category_of=CATEGORIES.get,
                    label_of=LABELS.get, run=RUN, evidence=evidence, title=f"File:Example {page}.jpg",
                    uploaded="2024-05-01T08:00:00Z")
            for page, truth, ranked, evidence in files]


# (kind, suggestions, share of 8, precision hops 0 (correct/n), precision within 3 hops), by hand.
EXPECTED = [
    ["image only", "2", "25.0", "0.0 (0/2)", "50.0 (1/2)"],
    ["category", "2", "25.0", "50.0 (1/2)", "50.0 (1/2)"],
    ["category label", "1", "12.5", "0.0 (0/1)", "0.0 (0/1)"],
    ["link", "1", "12.5", "0.0 (0/1)", "100.0 (1/1)"],
    ["identifier", "1", "12.5", "100.0 (1/1)", "100.0 (1/1)"],
    ["several", "1", "12.5", "100.0 (1/1)", "100.0 (1/1)"],
]


def test_precision_by_evidence_kind_counted_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for result in kind_results():
            write_result(handle, result)
    results = read_results(path)  # through the stored lines, as `report` reads them
    assert [s.evidence_kind for s in results[1].suggestions] == ["several", "category", "image only"]
    assert results[1].suggestions[0].evidence == ("Category:dog → Q144", "[[w:en:dog]] → Q144")
    table = evidence_table(summarize_run(results))
    assert table.headers == ["evidence", "suggestions", "share", "precision hops 0", "precision hops 3"]
    assert [list(row) for row in table.rows] == EXPECTED
    assert "| image only     | 2           | 25.0  | 0.0 (0/2)        | 50.0 (1/2)       |" in table.markdown()

    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["report", "--results", str(path), "--out", str(out), "--k", "1"])
    assert run.exit_code == 0, run.output
    wiki = mwparserfromhell.parse((out / "report.wiki").read_text(encoding="utf-8"))
    (shown,) = [t for t in wiki.filter_tags(matches=lambda n: n.tag == "table", recursive=False)
                if "precision by evidence kind" in str(t.contents).split("\n", 1)[0]]
    rows = [[c.contents.strip_code(normalize=True).strip()
             for c in row.contents.filter_tags(matches=lambda n: n.tag in ("td", "th"))]
            for row in shown.contents.nodes if getattr(row, "tag", None) == "tr"]
    assert rows == [["evidence", "suggestions", "share", "precision hops 0", "precision hops 3"], *EXPECTED]
    assert "zero-shot: precision by evidence kind (%)" in (out / "report.html").read_text(encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    kinds = {k["name"]: k for k in summary["linkers"][0]["evidence_kinds"]}
    assert (kinds["link"]["suggestions"], kinds["link"]["correct"]) == (1, [0, 1, 1, 1])
    assert kinds["image only"]["precision"] == [0.0, 0.0, 0.5, 0.5]


def test_result_lines_without_evidence_read_as_image_only_and_bad_kinds_are_named(tmp_path: Path) -> None:
    line = kind_results()[0].to_json()
    old = json.loads(json.dumps(line))
    for s in old["suggestions"]:
        del s["evidence_kind"], s["evidence"]
    bad = json.loads(json.dumps(line))
    bad["suggestions"][0]["evidence_kind"] = "hunch"
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n")
    assert {s.evidence_kind for s in read_results(path)[0].suggestions} == {"image only"}
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(UsageError, match=r"old\.jsonl:1: malformed result line \(evidence_kind 'hunch'"):
        read_results(path)
