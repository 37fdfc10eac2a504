"""The backfill's stage functions without Ray (the same functions the Ray pipeline runs):
rejected pairs, relinking, the dump source, title lists and the download budget's rules."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.backfill_support import backfill_settings, labels  # noqa: E402,F401
from tests.commons_support import pywikibot_dir, wiki  # noqa: E402,F401
from wikivel_bot.backfill import stages  # noqa: E402
from wikivel_bot.backfill.limiter import DownloadBudget  # noqa: E402
from wikivel_bot.backfill.rows import LINKED, BackfillCounters, candidates_from_text, new_row  # noqa: E402
from wikivel_bot.backfill.sources import depicted_page_ids  # noqa: E402
from wikivel_bot.types import DecisionAction  # noqa: E402

DUMPS = Path(__file__).resolve().parent / "fixtures" / "dumps"


def test_titles_are_normalised() -> None:
    assert stages.normalise_title("Dog_in_the_park.jpg") == "File:Dog in the park.jpg"
    assert stages.normalise_title("file:red apple.png") == "File:Red apple.png"
    assert stages.normalise_title("Image:X.jpg") == "File:X.jpg"
    assert stages.normalise_title("  # comment") == "" and stages.normalise_title("") == ""


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_mediainfo_dump_gives_the_files_with_p180(suffix: str) -> None:
    found = depicted_page_ids(str(DUMPS / f"commons-20231107-mediainfo-sample.json{suffix}"))
    import json

    expected = set()
    for line in (DUMPS / "commons-20231107-mediainfo-sample.json").read_text().splitlines():
        try:
            entity = json.loads(line.rstrip(","))
        except ValueError:
            continue  # the sample has a damaged line on purpose (M129)
        if isinstance(entity, dict) and isinstance(entity.get("statements"), dict) and entity["statements"].get("P180"):
            expected.add(int(entity["id"][1:]))
    assert found == expected and 101 in found and 126 in found and 129 not in found


def test_a_rejected_pair_is_never_proposed_again_when_relinked(wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.factory import ReadyLinker
    from wikivel_bot.linker.link import model_input_steps, model_side, rules_from_settings

    settings = backfill_settings(wiki, tmp_path, labels)
    site = open_site(settings.site)
    fetcher = Fetcher(site, settings.fetch, settings.poll, ("en",), None)
    store = open_store(settings)
    linker = create_linker(settings.linker.name, settings.linker)
    label_set = default_label_set(settings.linker.labels_dir)
    linker.attach(label_set, settings.linker.cache_dir)
    identity = (linker.description.name, linker.description.version, label_set.content_hash)
    rules = rules_from_settings(settings.linker)
    client = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)

    def run(ident):  # type: ignore[no-untyped-def]
        rows = [new_row("File:Lighthouse at dusk.jpg")]
        rows = stages.resolve(rows, fetcher=fetcher, store=store, worker="backfill:t", identity=ident)
        steps = model_input_steps(linker)
        rows = stages.decode(stages.download(rows, client.get), model_side(linker), steps.geometry)
        rows = stages.link(rows, ReadyLinker(linker, rules, None, {}), steps.finish)
        counters = BackfillCounters()
        return stages.record(rows, store, counters), counters

    rows, counters = run(identity)
    assert counters.linked == 1
    first = candidates_from_text(rows[0]["candidates"])
    top = first[0].qid
    store.record_decision(rows[0]["page_id"], top, DecisionAction.REJECT, "Reviewer", "test")

    again, counters = run(identity)  # same linker and label set: skipped
    assert counters.skipped == {"already linked": 1}
    relinked, counters = run(("another-linker", "1", "other-labels"))  # linked again
    assert counters.linked == 1 and relinked[0]["outcome"] == LINKED
    assert top not in {c.qid for c in candidates_from_text(relinked[0]["candidates"])}
    from tests.commons_support import file_rows

    assert file_rows(store)["File:Lighthouse at dusk.jpg"]["state"] == "linked"
    with store.transaction() as conn:
        from sqlalchemy import select

        from wikivel_bot.queue.tables import candidates

        states = dict(conn.execute(select(candidates.c.qid, candidates.c.state)).all())
    assert states[top] == "rejected"
    client.close()
    store.close()


def test_preprocessing_in_the_cpu_stage_gives_the_daemons_suggestions(wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    """decode + resize/crop in the CPU stage, normalise + encode in the actor: the very same
    candidates (scores to the last bit) as ``link_files`` on the thumbnail bytes."""
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.backfill.rows import PENDING, media_from_text
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.factory import ReadyLinker
    from wikivel_bot.linker.link import link_files, model_input_steps, model_side, rules_from_settings

    settings = backfill_settings(wiki, tmp_path, labels)
    store = open_store(settings)
    linker = create_linker(settings.linker.name, settings.linker)
    linker.attach(default_label_set(settings.linker.labels_dir), settings.linker.cache_dir)
    rules = rules_from_settings(settings.linker)
    fetcher = Fetcher(open_site(settings.site), settings.fetch, settings.poll, ("en",), None)
    titles = ["File:Snowy mountain peak.jpg", "File:Lighthouse at dusk.jpg", "File:Black cat on sofa.jpg",
              "File:Red apple.png", "File:Dog in the park.jpg"]
    with ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact) as client:
        rows = stages.resolve([new_row(t) for t in titles], fetcher=fetcher, store=store, worker="backfill:t",
                              identity=("x", "1", "h"))
        rows = stages.download(rows, client.get)
    ready = [dict(r) for r in rows if r["outcome"] == PENDING]
    assert len(ready) == 5
    daemon = link_files(linker, [(media_from_text(r["media"]), r["data"]) for r in ready], rules=rules)

    steps = model_input_steps(linker)
    side = model_side(linker)
    decoded = stages.decode(ready, side, steps.geometry)
    assert {(r["width"], r["height"]) for r in decoded if r["pixels"]} == {(side, side)}  # model-sized
    assert all(len(r["pixels"]) == side * side * 3 for r in decoded if r["pixels"])  # uint8 RGB
    linked = stages.link(decoded, ReadyLinker(linker, rules, None, {}), steps.finish)
    assert [r["outcome"] for r in linked] == [LINKED] * 5
    for row, outcome in zip(linked, daemon):
        assert candidates_from_text(row["candidates"]) == list(outcome.candidates)
    assert sum(len(candidates_from_text(r["candidates"])) for r in linked) > 0
    store.close()


def test_the_budget_caps_downloads_in_flight_and_pauses_everyone() -> None:
    async def scenario() -> dict:
        budget = DownloadBudget(connections=2, mbps=0.0)
        in_flight, peak = 0, 0

        async def one() -> None:
            nonlocal in_flight, peak
            ticket = await budget.acquire()
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            await budget.release(ticket, 1000)

        await asyncio.gather(*(one() for _ in range(6)))
        budget.pause(0.3)
        started = time.monotonic()
        ticket = await budget.acquire()  # waits out the pause
        waited = time.monotonic() - started
        await budget.release(ticket, 0)
        return {"peak": peak, "waited": waited, **budget.report()}

    report = asyncio.run(scenario())
    assert report["peak"] == 2 and report["max_in_flight"] == 2
    assert report["downloads"] == 7 and report["bytes"] == 6000
    assert report["waited"] >= 0.29 and report["pauses"] == 1


def test_the_budget_holds_the_bandwidth() -> None:
    async def scenario() -> float:
        budget = DownloadBudget(connections=2, mbps=0.008)  # 1,000 bytes per second
        ticket = await budget.acquire()
        await budget.release(ticket, 1500)  # 1,000 in the bucket: 500 bytes of debt
        started = time.monotonic()
        ticket = await budget.acquire()
        await budget.release(ticket, 0)
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 0.45


def test_files_with_p180_in_the_dump_are_skipped_without_queueing(wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    from tests.commons_support import file_rows
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site

    settings = backfill_settings(wiki, tmp_path, labels)
    fetcher = Fetcher(open_site(settings.site), settings.fetch, settings.poll, ("en",), None)
    store = open_store(settings)
    rows = [new_row("File:Red apple.png"), new_row("File:Sailing boat at sea.jpg")]
    rows = stages.resolve(rows, fetcher=fetcher, store=store, worker="backfill:t", identity=("a", "b", "c"),
                          depicted={10007})  # Red apple's page id, as the MediaInfo dump would say
    assert rows[0]["outcome"] == "skipped" and rows[0]["reason"].startswith("already depicts:")
    assert rows[1]["outcome"] == "" and rows[1]["media"]  # claimed, fetched, ready to download
    assert set(file_rows(store)) == {"File:Sailing boat at sea.jpg"}
    assert file_rows(store)["File:Sailing boat at sea.jpg"]["claimed_by"] == "backfill:t"
    store.close()


def test_bad_backfill_settings_are_one_line_errors(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    titles = tmp_path / "titles.txt"
    titles.write_text("File:X.jpg\n")
    monkeypatch.setenv("WIKIVEL_BACKFILL_BATCH_SIZE", "500")
    result = CliRunner().invoke(main, ["--db-url", f"sqlite:///{tmp_path / 'q.sqlite'}", "backfill",
                                       "--titles", str(titles)])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: environment variable WIKIVEL_BACKFILL_BATCH_SIZE: "
                                     "backfill.batch_size must be between 1 and 50, not 500")
    result = CliRunner().invoke(main, ["backfill", "--titles", str(tmp_path / "missing.txt")])
    assert result.exit_code == 2 and "missing.txt: no such file" in result.output


def test_uploads_in_a_time_range_are_listed_oldest_first(wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    from datetime import datetime, timezone

    from wikivel_bot.commons.listings import files_uploaded_between
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.errors import UsageError

    site = open_site(backfill_settings(wiki, tmp_path, labels).site)
    since = datetime(2024, 5, 1, 12, 5, tzinfo=timezone.utc)
    until = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)
    found = list(files_uploaded_between(site, since, until))
    assert set(found[:2]) == {"File:Cathedral facade.jpg", "File:Windmill in fields.jpg"}  # 12:10, same second
    assert found[2:] == ["File:Horse in meadow.jpg", "File:Cows grazing.jpg"]  # 12:20, 12:27
    with pytest.raises(UsageError, match="is after --until"):
        list(files_uploaded_between(site, until, since))


def test_an_actor_whose_preprocessing_differs_from_the_drivers_refuses_to_start(wiki, labels, tmp_path):  # noqa: F811
    from wikivel_bot.backfill.pipeline import LinkStage, _linker_identity
    from wikivel_bot.errors import LinkerError

    settings = backfill_settings(wiki, tmp_path, labels)
    _, side, steps = _linker_identity(settings)
    assert steps is not None and "resize" in steps.fingerprint and "mean" in steps.fingerprint
    assert LinkStage(settings, steps.fingerprint).finish is not None  # the driver's own: fine
    with pytest.raises(LinkerError, match="preprocessing on this node differs"):
        LinkStage(settings, steps.fingerprint.replace("bicubic", "bilinear"))


def test_a_stage_failure_names_our_error_whatever_its_class_is_called():
    """Ray hands the driver a stage's exception as traceback text; ours is found in it by its
    module, also when its class name does not end in "Error" (WikiUnreachable)."""
    from wikivel_bot.backfill.raylogs import stage_failure

    text = ("ray::MapBatches(resolve_batch)() (pid=1, ip=192.0.2.2)\n"
            "  File \"stages.py\", line 10, in resolve_batch\n"
            "wikivel_bot.errors.WikiUnreachable: cannot reach http://127.0.0.1:9/w/api.php (connection refused)")
    error = stage_failure(RuntimeError(text), 0)
    assert str(error).startswith("backfill stopped after 0 files: cannot reach http://127.0.0.1:9/w/api.php "
                                 "(connection refused) (run again")
    other = stage_failure(RuntimeError("ray::X()\nValueError: bad row"), 3)
    assert "after 3 files: ValueError: bad row (" in str(other)
