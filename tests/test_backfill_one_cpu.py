"""`wikivel-bot backfill --num-cpus 1` ends (a one-CPU Toolforge job), and combinations of
CPUs and actors that cannot run are one line before Ray starts.

The run starts its own local Ray with one CPU (not the session's two-CPU runtime), against
the local test wiki over HTTP with the tiny random-weight model, with the very command
toolforge/jobs.yaml ships (``--toolforge --num-cpus 1 ...``). Before the actors and tasks
were sized from the CPUs given, the linker actor took the only CPU and the read, download
and decode tasks never got one: the run never ended.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("torch")

from tests.backfill_support import backfill_settings, labels  # noqa: E402,F401
from tests.commons_support import pywikibot_dir, wiki  # noqa: E402,F401
from tests.test_backfill import _cli_config, queue_rows  # noqa: E402
from wikivel_bot.backfill.sizing import size_actors  # noqa: E402
from wikivel_bot.errors import UsageError  # noqa: E402

pytestmark = pytest.mark.slow  # a Ray of its own starts in the run

ROOT = Path(__file__).resolve().parents[1]


def _shipped_backfill_command() -> list:
    import shlex

    import yaml

    jobs = yaml.safe_load((ROOT / "toolforge" / "jobs.yaml").read_text(encoding="utf-8"))
    (job,) = [j for j in jobs if j["name"] == "backfill"]
    return shlex.split(job["command"])


def test_backfill_on_one_cpu_ends_and_links_the_files(wiki, pywikibot_dir, labels, tmp_path):  # noqa: F811
    settings = backfill_settings(wiki, tmp_path, labels)
    config = _cli_config(tmp_path, settings, weights="random")
    titles = tmp_path / "titles.txt"
    real = ["File:Red apple.png", "File:Lighthouse at dusk.jpg", "File:Tiny blue square.png"]
    titles.write_text("\n".join(real) + "\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("RAY_ADDRESS", "RAY_BACKEND_LOG_LEVEL"):
        env.pop(name, None)  # a Ray of its own, as on a one-CPU job
    # The command toolforge/jobs.yaml ships (--toolforge --num-cpus 1 ...), its title list here.
    argv = _shipped_backfill_command()
    argv[argv.index("--titles") + 1] = str(titles)
    assert argv[:2] == ["wikivel-bot", "backfill"] and argv[argv.index("--num-cpus") + 1] == "1", argv
    # The timeout is the failure: before the fix this run never ended.
    done = subprocess.run(
        [sys.executable, "-m", "wikivel_bot", "--config", str(config), *argv[1:]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=420)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "3 files read" and "2 linked" in out and "1 ineligible" in out, done.stdout
    rows = queue_rows(settings)
    assert {title: row["state"] for title, row in rows.items()} == {
        "File:Red apple.png": "linked", "File:Lighthouse at dusk.jpg": "linked",
        "File:Tiny blue square.png": "ineligible"}


def test_actors_and_their_cpu_share_come_from_the_cpus_given() -> None:
    # One CPU: one actor with what the I/O and decode tasks leave of it.
    actors, share = size_actors(cpus=1, gpus=0, asked=0)
    assert actors == 1 and 0 < share < 1
    assert size_actors(cpus=1, gpus=0, asked=1) == (actors, share)
    # Two or more: whole CPUs per actor, one CPU's worth always left to the other stages.
    assert size_actors(cpus=2, gpus=0, asked=0) == (1, 1.0)
    assert size_actors(cpus=8, gpus=0, asked=0) == (4, 1.0)
    assert size_actors(cpus=8, gpus=0, asked=3) == (3, 1.0)
    # More actors than the CPUs hold is refused, naming both numbers, not starved.
    with pytest.raises(UsageError, match=r"4 linker actors .* 2 CPUs"):
        size_actors(cpus=2, gpus=0, asked=4)
    with pytest.raises(UsageError, match=r"2 linker actors .* 1 CPU"):
        size_actors(cpus=1, gpus=0, asked=2)
    # GPUs: one per actor.
    assert size_actors(cpus=1, gpus=2, asked=0) == (2, 0.2)
    with pytest.raises(UsageError, match=r"3 linker actors .* 2 GPUs"):
        size_actors(cpus=8, gpus=2, asked=3)


def test_a_combination_that_cannot_run_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    from tests.test_cli_errors import run_cli

    titles = tmp_path / "titles.txt"
    titles.write_text("File:Red apple.png\n")
    cases = [
        (["--num-cpus", "1", "--actors", "2"], ["2 linker actors cannot run on 1 CPU", "at most 1"]),
        (["--num-cpus", "2", "--address", "auto"], ["--num-cpus 2", "--address auto", "leave out one"]),
    ]
    for args, expected in cases:
        result = run_cli(["backfill", "--titles", str(titles), "--no-progress", *args], tmp_path,
                         {"WIKIVEL_LINKER_DEVICE": "cpu"})
        assert result.returncode != 0, result.stdout
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
        for part in expected:
            assert part in lines[0], (part, lines[0])
