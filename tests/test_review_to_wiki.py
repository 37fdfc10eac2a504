"""From suggestion to statement: export for patrollers, decide offline, import, write.

The whole human-in-the-loop path on the local test wiki with real pywikibot: a decision
made in the exported CSV reaches Commons exactly once, a rejected item never does, and
importing the same sheet again or running the writer again changes nothing.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from click.testing import CliRunner

from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    ancestors_of,
    clock,
    depicts_on_wiki,
    edits_of,
    queue,
    queue_file,
    site,
    states,
    targets,
    wiki,
)
from wikivel_bot.cli import main
from wikivel_bot.commons.writer.loop import write_approved
from wikivel_bot.commons.writer.statement_writer import StatementWriter


def test_offline_decisions_are_written_exactly_once(wiki, site, queue, clock, tmp_path: Path) -> None:
    queue_file(queue, 10004, ["Q146", "Q144"])
    url = queue.engine.url.render_as_string(hide_password=False)
    runner = CliRunner()

    exported = runner.invoke(main, ["--db-url", url, "export", "--format", "csv", "--out", "-"])
    assert exported.exit_code == 0, exported.output
    rows = list(csv.DictReader(io.StringIO(exported.stdout.lstrip("\ufeff"))))
    assert {(r["mid"], r["qid"]) for r in rows} == {("M10004", "Q146"), ("M10004", "Q144")}
    for row in rows:  # the patroller's spreadsheet work
        row["decision"] = "approve" if row["qid"] == "Q146" else "reject"
    sheet = tmp_path / "decisions.csv"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    imported = runner.invoke(main, ["--db-url", url, "import-decisions", str(sheet), "--reviewer", "Ann"])
    assert imported.exit_code == 0, imported.output
    assert states(queue) == {(10004, "Q146"): "approved", (10004, "Q144"): "rejected"}

    bot = StatementWriter(site, "b-20261121000000-0001", ancestors_of)
    counters = write_approved(queue, bot, batch_size=5, worker="test", clock=clock)
    assert counters.claimed == 1
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
    (edit,) = edits_of(wiki, 10004)
    assert "approved by [[User:Ann]]" in edit.summary

    # Again: the same sheet applies nothing twice, the writer finds nothing to do.
    again = runner.invoke(main, ["--db-url", url, "import-decisions", str(sheet), "--reviewer", "Ann"])
    assert again.exit_code == 0, again.output
    assert write_approved(queue, bot, batch_size=5, worker="test", clock=clock).claimed == 0
    assert len(edits_of(wiki, 10004)) == 1
    assert targets(depicts_on_wiki(wiki, 10004)) == ["Q146"]
    assert states(queue) == {(10004, "Q146"): "written", (10004, "Q144"): "rejected"}
