"""The writer under the ways Wikimedia fails: lag, 5xx, timeouts, stale tokens, edit
conflicts, refusals. Transient failures come back later with a growing delay; permanent
ones are left for a human with the error text; nothing is ever written twice."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import select

from tests.late_answers import fast_retries, short_read_timeout_for  # noqa: F401 - fast_retries is a fixture
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    T0,
    ancestors_of,
    approve,
    approve_all,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.commons.writer import outcomes as wo
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter
from wikivel_bot.queue.tables import candidates
from wikivel_bot.types import Failed

BATCH = "b-20240502090000-fa17"



def run(queue, site, clock, **kw):
    writer = StatementWriter(site, BATCH, ancestors_of, **kw)
    return write_approved(queue, writer, batch_size=5, worker="test", clock=clock, max_attempts=5)


def retry_at(queue):
    with queue.engine.connect() as conn:
        return conn.execute(select(candidates.c.retry_after)).scalar()


def wbeditentities(wiki):
    return [r for r in wiki.requests if r.action == "wbeditentity"]


def test_a_short_maxlag_is_waited_out_by_pywikibot(wiki, site, queue, clock, fast_retries) -> None:
    # Retry-After 0: pywikibot honours the header for every later request, and we do not
    # want the test to sleep.
    fault = wiki.faults.add("wbeditentity", "maxlag", lag=7, retry_after=0)
    approve(queue, 10004, "Q146")
    counters = run(queue, site, clock)
    assert fault.fired == 1 and len(wbeditentities(wiki)) == 2
    assert all(r.params["maxlag"] == "5" for r in wbeditentities(wiki))
    assert counters.written == 1 and targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]


def test_lasting_maxlag_is_retried_later_with_growing_delays(wiki, site, queue, clock, fast_retries) -> None:
    wiki.faults.add("wbeditentity", "maxlag", times=None, lag=30, retry_after=0)
    approve(queue, 10004, "Q146")

    first = run(queue, site, clock)
    assert first.retrying == {"maxlag": 1} and first.written == 0
    assert states(queue)[(10004, "Q146")] == "approved"
    delay1 = retry_at(queue) - T0
    assert run(queue, site, clock).claimed == 0  # not before its retry time

    clock.advance(delay1.total_seconds())
    run(queue, site, clock)
    delay2 = retry_at(queue) - clock.now
    assert delay2 > delay1 >= timedelta(seconds=30)

    wiki.faults.clear()
    clock.advance(delay2.total_seconds())
    assert run(queue, site, clock).written == 1
    assert [r["outcome"] for r in edit_rows(queue)] == ["failed", "failed", "written"]
    assert edit_rows(queue)[0]["error"].startswith("maxlag")
    assert len(wiki.edits) == 1


@pytest.mark.parametrize("error", ["http500", "http503"])
def test_server_errors_after_pywikibots_retries_are_transient(wiki, site, queue, clock, fast_retries,
                                                             error) -> None:
    fault = wiki.faults.add("wbeditentity", error, times=None)
    approve(queue, 10004, "Q146")
    counters = run(queue, site, clock)
    # Sent once: an edit is never resent blindly (the re-read found its GUID absent).
    assert fault.fired == 1
    assert sum(counters.retrying.values()) == 1
    (row,) = edit_rows(queue)
    assert row["outcome"] == "failed" and row["error"].startswith("server")
    assert states(queue)[(10004, "Q146")] == "approved" and retry_at(queue) > T0
    assert wiki.edits == []


def test_a_stale_token_is_refreshed_by_pywikibot(wiki, site, queue, clock) -> None:
    fault = wiki.faults.add("wbeditentity", "badtoken")
    approve(queue, 10004, "Q146")
    counters = run(queue, site, clock)
    assert fault.fired == 1 and len(wbeditentities(wiki)) == 2
    tokens = [r.params["token"] for r in wbeditentities(wiki)]
    assert tokens[0] != tokens[1]  # the retry used the new token
    assert counters.written == 1 and len(wiki.edits) == 1


def test_an_edit_conflict_re_reads_and_retries_the_group_at_once(wiki, site, queue, clock) -> None:
    wiki.faults.add("wbeditentity", "editconflict", title="M10004")
    approve_all(queue, 10004, ["Q146", "Q3736439", "Q144"])
    counters = run(queue, site, clock)

    conflicting = next(r for r in wiki.store.entity_page("M10004").revisions
                       if r.user == "Concurrent Editor")
    assert counters.written == 3 and counters.retrying == {}
    (edit,) = wiki.edits
    assert edit.baserevid == conflicting.revid  # re-read, not the stale revision
    assert len(wbeditentities(wiki)) == 2
    assert sorted(targets(depicts_on_wiki(wiki, 10004))) == ["Q144", "Q146", "Q3736439"]
    assert set(states(queue).values()) == {"written"}
    assert {r["revid"] for r in edit_rows(queue)} == {edit.new_revid}


def test_lasting_edit_conflicts_are_bounded_and_retried_later(wiki, site, queue, clock) -> None:
    from wikivel_bot.commons.writer.statement_writer import CONFLICT_TRIES

    fault = wiki.faults.add("wbeditentity", "editconflict", times=None)
    approve_all(queue, 10004, ["Q146", "Q144"])
    counters = run(queue, site, clock)
    assert fault.fired == CONFLICT_TRIES and wiki.edits == []
    assert counters.retrying == {"editconflict": 2}
    assert [r["outcome"] for r in edit_rows(queue)] == ["failed", "failed"]

    wiki.faults.clear()
    clock.advance(3600)
    assert run(queue, site, clock).written == 2
    (edit,) = wiki.edits
    assert sorted(targets(depicts_on_wiki(wiki, 10004))) == ["Q144", "Q146"]


def test_a_refused_edit_is_left_for_a_human_with_the_error(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    counters = run(queue, site, clock, tags=["not-a-tag"])
    assert counters.failed == {"tags-apply-not-allowed-one": 1}
    assert states(queue)[(10004, "Q146")] == "write_failed"
    (row,) = edit_rows(queue)
    assert 'The tag "not-a-tag" is not allowed' in row["error"]
    clock.advance(10 ** 6)
    assert run(queue, site, clock).claimed == 0  # never retried by itself


def test_transient_failures_end_as_write_failed_after_max_attempts(wiki, site, queue, clock,
                                                                  fast_retries) -> None:
    wiki.faults.add("wbeditentity", "readonly", times=None)
    approve(queue, 10004, "Q146")
    writer = StatementWriter(site, BATCH, ancestors_of)
    for _ in range(2):
        write_approved(queue, writer, batch_size=5, worker="test", clock=clock, max_attempts=2)
        clock.advance(10 ** 5)
    assert states(queue)[(10004, "Q146")] == "write_failed"
    assert [r["outcome"] for r in edit_rows(queue)] == ["failed", "failed"]
    assert wiki.edits == []


def test_a_lost_answer_is_recovered_from_the_history_not_written_again(
        wiki, site, queue, clock, fast_retries, monkeypatch) -> None:
    """The server applies the write after the client gave up waiting: the next run settles
    the request noted before it left (commons.writer.unsettled), finds the bot's own statement
    in the history and records it, applied late, instead of adding another."""
    # The wiki stalls the write before saving it until the test releases it, after the
    # client gave up (only the stalled write has pywikibot's short read timeout).
    stalled = wiki.faults.add("wbeditentity", "timeout", times=None, seconds=600)
    short_read_timeout_for(monkeypatch, stalled)
    approve(queue, 10004, "Q146")
    assert run(queue, site, clock).retrying == {"server": 1}
    assert stalled.fired == 1  # sent once, never resent

    wiki.faults.remove(stalled)
    stalled.release()  # the server now applies the write the client gave up on
    deadline = time.monotonic() + 120  # a hang guard: the wait is for the wiki's edit
    while len(wiki.edits) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    (late,) = wiki.edits  # the first request, applied late
    writes_before = wiki.write_count()

    clock.advance(3600)
    counters = run(queue, site, clock)
    assert (counters.applied_late, counters.written, counters.claimed) == (1, 0, 0)
    assert states(queue)[(10004, "Q146")] == "written"
    assert wiki.write_count() == writes_before  # recorded, not written again
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
    row = edit_rows(queue)[-1]
    assert (row["outcome"], row["revid"], row["statement_id"]) == (
        "written", late.new_revid, late.data["claims"]["P180"][0]["id"])


# -- the mapping itself -----------------------------------------------------------------


@pytest.mark.parametrize("code, kind", [
    ("maxlag", wo.TRANSIENT), ("ratelimited", wo.TRANSIENT), ("readonly", wo.TRANSIENT),
    ("editconflict", wo.TRANSIENT), ("badtoken", wo.TRANSIENT), ("no-such-entity", wo.TRANSIENT),
    ("internal_api_error_DBQueryError", wo.TRANSIENT),
    ("protectedpage", wo.PERMANENT), ("permissiondenied", wo.PERMANENT),
    ("abusefilter-disallowed", wo.PERMANENT), ("tags-apply-not-allowed-one", wo.PERMANENT),
    ("modification-failed", wo.PERMANENT), ("some-new-error", wo.PERMANENT),
    ("blocked", wo.FATAL), ("autoblocked", wo.FATAL), ("assertuserfailed", wo.FATAL),
])
def test_api_error_codes_are_sorted(code, kind) -> None:
    from pywikibot.exceptions import APIError

    found = wo.classify(APIError(code, "some info"))
    assert found is not None and found.kind == kind
    assert found.reason == f"{code}: some info"


def test_pywikibot_exceptions_are_sorted() -> None:
    from pywikibot import exceptions as pe

    assert wo.classify(pe.MaxlagTimeoutError("lag")).kind == wo.TRANSIENT
    assert wo.classify(pe.ApiTimeoutError("retries")).kind == wo.TRANSIENT
    assert wo.classify(pe.ServerError("502")).kind == wo.TRANSIENT
    assert wo.classify(ConnectionError("refused")).kind == wo.TRANSIENT
    assert wo.classify(pe.NoUsernameError("no account")).kind == wo.FATAL
    assert wo.classify(pe.UserRightsError("no edit right")).kind == wo.FATAL
    assert wo.classify(ValueError("a bug")) is None


def test_retry_delays_grow_with_attempts_up_to_a_cap() -> None:
    from pywikibot.exceptions import APIError

    delays = [wo.failure_for(APIError("maxlag", "lagged"), attempts).retry_after for attempts in range(12)]
    assert delays[0] == wo.BASE_DELAY_S["maxlag"]
    assert all(a < b for a, b in zip(delays[:5], delays[1:6], strict=True))
    assert max(delays) == wo.MAX_RETRY_S
    assert wo.failure_for(APIError("editconflict", "x")).retry_after < delays[0]


def test_permanent_and_fatal_and_unknown_failures() -> None:
    from pywikibot.exceptions import APIError

    assert wo.failure_for(APIError("protectedpage", "protected")) == Failed(
        "protectedpage: protected", retry_after=None)
    with pytest.raises(wo.WriteStopped, match="blocked"):
        wo.failure_for(APIError("blocked", "You have been blocked"))
    with pytest.raises(KeyError):
        wo.failure_for(KeyError("a bug is not a wiki failure"))


def test_a_blocked_bot_stops_the_run_and_keeps_the_approval(wiki, site, queue, clock, monkeypatch) -> None:
    from pywikibot.exceptions import APIError

    approve(queue, 10004, "Q146")
    writer = StatementWriter(site, BATCH, ancestors_of)

    def blocked(*args, **kwargs):
        raise APIError("blocked", "You have been blocked from editing.")

    # The group edit's one request (commons.writer.edit_send → one_shot.send_once) is refused.
    monkeypatch.setattr("wikivel_bot.commons.writer.edit_send.send_once", blocked)
    with pytest.raises(wo.WriteStopped):
        write_approved(queue, writer, batch_size=5, worker="test", clock=clock)
    assert states(queue)[(10004, "Q146")] == "approved" and edit_rows(queue) == []
