"""pipeline.poll_once / fetch_pending over a real queue and fake Commons ports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Dict, Iterable, Iterator, List, Mapping, Optional

import pytest

from tests.commons_support import file_rows
from tests.commons_support import queue  # noqa: F401 - pytest fixtures
from wikivel_bot import pipeline
from wikivel_bot.commons.outcomes import Deferred, Ineligible, Unavailable
from wikivel_bot.commons.poller import PollBatch
from wikivel_bot.errors import WikiError
from wikivel_bot.types import Cursor, FileState, MediaFile, Upload

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)


def upload(page_id: int, minute: int = 0) -> Upload:
    return Upload(page_id=page_id, title=f"File:P{page_id}.jpg", timestamp=T0.replace(minute=minute),
                  log_id=page_id)


@dataclass
class FakePoller:
    batches_: List[PollBatch]
    fail_after: Optional[int] = None
    source: str = "upload-log:test"
    starts: List[Optional[Cursor]] = field(default_factory=list)

    def batches(self, start: Optional[Cursor]) -> Iterator[PollBatch]:
        self.starts.append(start)
        for n, batch in enumerate(self.batches_):
            if self.fail_after is not None and n == self.fail_after:
                raise WikiError("server down")
            yield batch


def batch(*uploads: Upload, ineligible: Optional[Dict[int, str]] = None) -> PollBatch:
    last = uploads[-1]
    return PollBatch(uploads=uploads, ineligible=ineligible or {}, cursor=Cursor(last.timestamp, last.log_id),
                     read=len(uploads))


def test_poll_once_commits_batch_by_batch(queue) -> None:
    poller = FakePoller([
        batch(upload(1), upload(2), upload(3), ineligible={2: "too small: 1x1 px", 3: "mime type: x/y"}),
        batch(upload(4, 1), upload(5, 1)),
    ], fail_after=1)
    with pytest.raises(WikiError):
        pipeline.poll_once(queue, poller)
    assert poller.starts == [None]
    assert queue.get_cursor("upload-log:test") == Cursor(datetime(2024, 5, 1, 8, 0), 3)
    assert {r["page_id"]: r["state"] for r in file_rows(queue).values()} == {
        1: "discovered", 2: "ineligible", 3: "ineligible"}

    poller.fail_after = None
    poller.batches_ = [batch(upload(3), upload(4, 1), upload(5, 1), ineligible={3: "mime type: x/y"})]
    counters = pipeline.poll_once(queue, poller)
    assert poller.starts[-1] == Cursor(datetime(2024, 5, 1, 8, 0), 3)  # from the stored cursor
    assert (counters.read, counters.enqueued, dict(counters.ineligible), counters.known) == (3, 2, {}, 1)
    assert counters.lines()[:4] == ["3 log entries read", "2 files enqueued", "0 files ineligible", "1 already known"]

    pipeline.poll_once(queue, poller, since=T0)
    assert poller.starts[-1] == Cursor(T0, 0)


def test_poll_counts_new_ineligible_files_by_kind(queue) -> None:
    poller = FakePoller([batch(upload(1), upload(2), upload(3), upload(4), ineligible={
        1: "too small: 1x1 px", 2: "too small: 2x2 px", 3: "deleted: gone"})])
    counters = pipeline.poll_once(queue, poller)
    assert dict(counters.ineligible) == {"too small": 2, "deleted": 1}
    assert "    2 too small" in counters.lines()
    assert file_rows(queue)["File:P2.jpg"]["reason"] == "too small: 2x2 px"


@dataclass
class FakeFetcher:
    outcomes: Mapping[int, object]
    batch_size: int = 2
    calls: List[List[int]] = field(default_factory=list)
    fail: bool = False

    def fetch(self, page_ids: Iterable[int]) -> Mapping[int, object]:
        ids = list(page_ids)
        self.calls.append(ids)
        if self.fail and len(self.calls) == 2:
            raise WikiError("api down")
        return {i: self.outcomes[i] for i in ids if i in self.outcomes}


def media(page_id: int) -> MediaFile:
    return MediaFile(page_id=page_id, title=f"File:P{page_id}.jpg", thumb_url="http://x/330px-P.jpg")


def test_fetch_pending_records_every_outcome(queue) -> None:
    queue.enqueue([upload(i) for i in range(1, 6)])
    fetcher = FakeFetcher({1: media(1), 2: Unavailable("corrupt: truncated"), 3: Ineligible("protected: edit"),
                           4: Deferred("HTTP 503")})  # 5: no answer at all → deferred too
    counters = pipeline.fetch_pending(queue, fetcher, limit=10, worker="w")
    assert fetcher.calls == [[1, 2], [3, 4], [5]]
    rows = {r["page_id"]: (r["state"], r["reason"]) for r in file_rows(queue).values()}
    assert rows[1] == ("fetched", None)
    assert rows[2] == ("unavailable", "corrupt: truncated")
    assert rows[3] == ("ineligible", "protected: edit")
    assert rows[4][0] == rows[5][0] == "discovered"
    assert (counters.claimed, counters.fetched, counters.deferred) == (5, 1, 2)
    assert dict(counters.unavailable) == {"corrupt": 1} and dict(counters.ineligible) == {"protected": 1}
    # Deferred files keep their claim until the lease runs out: not handed out again now.
    assert queue.claim_files(FileState.DISCOVERED, 10, "other") == []


def test_a_file_deferred_too_often_is_given_up(queue) -> None:
    queue.enqueue([upload(1)])
    fetcher = FakeFetcher({1: Deferred("HTTP 503")})
    queue.claim_lease = timedelta(seconds=-1)  # leases expire at once
    for _ in range(2):
        pipeline.fetch_pending(queue, fetcher, limit=1, worker="w", max_attempts=3)
    assert file_rows(queue)["File:P1.jpg"]["state"] == "discovered"
    counters = pipeline.fetch_pending(queue, fetcher, limit=1, worker="w", max_attempts=3)
    row = file_rows(queue)["File:P1.jpg"]
    assert (row["state"], row["reason"]) == ("unavailable", "gave up after 3 attempts: HTTP 503")
    assert dict(counters.unavailable) == {"gave up after 3 attempts": 1}


def test_a_failing_wiki_gives_the_unfinished_files_back(queue) -> None:
    queue.enqueue([upload(i) for i in range(1, 5)])
    fetcher = FakeFetcher({i: media(i) for i in range(1, 5)}, fail=True)
    with pytest.raises(WikiError, match="api down"):
        pipeline.fetch_pending(queue, fetcher, limit=10, worker="w")
    states = {r["page_id"]: r["state"] for r in file_rows(queue).values()}
    assert states == {1: "fetched", 2: "fetched", 3: "discovered", 4: "discovered"}
    assert [w.page_id for w in queue.claim_files(FileState.DISCOVERED, 10, "other")] == [3, 4]
