"""Dry run is pywikibot's ``simulate``: no write request reaches the server, whatever the
caller does, and the outcome says what would have been written."""

from __future__ import annotations

import pytest

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    ancestors_of,
    approve,
    clock,
    depicts_on_wiki,
    edit_rows,
    queue,
    site,
    states,
    wiki,
)
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter, WriteRefused
from wikivel_bot.types import DryRun

BATCH = "b-20240502090000-d0d0"


def test_dry_run_sends_no_write_and_records_what_it_would_write(wiki, site, queue, clock) -> None:
    from pywikibot import config

    approve(queue, 10004, "Q146", prominent=True)
    approve(queue, 10001, "Q146")  # present: still skipped, the checks run in a dry run too
    writer = StatementWriter(site, BATCH, ancestors_of, tags=["wikivel-bot"], dry_run=True)
    assert config.simulate is True  # building a dry-run writer switches it on

    counters = write_approved(queue, writer, batch_size=5, worker="test", clock=clock)

    assert wiki.write_count() == 0 and wiki.edits == []
    assert depicts_on_wiki(wiki, 10004) == []
    # Everything else ran for real: the re-read and the token request reached the server.
    assert any(r.params.get("meta") == "tokens" for r in wiki.requests)
    # The approval is kept: the dry run is only an audit record.
    assert states(queue) == {(10004, "Q146"): "approved", (10001, "Q146"): "write_skipped"}
    row = next(r for r in edit_rows(queue) if r["page_id"] == 10004)
    assert row["outcome"] == "dry_run" and row["revid"] is None and row["statement_id"] is None
    assert counters.dry_run == 1 and counters.written == 0
    assert "\n".join(counters.lines()).count("dry-run") == 1


def test_a_dry_run_keeps_approvals_for_the_real_write(wiki, site, queue, clock) -> None:
    """A trial's approvals are written by the first real write, exactly once,
    and a dry run does not simulate the same pair again on its next cycle."""
    from pywikibot import config

    approve(queue, 10004, "Q146", prominent=True)
    dry = StatementWriter(site, BATCH, ancestors_of, dry_run=True)
    assert write_approved(queue, dry, batch_size=5, worker="dry", clock=clock).dry_run == 1
    again = write_approved(queue, dry, batch_size=5, worker="dry", clock=clock)
    assert (again.claimed, again.dry_run) == (0, 0)
    assert wiki.write_count() == 0

    config.simulate = False  # a later, real run (a new process in real life)
    real = StatementWriter(site, "b-20240502100000-beef", ancestors_of)
    counters = write_approved(queue, real, batch_size=5, worker="real", clock=clock)
    assert counters.written == 1 and wiki.write_count() == 1
    (statement,) = depicts_on_wiki(wiki, 10004)
    assert statement["rank"] == "preferred"
    assert states(queue) == {(10004, "Q146"): "written"}
    assert [r["outcome"] for r in edit_rows(queue)] == ["dry_run", "written"]
    assert write_approved(queue, real, batch_size=5, worker="real", clock=clock).claimed == 0


def test_dry_run_outcome_carries_the_summary(wiki, site, queue, clock) -> None:
    approve(queue, 10004, "Q146")
    (edit,) = queue.claim_approved(1, "test")
    outcome = StatementWriter(site, BATCH, ancestors_of, dry_run=True).write(edit)
    assert isinstance(outcome, DryRun)
    assert outcome.summary.startswith("Adding depicts [[d:Q146|Q146]], approved by [[User:")
    assert BATCH in outcome.summary
    assert wiki.write_count() == 0


def test_switching_simulate_off_under_a_dry_run_writer_is_refused(wiki, site, queue, clock) -> None:
    from pywikibot import config

    approve(queue, 10004, "Q146")
    writer = StatementWriter(site, BATCH, ancestors_of, dry_run=True)
    config.simulate = False  # some code "helpfully" turns it off

    with pytest.raises(WriteRefused, match="dry run requested"):
        write_approved(queue, writer, batch_size=5, worker="test", clock=clock)
    assert wiki.write_count() == 0 and wiki.edits == []
    assert states(queue)[(10004, "Q146")] == "approved"  # nothing recorded: still to do
    assert edit_rows(queue) == []


def test_simulate_on_never_yields_a_fake_written(wiki, site, queue, clock) -> None:
    # An operator's user-config.py with simulate = True and a writer not asked for a dry run:
    # pywikibot answers revid -1, which must not be recorded as written.
    from pywikibot import config

    approve(queue, 10004, "Q146")
    config.simulate = True
    writer = StatementWriter(site, BATCH, ancestors_of)
    counters = write_approved(queue, writer, batch_size=5, worker="test", clock=clock)
    assert wiki.write_count() == 0
    assert (counters.claimed, counters.dry_run, counters.written) == (1, 1, 0)
    assert states(queue)[(10004, "Q146")] == "approved"
    assert [r["outcome"] for r in edit_rows(queue)] == ["dry_run"]

