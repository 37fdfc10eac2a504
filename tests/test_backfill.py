"""`wikivel-bot backfill` on a real local Ray (2 CPUs, one runtime for the session) against
the local test wiki over real HTTP, with the tiny random-weight model: sources, eligibility,
corrupt files, a second run, 429 + Retry-After, and kill -9 then resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

pytest.importorskip("ray")
pytest.importorskip("torch")

from tests.backfill_support import backfill_settings, labels, ray_runtime  # noqa: E402,F401
from tests.commons_support import fixture_titles, pywikibot_dir, wiki  # noqa: E402,F401
from wikivel_bot.backfill.pipeline import open_store, run_backfill  # noqa: E402
from wikivel_bot.backfill.sources import Sources  # noqa: E402

pytestmark = pytest.mark.slow  # Ray, workers and the model's actor start in each run

ROOT = Path(__file__).resolve().parents[1]
# Fixture files and what the daemon's rules make of them (tests/testwiki/README.md).
EXPECTED = {
    "File:Snowy mountain peak.jpg": "linked",
    "File:Lighthouse at dusk.jpg": "linked",
    "File:Black cat on sofa.jpg": "linked",
    "File:Red apple.png": "linked",
    "File:Truncated upload.jpg": "unavailable",
    "File:Decompression bomb.png": "unavailable",
    "File:Tiny blue square.png": "ineligible",
    "File:Nobots example.jpg": "ineligible",
    "File:Protected logo.png": "ineligible",
    "File:Annual report 2023.pdf": "unavailable",
    "File:Cat and dog together.jpg": "ineligible",
}


def queue_rows(settings) -> Dict[str, Dict[str, object]]:
    from tests.commons_support import file_rows

    store = open_store(settings)
    try:
        return file_rows(store)
    finally:
        store.close()


def candidate_pairs(settings) -> List[tuple]:
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files

    store = open_store(settings)
    try:
        with store.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(
                select(files.c.title, candidates.c.qid, candidates.c.score, candidates.c.rank, candidates.c.linker)
                .join(files, files.c.id == candidates.c.file_id).order_by(files.c.title, candidates.c.rank))]
    finally:
        store.close()


def test_title_list_backfill_matches_the_daemon_and_a_second_run_adds_nothing(
        wiki, pywikibot_dir, ray_runtime, labels, tmp_path):  # noqa: F811
    titles = tmp_path / "titles.txt"
    # Underscores, a missing prefix, a blank line, a comment and a deleted file are all fine.
    lines = list(EXPECTED) + ["Dog_in_the_park.jpg", "", "# a comment", "File:Deleted after upload.jpg"]
    titles.write_text("\n".join(lines) + "\n")
    settings = backfill_settings(wiki, tmp_path, labels)
    first = run_backfill(settings, Sources(titles_files=(str(titles),)), progress=False)

    rows = queue_rows(settings)
    for title, state in EXPECTED.items():
        assert rows[title]["state"] == state, (title, rows[title])
    assert rows["File:Dog in the park.jpg"]["state"] == "linked"
    assert rows["File:Truncated upload.jpg"]["reason"].startswith("corrupt:")
    assert rows["File:Decompression bomb.png"]["reason"].startswith("decompression bomb:")
    assert rows["File:Nobots example.jpg"]["reason"].startswith("bots excluded:")
    assert rows["File:Cat and dog together.jpg"]["reason"].startswith("already depicts:")
    assert "File:Deleted after upload.jpg" not in rows
    counters = first.counters
    assert counters.read == len(EXPECTED) + 2  # the blank line and the comment are no files
    assert counters.linked == 5 and counters.candidates > 0
    assert counters.skipped == {"no such file": 1}
    assert counters.unavailable == {"corrupt": 1, "decompression bomb": 1, "not an image": 1}
    assert counters.ineligible == {"too small": 1, "bots excluded": 1, "protected": 1, "already depicts": 1}
    assert first.media["max_in_flight"] <= 2  # the robot policy's total concurrency
    assert all(not r["claimed_by"] for r in rows.values())
    pairs = candidate_pairs(settings)
    assert len(pairs) == counters.candidates and len({(t, q) for t, q, *_ in pairs}) == len(pairs)

    # The daemon's link path on a second queue gives the very same candidates.
    (tmp_path / "daemon").mkdir()
    daemon = backfill_settings(wiki, tmp_path / "daemon", labels)
    _daemon_link(daemon, [t for t, s in EXPECTED.items() if s == "linked"] + ["File:Dog in the park.jpg"])
    assert sorted(candidate_pairs(daemon)) == sorted(pairs)

    second = run_backfill(settings, Sources(titles_files=(str(titles),)), progress=False)
    assert second.counters.linked == 0 and second.counters.candidates == 0
    assert second.counters.skipped["already linked"] == 5
    assert second.counters.skipped["already settled"] == 7
    assert second.counters.read == counters.read
    assert candidate_pairs(settings) == pairs


def _daemon_link(settings, titles: List[str]) -> None:
    """Queue ``titles`` and run the daemon's fetch and link stages on them until done."""
    from wikivel_bot import pipeline
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.generators import uploads_of
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.commons.providers import item_image_source
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.link import link_files

    site = open_site(settings.site)
    store = open_store(settings)
    store.enqueue(list(uploads_of(site, titles)))
    ready = build_ready_linker(settings, default_label_set(settings.linker.labels_dir),
                               item_images=item_image_source(settings, site))
    linker, rules = ready.linker, ready.rules
    with ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact) as client:
        fetcher = Fetcher.from_settings(site, settings, client)
        while True:
            fetched = pipeline.fetch_pending(store, fetcher, 50, "daemon-test")
            linked = pipeline.link_pending(
                store, client, lambda f, r: link_files(linker, f, rules=rules, rejected=r), 50, "daemon-test")
            if fetched.claimed == 0 and linked.claimed == 0:
                break
    store.close()


