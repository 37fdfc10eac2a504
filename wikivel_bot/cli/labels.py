"""``wikivel-bot labels``: build and inspect hierarchy-aware label sets."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError


@click.group("labels")
def labels() -> None:
    """Build and inspect label sets: the Wikidata items files can be linked to.

    Without a set of your own the starter set shipped with the package is used
    (linker.labels_dir names another).
    """


@labels.command("build")
@click.option("--wikidata-dump", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Wikidata JSON dump (latest-all.json.bz2; .bz2, .gz or plain).")
@click.option("--mediainfo-dump", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Commons MediaInfo JSON dump (commons-YYYYMMDD-mediainfo.json.bz2).")
@click.option("--from-qids", "qids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Keep exactly these items (one QID per line), read from --wikidata-dump or, "
                   "without it, from the Wikidata API (small sets).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write the label set to.")
@click.option("--min-freq", type=ranges.count(0), default=10, show_default=True,
              help="Threshold f: keep items depicted this often, counting descendants within 3 "
                   "hops; rarer ones are replaced by their ancestors (0: every depicted item).")
@click.option("--languages", help="Label language fallback of the linker's text, comma separated (default: "
                                   "site.languages). The languages kept for reviewers are labels.languages.")
@click.option("--aliases/--no-aliases", default=False, show_default=True, help="Also keep aliases.")
@click.option("--workers", type=ranges.workers(),
              help="Parsing processes (default: the CPUs available less one; 1 parses in-process).")
@click.option("--decompressor", type=click.Choice(["auto", "parallel", "stdlib"]), default="auto",
              show_default=True, help="auto: parallel bzip2 (indexed_bzip2) when installed, parallel gzip "
                                      "(rapidgzip) from 4 workers; parallel: always where installed; "
                                      "stdlib: Python's bz2/gzip.")
@click.option("--p31-blocklist", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="More non-depictable classes (QID per line), on top of the shipped list.")
@click.option("--blocklist", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Items never to keep (QID per line).")
@click.option("--allowlist", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Items to keep although their class is non-depictable (QID per line).")
@click.option("--count-files", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Count f on these files only (Commons page ids, one per line, e.g. a dataset's "
                   "splits/train.txt: the paper counts in its training split). Default: the whole dump.")
@click.option("--keep-files", is_flag=True, help="Also store every file's depicts after filtering.")
@click.option("--force", is_flag=True, help="Replace an existing label set in --out.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: when stderr is a terminal).")
@click.pass_obj
def build(obj: CliContext, wikidata_dump: Optional[Path], mediainfo_dump: Optional[Path],
          qids_file: Optional[Path], out_dir: Path, min_freq: int, languages: Optional[str],
          aliases: bool, workers: Optional[int], decompressor: str, p31_blocklist: Optional[Path],
          blocklist: Optional[Path], allowlist: Optional[Path], count_files: Optional[Path],
          keep_files: bool, force: bool, progress: Optional[bool]) -> None:
    """Build a label set from the dumps (or a QID list) and write it to --out.

    \b
    From dumps:     labels build --wikidata-dump latest-all.json.bz2 \\
                      --mediainfo-dump commons-20231107-mediainfo.json.bz2 --min-freq 10 --out DIR
    From a list:    labels build --from-qids items.txt --out DIR
    """
    from wikivel_bot.labels.lists import read_qid_file

    if qids_file is None and (wikidata_dump is None or mediainfo_dump is None):
        raise UsageError("give --wikidata-dump and --mediainfo-dump, or --from-qids FILE")
    if qids_file is not None and mediainfo_dump is not None:
        raise UsageError("--from-qids keeps the listed items; it does not read a MediaInfo dump")
    if count_files is not None and mediainfo_dump is None:
        raise UsageError("--count-files counts depicts statements: it needs --mediainfo-dump")
    from wikivel_bot.cli.paths import check_writable

    check_writable(out_dir)
    langs = _languages(languages, obj)
    common: dict = dict(
        languages=langs,
        display_languages=obj.settings.labels.languages,
        with_aliases=aliases,
        p31_blocklist=read_qid_file(p31_blocklist) if p31_blocklist else (),
        blocklist=read_qid_file(blocklist) if blocklist else (),
        allowlist=read_qid_file(allowlist) if allowlist else (),
    )
    qids = read_qid_file(qids_file) if qids_file else None
    if qids is not None and not qids:
        raise UsageError(f"{qids_file} lists no QIDs")
    show = sys.stderr.isatty() if progress is None else progress
    if qids is not None and wikidata_dump is None:
        from wikivel_bot.labels.wikidata_api import build_from_api
        from wikivel_bot.wikidata.client import WIKIDATA_API

        site = obj.settings.site
        label_set = build_from_api(out_dir, qids, api_url=site.wikidata_api_url or WIKIDATA_API,
                                   contact=site.operator_contact, overwrite=force, **common)
        reports: List[Any] = []
    else:
        from wikivel_bot.labels.build import build_from_dumps
        from wikivel_bot.labels.dump_check import check_dump_start
        from wikivel_bot.labels.lists import read_page_id_file
        from wikivel_bot.labels.parallel import default_workers

        assert wikidata_dump is not None
        check_dump_start(wikidata_dump, "Wikidata", decompressor)
        if mediainfo_dump is not None:
            check_dump_start(mediainfo_dump, "Commons MediaInfo", decompressor)
        count_pages = None
        if count_files is not None:
            count_pages = read_page_id_file(count_files)
            if not count_pages:
                raise UsageError(f"{count_files} lists no page ids")
        result = build_from_dumps(
            out_dir, wikidata_dump=wikidata_dump, mediainfo_dump=mediainfo_dump, qids=qids,
            min_freq=min_freq, workers=workers or default_workers(), decompressor=decompressor,
            progress=show, keep_files=keep_files, overwrite=force, count_pages=count_pages,
            count_source=count_files.name if count_files else "", **common,
        )
        label_set, reports = result.label_set, result.reports
    for report in reports:
        _echo_report(report)
    counts = label_set.manifest["counts"]
    click.echo(
        f"label set: {counts['items']} items (f={label_set.min_freq}); of {counts['inputs']} "
        f"depicted or listed items {counts['inputs_kept']} kept, {counts['inputs_replaced']} "
        f"replaced by ancestors, {counts['inputs_dropped']} dropped"
    )
    for reason, n in counts.get("dropped_by_reason", {}).items():
        click.echo(f"  dropped, {reason}: {n}")
    click.echo(f"f counted on: {counted_on_text(label_set.manifest)}")
    if "files_with_depicts" in counts:
        click.echo(f"files with depicts: {counts['files_with_depicts']}, dropped (no item left): "
                   f"{counts['files_dropped']}")
    click.echo(f"wrote {out_dir} ({label_set.content_hash})")


def counted_on_text(manifest: Any) -> str:
    """Which files the set's depicts counts (and f) were counted on, in words."""
    counted = manifest.get("counted_on") or {}
    kind = counted.get("kind")
    if kind == "files":
        return (f"the {counted.get('files', 0)} files listed in {counted.get('name') or 'a list'} "
                f"({counted.get('files_with_depicts', 0)} with depicts; sha256 {str(counted.get('sha256', ''))[:12]})")
    if kind == "whole dump":
        return "the whole MediaInfo dump (the paper counts in its training split)"
    return str(kind) if kind else "not recorded (built before this was recorded)"


