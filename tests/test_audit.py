"""`wikivel-bot audit`: who approved what, when it was written, the revision, the outcome."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from tests.db_support import open_store
from tests.review_support import CAT, DOG, HUMAN, T0, add_file
from wikivel_bot.cli import main
from wikivel_bot.queue import migrate
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction, Failed, Written


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[str]:
    """M1: cat approved by Ann and written in batch-A; dog rejected by Bob.
    M2: human approved (prominent) by Bob, failed twice in batch-B (maxlag, then protected)."""
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    clock = {"now": datetime(2026, 11, 3, 9, 0, 0)}
    store = Store(open_store(url).engine, clock=lambda: clock["now"])
    migrate.upgrade(store.engine)
    add_file(store, 1, [CAT, DOG])
    add_file(store, 2, [HUMAN])

    def at(minute: int) -> None:
        clock["now"] = datetime(2026, 11, 3, 9, minute, 0)

    at(1)
    store.record_decision(1, "Q146", DecisionAction.APPROVE, "Ann", "terminal")
    at(2)
    store.record_decision(1, "Q144", DecisionAction.REJECT, "Bob", "import")
    at(3)
    store.record_decision(2, "Q5", DecisionAction.APPROVE_PROMINENT, "Bob", "cli")
    at(10)
    for edit in store.claim_approved(10, "writer"):
        if edit.qid == "Q146":
            store.record_edit(edit.candidate_id, "batch-A", Written(revid=123456, statement_id="M1$abc"), T0)
        else:
            store.record_edit(edit.candidate_id, "batch-B", Failed("maxlag", retry_after=1), T0)
    at(20)
    store.record_edit(store.claim_approved(10, "writer")[0].candidate_id, "batch-B", Failed("protectedpage"), T0)
    store.close()
    yield url


def audit(url: str, *args: str):
    result = CliRunner().invoke(main, ["--db-url", url, "audit", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_audit_table_lists_decisions_and_writes(audited: str) -> None:
    lines = audit(audited).splitlines()
    assert lines[0].split() == ["time", "(UTC)", "file", "item", "event", "details"]
    # Each item with its label beside the QID (from what the linker stored with the pair).
    assert [re.split(r"\s{2,}", line)[1:4] for line in lines[1:-1]] == [
        ["M1", "Q146 (house cat)", "approve"], ["M1", "Q144 (dog)", "reject"],
        ["M2", "Q5 (human)", "approve_prominent"], ["M1", "Q146 (house cat)", "written"],
        ["M2", "Q5 (human)", "failed"], ["M2", "Q5 (human)", "failed"],
    ]
    assert lines[1].startswith("2026-11-03 09:01:00") and lines[1].endswith("by Ann (terminal)")
    assert lines[4].endswith("batch batch-A, revision 123456, statement M1$abc")
    assert lines[6].endswith("batch batch-B, protectedpage, attempt 2")
    assert lines[-1] == "3 decisions (approve 1, approve_prominent 1, reject 1); 3 write attempts (failed 2, written 1)"


def test_audit_by_batch_and_file_as_json(audited: str) -> None:
    batch = json.loads(audit(audited, "--batch", "batch-A", "--json"))
    assert batch == [
        {"time": "2026-11-03T09:01:00Z", "kind": "decision", "mid": "M1", "title": "File:Example 1.jpg",
         "qid": "Q146", "label": "house cat", "action": "approve", "state_now": "written", "reviewer": "Ann",
         "source": "terminal"},
        {"time": "2026-11-03T09:10:00Z", "kind": "edit", "mid": "M1", "title": "File:Example 1.jpg",
         "qid": "Q146", "label": "house cat", "action": "written", "state_now": "written", "batch": "batch-A", "revid": 123456,
         "statement_id": "M1$abc", "error": None, "attempt": 1},
    ]
    by_file = json.loads(audit(audited, "--file", "M2", "--json"))
    assert [(e["kind"], e["action"], e.get("error")) for e in by_file] == [
        ("decision", "approve_prominent", None), ("edit", "failed", "maxlag"), ("edit", "failed", "protectedpage")]
    assert [e["qid"] for e in json.loads(audit(audited, "--reviewer", "Ann", "--json"))] == ["Q146", "Q146"]
    assert audit(audited, "--batch", "nope").splitlines()[-1] == "0 decisions; 0 write attempts"


def test_audit_of_an_unknown_file_is_an_error(audited: str) -> None:
    result = CliRunner().invoke(main, ["--db-url", audited, "audit", "--file", "File:Nope.jpg"])
    assert result.exit_code == 1 and result.output.strip() == "error: file 'File:Nope.jpg' is not in the queue"


def test_audit_labels_items_the_linker_never_proposed_from_the_label_set(audited: str) -> None:
    """A reviewer may approve an item by hand (no stored label): the label set names it."""
    store = open_store(audited)
    store.record_decision(1, "Q39715", DecisionAction.APPROVE, "Ann", "cli")  # lighthouse, in the starter set
    store.close()
    line = audit(audited, "--file", "M1").splitlines()[-2]
    assert re.split(r"\s{2,}", line)[1:4] == ["M1", "Q39715 (lighthouse)", "approve"], line