def test_category_to_a_depth_and_a_429_with_retry_after_is_honoured(
        wiki, pywikibot_dir, ray_runtime, labels, tmp_path):  # noqa: F811
    from wikivel_bot.commons.listings import category_files
    from wikivel_bot.commons.site import open_site

    _categorise(wiki, "Category:Backfill animals", "")
    _categorise(wiki, "Category:Cats", "Backfill animals")
    _categorise(wiki, "Category:Black cats", "Backfill animals")
    _categorise(wiki, "Category:Black cats", "Cats")  # a file reachable twice is read once
    settings = backfill_settings(wiki, tmp_path, labels, parquet_dir=str(tmp_path / "shards"))
    site = open_site(settings.site)
    assert list(category_files(site, "Backfill animals", 0)) == []
    members = sorted(category_files(site, "Category:Backfill animals", 1))
    assert members == ["File:Black cat on sofa.jpg", "File:Nobots example.jpg",
                       "File:Overwritten photo.jpg", "File:Truncated upload.jpg"]
    target = "File:Overwritten photo.jpg"
    wiki.faults.add("thumb", "http429", retry_after=2, title=target)
    since = time.time()
    result = run_backfill(settings, Sources(category="Backfill animals", depth=1), progress=False)

    counters = result.counters
    assert counters.read == 4 and counters.linked == 2
    assert counters.unavailable == {"corrupt": 1} and counters.ineligible == {"bots excluded": 1}
    media = [r for r in wiki.requests if r.at >= since and "Overwritten_photo" in r.path]
    assert [r.status for r in media] == [429, 200]
    assert media[1].at - media[0].at >= 2.0  # Retry-After: 2, not the 1 s back-off
    assert result.media["pauses"] >= 1 and result.media["paused_s"] >= 1.9
    assert all(r.user_agent.startswith("wikivel-bot/") and "User:Wikivel_operator" in r.user_agent
               for r in wiki.requests if r.at >= since and r.path.startswith("/thumb/"))
    assert queue_rows(settings)[target]["state"] == "linked"
    # The Parquet shards hold exactly the candidates the queue took.
    import pyarrow.parquet as pq

    shards = [pq.read_table(path).to_pylist() for path in result.shards]
    in_shards = sorted((r["title"], r["qid"]) for shard in shards for r in shard)
    assert in_shards == sorted((t, q) for t, q, *_ in candidate_pairs(settings)) and in_shards


def _categorise(wiki, title: str, parent: str) -> None:  # noqa: F811
    """Put the category page ``title`` into ``parent`` (creating the page when needed)."""
    text = f"[[Category:{parent}]]" if parent else "A category."
    page = wiki.store.page(title)
    if page is None:
        wiki.store.create_page(title, text)
    else:
        old = page.revisions[-1].slots["main"][1]
        wiki.store.add_revision(page, {"main": ("wikitext", f"{old}\n{text}")}, user="Admin", comment="")