def _languages(option: Optional[str], obj: CliContext) -> Sequence[str]:
    if option:
        langs = [part.strip() for part in option.split(",") if part.strip()]
        if not langs:
            raise UsageError("--languages names no language")
        return tuple(langs)
    return tuple(obj.settings.site.languages)


def _echo_report(report: Any) -> None:
    click.echo(
        f"read {report.kind} dump {Path(report.path).name} ({report.backend}): {report.lines} lines, "
        f"{report.entities} entities, {report.skipped} skipped, {report.malformed} malformed "
        f"in {report.seconds:.1f} s"
    )
    for line_no, error in report.malformed_lines[:5]:
        click.echo(f"  malformed line {line_no}: {error}")
    if report.malformed > 5:
        click.echo(f"  ... and {report.malformed - 5} more malformed lines (all in the manifest's first 20)")


def _open(directory: Optional[Path], obj: CliContext) -> Any:
    from wikivel_bot.labels import default_label_set, load_label_set

    if directory is not None:
        return load_label_set(directory)
    return default_label_set(obj.settings.linker.labels_dir)


@labels.command("info")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.pass_obj
def info(obj: CliContext, directory: Optional[Path], as_json: bool) -> None:
    """Describe a label set (default: the configured one, else the starter set)."""
    label_set = _open(directory, obj)
    manifest = dict(label_set.manifest)
    if as_json:
        click.echo(json.dumps({"path": str(label_set.path), **manifest}, indent=2, sort_keys=True))
        return
    counts = manifest.get("counts", {})
    click.echo(f"label set: {label_set.path}")
    click.echo(f"hash:      {label_set.content_hash}")
    click.echo(f"items:     {len(label_set)} kept, {counts.get('nodes', 0)} known with ancestors")
    click.echo(f"f:         {label_set.min_freq} (counts accumulated over {manifest.get('max_hops')} hops)")
    click.echo(f"counted:   {counted_on_text(manifest)}")
    aliases = " (with aliases)" if manifest.get("with_aliases") else ""
    click.echo(f"languages: {', '.join(label_set.languages)}{aliases}")
    shown = label_set.display_languages
    click.echo(f"reviewers: {', '.join(shown) if shown else 'the languages above only (built before labels.languages)'}")
    for source in manifest.get("sources", []):
        date = f", {source['date']}" if source.get("date") else ""
        click.echo(f"source:    {source.get('kind')}: {source.get('name')}{date}")
    if counts.get("inputs"):
        click.echo(f"input:     {counts['inputs']} items: {counts['inputs_kept']} kept, "
                   f"{counts['inputs_replaced']} replaced, {counts['inputs_dropped']} dropped")
    if "files_with_depicts" in counts:
        click.echo(f"files:     {counts['files_with_depicts']} with depicts, {counts['files_dropped']} dropped")
    categories = ", ".join(f"{k} {v}" for k, v in sorted(manifest.get("super_categories", {}).items(),
                                                          key=lambda kv: -kv[1]))
    click.echo(f"super-categories: {categories}")
    click.echo(f"built:     {manifest.get('built_at')} by {manifest.get('built_by')}")
    # Whether the safety rules can tell an instance of human from a subclass (core/safety.py).
    click.echo("P31:       " + ("stored (instance of)" if label_set.has_instance_of else
                                "not stored: built before instance-of data; the named-people rule "
                                "falls back to the P31/P279 closure (rebuild to refine)"))
    # Whether "under a class" reaches the top of the graph, and people without P31 are known.
    click.echo("parents:   " + ("stored up to the top of P31/P279 (the safety rules' classes at any depth)"
                                if label_set.has_parents else
                                "not stored: built before them; the safety rules follow the 3-hop "
                                "table's parents (rebuild for the whole graph)"))
    click.echo("people without P31: " + ("recognised by P21/P569/P570/P106" if label_set.has_person_properties
                                         else "unknown: built before person properties (rebuild)"))


@labels.command("lookup")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.argument("qid")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def lookup(directory: Path, qid: str, as_json: bool) -> None:
    """What the label set in DIRECTORY says about item QID: for a kept item its texts,
    ancestors by hop, counts and super-category; for a depicted item that was not kept the
    items that replaced it, or why it was dropped."""
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.labels.lookup import explain, format_explanation

    result = explain(load_label_set(directory), qid)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else format_explanation(result))
