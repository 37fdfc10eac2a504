"""``wikivel-bot suggest``: ranked depicts suggestions for images, without touching the queue."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.liveeval import calibrated_option
from wikivel_bot.config import LinkerSettings, Settings
from wikivel_bot.errors import UsageError
from wikivel_bot.types import Depiction, MediaFile, is_qid


def read_sources(
    sources: Sequence[str],
    settings: Settings,
    *,
    depicts: Sequence[str] = (),
    description: str = "",
    categories: Sequence[str] = (),
) -> List[Tuple[MediaFile, bytes]]:
    """The image source of ``suggest``: (file, image bytes) for each argument.

    A local path is read here (``--depicts``, ``--description`` and ``--category`` describe
    it, as a local file has no page); ``File:X.jpg``, Commons URLs and pywikibot generator
    arguments (``-cat:...``) go to the Commons fetcher in ``wikivel_bot.commons``.

    :raises UsageError: a path that does not exist, or Commons inputs while the fetcher is
        not available.
    """
    local: List[Tuple[MediaFile, bytes]] = []
    remote: List[str] = []
    for source in sources:
        path = Path(source).expanduser()
        if path.is_file():
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise UsageError(f"cannot read {path}: {exc.strerror}") from None
            media = MediaFile(
                page_id=0,
                title=path.name,
                description=description,
                categories=tuple(categories),
                depicts=tuple(Depiction(q) for q in depicts),
            )
            local.append((media, data))
        elif source.startswith("--"):
            raise UsageError(f"no such option: {source} (see wikivel-bot suggest --help)")
        elif source.startswith(("File:", "file:", "http://", "https://", "-")):
            remote.append(source)
        else:
            raise UsageError(f"no such image file: {source} (or give File:Name.jpg, a Commons URL, or -cat:...)")
    if not remote:
        return local
    return local + list(_from_commons(remote, settings))


def _from_commons(sources: Sequence[str], settings: Settings) -> Any:
    from wikivel_bot.commons import suggest_sources

    return suggest_sources(sources, settings)


# Unknown options pass through as sources: pywikibot generator arguments look like
# options (-cat:Cats, -search:...); read_sources rejects what is neither.
@click.command("suggest", context_settings={"ignore_unknown_options": True})
@click.argument("sources", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--top", "top_k", type=click.IntRange(min=1), help="Candidates per file (linker.top_k).")
@click.option("--linker", "linker_name", help="Linker variant, see `wikivel-bot linkers` (linker.name).")
@click.option("--labels", "labels_dir", help="Label set directory (linker.labels_dir; default: starter set).")
@click.option("--model", help="open_clip architecture, or a model config JSON (linker.model).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.option("--checkpoint", help="Trained head checkpoint (linker.checkpoint).")
@click.option("--device", help="auto, cpu, cuda, cuda:N (linker.device).")
@click.option("--depicts", multiple=True, help="QID a local file already depicts (repeatable).")
@click.option("--description", default="", help="Description of a local file (read by fusion).")
@click.option("--category", "categories", multiple=True, help="Category of a local file (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@calibrated_option
@click.pass_obj
def suggest(
    obj: CliContext,
    sources: Tuple[str, ...],
    top_k: Optional[int],
    linker_name: Optional[str],
    labels_dir: Optional[str],
    model: Optional[str],
    weights: Optional[str],
    checkpoint: Optional[str],
    device: Optional[str],
    depicts: Tuple[str, ...],
    description: str,
    categories: Tuple[str, ...],
    as_json: bool,
    calibrated: Optional[str] = None,
) -> None:
    """Suggest depicts items for SOURCES: local image paths, File:Name.jpg, Commons URLs or
    pywikibot generator arguments. Prints rank, QID, label, description, score and the
    ranking notes; nothing is queued or written."""
    for qid in depicts:
        if not is_qid(qid):
            raise UsageError(f"--depicts {qid!r} is not a QID (like Q146)")
    overrides: Dict[str, Any] = {
        "name": linker_name, "labels_dir": labels_dir, "model": model, "weights": weights,
        "checkpoint": checkpoint, "device": device,
    }
    settings: LinkerSettings = dataclasses.replace(
        obj.settings.linker, **{k: v for k, v in overrides.items() if v is not None}
    )
    files = read_sources(sources, obj.settings, depicts=depicts, description=description, categories=categories)
    from wikivel_bot.labels import default_label_set

    label_set = default_label_set(settings.labels_dir)
    calibration = None
    calibrated = calibrated or obj.settings.linker.calibrated or None
    if calibrated:  # read before linking: a bad thresholds file fails fast
        from wikivel_bot.liveeval.thresholds import filter_for

        calibration = filter_for(calibrated, lambda: label_set)

    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.link import Linked, link_files, rules_from_settings

    linker = create_linker(settings.name, settings, cascade=obj.settings.cascade)
    index = linker.attach(label_set, settings.cache_dir, progress=not as_json)
    outcomes = link_files(linker, files, rules=rules_from_settings(settings, top_k))
    if calibration is not None:
        from wikivel_bot.liveeval.apply import filter_outcomes

        outcomes = filter_outcomes(outcomes, calibration)
    if as_json:
        doc = _as_json(linker.description, label_set, index, outcomes)
        if calibration is not None:
            doc["calibrated"] = {"thresholds": calibrated, "kept": calibration.kept, "left_out": calibration.removed,
                                 "summary": calibration.summary()}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        _print_table(linker.description, outcomes)
        if calibration is not None:
            click.echo("")
            click.echo(calibration.summary())
    if any(not isinstance(o, Linked) for o in outcomes):
        click.get_current_context().exit(1)


def _as_json(description: Any, label_set: Any, index: Any, outcomes: Sequence[Any]) -> dict:
    files = []
    for outcome in outcomes:
        entry: dict = {"title": outcome.media.title}
        if hasattr(outcome, "candidates"):
            entry["ok"] = True
            entry["candidates"] = [
                {
                    "rank": c.rank, "qid": c.qid, "label": c.evidence.get("label", ""),
                    "description": c.evidence.get("description", ""), "score": c.score,
                    "notes": c.evidence.get("notes", []),
                    **({"alpha": c.alpha} if c.alpha is not None else {}),
                    **({"probability": c.probability} if c.probability is not None else {}),
                }
                for c in outcome.candidates
            ]
            entry["dropped"] = [{"qid": d.qid, "score": round(d.score, 6), "reason": d.reason} for d in outcome.ranking.dropped]
        else:
            entry["ok"] = False
            entry["reason"] = outcome.reason
        files.append(entry)
    return {
        "linker": dataclasses.asdict(description),
        "random_weights": description.random_weights,
        "warnings": list(description.warnings),
        "label_set": {"hash": label_set.content_hash, "items": len(label_set.qids)},
        "index": {"path": index.path, "reused": index.reused},
        "files": files,
    }


def _print_table(description: Any, outcomes: Sequence[Any]) -> None:
    from wikivel_bot.core.review_rules import format_signals

    click.echo(f"linker: {description.version} on {description.device}")
    for warning in description.warnings:
        click.echo(f"WARNING: {warning}")
    for outcome in outcomes:
        click.echo("")
        click.echo(f"{outcome.media.title}")
        if not hasattr(outcome, "candidates"):
            click.echo(f"  not linked: {outcome.reason}")
            continue
        if not outcome.candidates:
            click.echo("  (no suggestions left after the ranking rules)")
            continue
        click.echo(f"  {'rank':>4}  {'QID':<11} {'label':<24} {'description':<32} {'score':>7}  notes")
        for c in outcome.candidates:
            label = _cut(str(c.evidence.get("label", "")), 24)
            text = _cut(str(c.evidence.get("description", "")), 32)
            signals = format_signals(c.alpha, c.probability)  # cascade: P(match), image/text shares
            notes = "; ".join([signals] * bool(signals) + list(c.evidence.get("notes", [])))
            click.echo(f"  {c.rank:>4}  {c.qid:<11} {label:<24} {text:<32} {c.score:>7.4f}  {notes}".rstrip())
    if description.random_weights:
        click.echo("")
        click.echo("(random weights: these suggestions are meaningless)")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