def test_kill_minus_9_mid_run_then_resume_links_every_file_exactly_once(
        wiki, pywikibot_dir, ray_runtime, labels, tmp_path):  # noqa: F811
    # The held file comes first: its block is resolved (and claimed) before any other is
    # linked, so the kill always finds it claimed; the later blocks get linked meanwhile.
    good = ["File:Lake in the mountains.jpg", "File:Snowy mountain peak.jpg", "File:Lighthouse at dusk.jpg",
            "File:Red apple.png", "File:Castle on a hill.jpg", "File:Sailing boat at sea.jpg",
            "File:Windmill in fields.jpg", "File:Horse in meadow.jpg", "File:Owl on branch.jpg"]
    held = good[0]
    titles = tmp_path / "titles.txt"
    titles.write_text("\n".join(good) + "\n")
    settings = backfill_settings(wiki, tmp_path, labels)
    config = tmp_path / "wikivel.toml"
    config.write_text(
        f'[db]\nurl = "{settings.db.url}"\n'
        f'[site]\napi_url = "{wiki.api_url}"\noperator_contact = "{settings.site.operator_contact}"\n'
        f'[fetch]\ntimeout_s = 300.0\n'
        f'[linker]\nmodel = "{settings.linker.model}"\npretrained = ""\nweights = "random"\ndevice = "cpu"\n'
        f'batch_size = 8\nlabels_dir = "{settings.linker.labels_dir}"\ncache_dir = "{settings.linker.cache_dir}"\n'
        f'[backfill]\nactors = 1\nbatch_size = 3\n'  # several blocks: the held one stalls only its own
    )
    # The held file's thumbnail does not come until the server stops: the run cannot end.
    wiki.faults.add("thumb", "timeout", seconds=600, title=held)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(tmp_path / "run1.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wikivel_bot", "--config", str(config), "backfill", "--titles", str(titles),
             "--address", ray_runtime, "--no-progress"],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            linked_before = _wait_for_linked(settings, proc, tmp_path / "run1.log", held)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert held not in linked_before and 1 <= len(linked_before) < len(good)
    rows = queue_rows(settings)
    assert rows[held]["claimed_by"] == "backfill:default"  # what the kill left behind
    wiki.faults.clear()

    seen: List[dict] = []
    resumed = run_backfill(settings, Sources(titles_files=(str(titles),)), progress=False, on_rows=seen.extend)
    linked_now = [r["title"] for r in seen if r["outcome"] == "linked"]
    assert sorted(linked_now) == sorted(set(good) - linked_before)  # each once, none again
    assert resumed.counters.skipped["already linked"] == len(linked_before)
    rows = queue_rows(settings)
    assert all(rows[t]["state"] == "linked" and not rows[t]["claimed_by"] for t in good)
    pairs = candidate_pairs(settings)
    assert len({(t, q) for t, q, *_ in pairs}) == len(pairs)


def _wait_for_linked(settings, proc, log_path: Path, held: str) -> set:
    """Titles linked so far, once at least one is and ``held`` is claimed (the run is then
    mid-way: the held file's block waits for its thumbnail)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("the backfill ended early:\n" + log_path.read_text()[-3000:])
        try:
            rows = queue_rows(settings)
        except Exception:  # noqa: BLE001 - the run may not have created rows yet
            rows = {}
        linked = {t for t, r in rows.items() if r["state"] == "linked"}
        if linked and rows.get(held, {}).get("claimed_by"):
            return linked
        time.sleep(0.2)
    raise AssertionError("nothing was linked in 300 s:\n" + log_path.read_text()[-3000:])


# -- the command speaks like the rest (its options, one-line errors, no Ray noise on the terminal) --


def _cli_config(tmp_path: Path, settings, *, weights: str = "", api_url: str = "") -> Path:
    """A config file for ``settings`` (``weights`` left out unless given: the option sets it)."""
    config = tmp_path / "cli.toml"
    config.write_text(
        f'[db]\nurl = "{settings.db.url}"\n'
        f'[site]\napi_url = "{api_url or settings.site.api_url}"\n'
        f'operator_contact = "{settings.site.operator_contact}"\n'
        f'[linker]\nmodel = "{settings.linker.model}"\npretrained = ""\ndevice = "cpu"\n'
        + (f'weights = "{weights}"\n' if weights else "")
        + f'batch_size = 8\nlabels_dir = "{settings.linker.labels_dir}"\ncache_dir = "{settings.linker.cache_dir}"\n'
        f'[backfill]\nactors = 1\n'
    )
    return config


def _run_cli(config: Path, ray_address: str, *args: str) -> subprocess.CompletedProcess:
    """``wikivel-bot backfill`` in its own process (Ray's C++ core writes to the process's
    stderr, which only a real process shows), joining the session's Ray."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RAY_BACKEND_LOG_LEVEL", None)  # what an operator's shell has: nothing
    return subprocess.run(
        [sys.executable, "-m", "wikivel_bot", "--config", str(config), "backfill", *args,
         "--address", ray_address, "--no-progress"],
        cwd=config.parent, env=env, capture_output=True, text=True, timeout=600)


