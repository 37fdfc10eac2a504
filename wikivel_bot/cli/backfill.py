"""``wikivel-bot backfill``: the linker over existing Commons files, on Ray Data.

Thin: parse options into :class:`~wikivel_bot.backfill.sources.Sources` and settings
overrides, call :func:`~wikivel_bot.backfill.pipeline.run_backfill`, print its summary.
Ray, torch and pywikibot load only when the command runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.poll import parse_since
from wikivel_bot.errors import UsageError


@click.command("backfill")
@click.option("--titles", "titles_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="File with one File: title per line (.gz/.bz2 too; the dumps' ns-6 title list works; "
                   "a file named *-image.sql[.gz] is read as --image-dump). Repeatable.")
@click.option("--image-dump", "image_dumps", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The image table SQL dump (commonswiki-YYYYMMDD-image.sql.gz): its images (bitmaps, drawings). Repeatable.")
@click.option("--category", default="", help="Backfill the files of this category.")
@click.option("--depth", type=ranges.count(0, 100), default=0, show_default=True,
              help="Levels of subcategories to include with --category.")
@click.option("--since", metavar="TIMESTAMP", help="All files uploaded from this time on (2024-05-01T08:00:00Z).")
@click.option("--until", metavar="TIMESTAMP", help="All files uploaded up to this time.")
@click.option("--mediainfo-dump", type=click.Path(dir_okay=False, path_type=Path),
              help="Commons MediaInfo JSON dump: files with P180 there are skipped.")
@click.option("--address", default="", help="Join this Ray cluster (e.g. ray://head:10001 or auto); default: start Ray here.")
@click.option("--num-cpus", type=ranges.workers(), help="CPUs of a local Ray (default: all).")
@click.option("--actors", type=ranges.count(1, 1024), help="Linker actors (backfill.actors).")
@click.option("--toolforge", is_flag=True, help="Running on Toolforge: the media robot-policy limits do not apply (backfill.toolforge).")
@click.option("--run-name", help="Name of this run; restart a killed run under the same name (backfill.run_name).")
@click.option("--parquet-dir", type=click.Path(file_okay=False), help="Also write candidates as Parquet shards here (backfill.parquet_dir).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.option("--no-progress", is_flag=True, help="No Ray Data progress bars.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def backfill(obj: CliContext, titles_files: Tuple[Path, ...], image_dumps: Tuple[Path, ...], category: str, depth: int, since: Optional[str],
             until: Optional[str], mediainfo_dump: Optional[Path], address: str, num_cpus: Optional[int],
             actors: Optional[int], toolforge: bool, run_name: Optional[str], parquet_dir: Optional[str],
             weights: Optional[str], no_progress: bool, as_json: bool) -> None:
    """Link existing files and queue the candidates for review, on Ray Data: read the
    titles, apply the daemon's eligibility rules, download thumbnails within Wikimedia's
    robot policy (unless --toolforge), decode, link in an actor pool (a GPU per actor where
    the cluster has GPUs) and write the candidates to the queue. Files already linked by the
    same linker and label set are skipped; rejected pairs are never proposed again; a run
    killed at any point resumes when started again with the same --run-name."""
    if address and num_cpus is not None:
        raise UsageError(f"--num-cpus {num_cpus} sizes a Ray started here; with --address {address} the "
                         "cluster's own CPUs count: leave out one of them")
    for key, value in (("actors", actors), ("run_name", run_name), ("parquet_dir", parquet_dir)):
        if value is not None:
            obj.overrides[("backfill", key)] = value
    if toolforge:
        obj.overrides[("backfill", "toolforge")] = True
    if weights:
        # As `suggest`, `link` and `run` apply it: the driver and every actor read linker.weights.
        obj.overrides[("linker", "weights")] = weights
    from wikivel_bot.backfill.imagedump import is_image_dump
    from wikivel_bot.backfill.sources import Sources

    dumps = tuple(str(p) for p in image_dumps) + tuple(str(p) for p in titles_files if is_image_dump(str(p)))
    sources = Sources(
        titles_files=tuple(str(p) for p in titles_files if not is_image_dump(str(p))), image_dumps=dumps,
        category=category, depth=depth,
        since=parse_since(since), until=parse_since(until),
        mediainfo_dump=str(mediainfo_dump) if mediainfo_dump else "",
    )
    sources.check()
    settings = obj.settings
    from wikivel_bot.backfill.pipeline import run_backfill

    result = run_backfill(settings, sources, address=address, num_cpus=num_cpus, progress=not no_progress,
                          ray_logs=obj.verbose > 0)
    if as_json:
        click.echo(json.dumps({**result.counters.as_dict(), "media": result.media,
                               "seconds": round(result.seconds, 3), "shards": result.shards,
                               "notes": result.notes}))
    else:
        for line in result.lines():
            click.echo(line)