def test_backfill_takes_weights_skips_comments_and_keeps_rays_lines_off_the_terminal(
        wiki, pywikibot_dir, ray_runtime, labels, tmp_path):  # noqa: F811
    settings = backfill_settings(wiki, tmp_path, labels)
    config = _cli_config(tmp_path, settings)  # no linker.weights: --weights must supply them
    titles = tmp_path / "titles.txt"
    real = ["File:Red apple.png", "Lighthouse_at_dusk.jpg", "File:Tiny blue square.png"]
    titles.write_text("# files to try first\n\n" + "\n".join(real) + "\n   \n  # indented comment\n")

    refused = _run_cli(config, ray_runtime, "--titles", str(titles))
    assert refused.returncode != 0
    # The message points to --weights random, and backfill now takes it.
    assert refused.stderr.startswith("error: ") and "--weights random" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1, refused.stderr

    done = _run_cli(config, ray_runtime, "--titles", str(titles), "--weights", "random")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[0] == f"{len(real)} files read"  # comments and blank lines are not files
    assert "not a title" not in done.stdout and "0 skipped" in out
    assert "2 linked" in out and "1 ineligible" in out
    # Ray's own lines (core_worker.cc on actor arguments in the object store, the raylet's,
    # the workers' forwarded output) stay off the terminal; what is left is ours.
    noise = [line for line in done.stderr.splitlines()
             if "core_worker" in line or "(raylet)" in line or "(pid=" in line or " E " in line[:40]]
    assert noise == [], done.stderr
    rows = queue_rows(settings)
    assert rows["File:Red apple.png"]["state"] == "linked" and len(rows) == len(real)


def test_a_stage_that_fails_on_ray_ends_the_run_with_one_line(
        wiki, pywikibot_dir, ray_runtime, labels, tmp_path):  # noqa: F811
    import socket

    settings = backfill_settings(wiki, tmp_path, labels)
    with socket.socket() as sock:  # a port nothing listens on: the resolve stage's wiki is gone
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/w/api.php"
    config = _cli_config(tmp_path, settings, weights="random", api_url=dead)
    titles = tmp_path / "titles.txt"
    titles.write_text("File:Red apple.png\n")
    failed = _run_cli(config, ray_runtime, "--titles", str(titles))
    assert failed.returncode != 0
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "backfill stopped after 0 files" in errors[0], failed.stderr
    assert f"cannot reach {dead}" in errors[0]  # the stage's own error, not Ray's "UDF failed"
    # Nothing else: no traceback, no Ray Data error lines with their abbreviated stack.
    assert failed.stderr.splitlines() == errors, failed.stderr


def test_a_category_that_does_not_exist_is_an_error_and_an_empty_one_is_said(
        wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    settings = backfill_settings(wiki, tmp_path, labels)
    config = _cli_config(tmp_path, settings, weights="random")
    runner = CliRunner()
    missing = runner.invoke(main, ["--config", str(config), "backfill", "--category", "No_such_category",
                                   "--no-progress"])
    assert missing.exit_code == 2  # a usage error, as for a missing --titles file
    lines = [line for line in missing.output.splitlines() if line.strip()]
    assert lines == ["error: --category No_such_category: Category:No such category does not exist"], missing.output

    wiki.store.create_page("Category:Backfill nothing here", "A category without files.")
    empty = runner.invoke(main, ["--config", str(config), "backfill", "--category", "Backfill nothing here",
                                 "--no-progress", "--json"])
    assert empty.exit_code == 0, empty.output
    import json

    summary = json.loads(empty.output)
    assert summary["read"] == 0 and summary["notes"] == ["Category:Backfill nothing here has no files"]
    plain = runner.invoke(main, ["--config", str(config), "backfill", "--category", "Backfill nothing here",
                                 "--depth", "2", "--no-progress"])
    assert plain.exit_code == 0, plain.output
    assert plain.output.splitlines()[0] == ("Category:Backfill nothing here has no files "
                                            "(subcategories to depth 2 included)")
