"""``wikivel-bot linkers``: the registry of linker variants (no torch needed), and the
precision parity check (``--check-precision``, which loads the configured model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Optional

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".tif", ".tiff", ".bmp")


@click.command("linkers")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--check-precision", is_flag=True,
              help="Compare bf16 and int8 with fp32 for the configured linker on this machine "
                   "(top-10 identical on >= 95% of images, cosine >= 0.999), time each against fp32, "
                   "and record the verdicts: linker.precision = auto then uses the fastest precision "
                   "that passed (at least 1.1x fp32), else fp32. bf16 is checked only on a CPU with "
                   "bf16 instructions.")
@click.option("--images", "images_dir", type=click.Path(file_okay=False, path_type=Path),
              help="With --check-precision: a directory of sample images (default: 64 synthetic ones).")
@click.option("--items", type=ranges.count(10, 10**7), default=5000, show_default=True,
              help="With --check-precision: label-set items to encode per precision.")
@click.pass_obj
def linkers(obj: CliContext, as_json: bool, check_precision: bool, images_dir: Optional[Path], items: int) -> None:
    """List the linker variants (--linker NAME, setting linker.name) and what they need; with
    --check-precision, check the encoder precisions against fp32 instead."""
    if check_precision:
        _check_precision(obj, images_dir, items, as_json)
        return
    if images_dir is not None:
        raise UsageError("--images is only used with --check-precision")
    from wikivel_bot.linker.spec import list_linkers

    specs = list_linkers()
    if as_json:
        click.echo(json.dumps([{**s.as_dict(), "kind": s.kind, "source": s.source} for s in specs], indent=2))
        return
    for spec in specs:
        needs = "torch + CLIP weights" if spec.kind == "clip" else "label set only"
        if spec.has_head:
            needs += "; a trained --checkpoint (without one: untrained head)"
        click.echo(f"{spec.name:<12} {spec.architecture:<17} v{spec.version}  needs {needs}")
        click.echo(f"{'':<12} {spec.description}")
    from wikivel_bot.linker.backbone.backbones import BACKBONES

    click.echo("")
    click.echo("backbones (linker.model / linker.pretrained; linker.precision = auto | fp32 | bf16 | int8):")
    for choice in BACKBONES:
        click.echo(f"  {choice.model:<15} {choice.pretrained:<18} {choice.note}")


def _read_images(images_dir: Path) -> List[bytes]:
    if not images_dir.is_dir():
        raise UsageError(f"--images {images_dir}: no such directory")
    files = sorted(p for p in images_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise UsageError(f"--images {images_dir}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    return [p.read_bytes() for p in files]


def _check_precision(obj: CliContext, images_dir: Optional[Path], items: int, as_json: bool) -> None:
    from wikivel_bot.linker.backbone import precision as prec
    from wikivel_bot.linker.backbone.encoders import resolve_device
    from wikivel_bot.linker.parity import check_precisions, synthetic_images
    from wikivel_bot.linker.spec import get_spec

    settings = obj.settings.linker
    if get_spec(settings.name).kind != "clip":
        raise UsageError(f"linker {settings.name} has no model: there is no precision to check")
    images = _read_images(images_dir) if images_dir is not None else synthetic_images()
    device = resolve_device(settings.device).type
    skipped = ""
    if device == "cuda":
        precisions = ["bf16"]
    elif prec.bf16_flag(prec.cpu_flags()):
        precisions = ["bf16", "int8"]
    else:
        # Emulated bf16 is several times slower than fp32 (7x on an AVX2-only EPYC), and
        # checking it would take that long over the items too: auto never picks it here.
        precisions, skipped = ["int8"], "bf16 not checked: this CPU has no bf16 instructions (it would run emulated)"
    results = check_precisions(obj.settings.linker, obj.label_set(), images, precisions=precisions, items=items)
    # The verdict belongs to this backbone's identity (as the linker computes it).
    key = _check_key(obj, device)
    path = prec.write_verdicts(settings.cache_dir, key, {r.precision: r.verdict for r in results})
    choice = prec.choose("auto", device, verdicts=prec.read_verdicts(settings.cache_dir, key))
    random_weights = settings.weights == "random"
    if as_json:
        click.echo(json.dumps({
            "model": settings.model, "device": device, "cpu": prec.cpu_model(),
            "flags": prec.named_flags(prec.cpu_flags()), "random_weights": random_weights,
            "results": [{"precision": r.precision, "files": r.files, "items": r.items,
                         "top10_agreement": r.top10_agreement, "min_query_cosine": r.min_query_cosine,
                         "min_item_cosine": r.min_item_cosine, "cpu_ms_per_image": r.cpu_ms_per_image,
                         **r.verdict} for r in results],
            "skipped": skipped or None,
            "auto": {"precision": choice.precision, "reason": choice.reason}, "recorded": str(path),
        }, indent=2))
        return
    click.echo(f"precision check: {settings.name} on {settings.model} ({device}; CPU {prec.cpu_model() or '?'}; "
               f"flags {prec.named_flags(prec.cpu_flags())})")
    if random_weights:
        click.echo("WARNING: random weights: the check measures the arithmetic, not trained rankings")
    for r in results:
        status = "ok" if r.verdict["passed"] else "FAILED"
        click.echo(f"  {r.precision:<5} {status:<6} top-10 identical on {r.top10_agreement:.1%} of {r.files} images "
                   f"({r.items} items); min cosine to fp32: images {r.min_query_cosine:.5f}, items "
                   f"{r.min_item_cosine:.5f}; {r.speedup:.2f}x fp32's speed ({r.cpu_ms_per_image:.1f} CPU ms "
                   "per image)" + ("" if r.verdict["passed"] else f" ({r.verdict['why']})"))
    if skipped:
        click.echo(f"  {skipped}")
    click.echo(f"auto now uses: {choice.precision} ({choice.reason})")
    click.echo(f"recorded in {path}")


def _check_key(obj: CliContext, device: str) -> str:
    from wikivel_bot.linker.backbone import precision as prec
    from wikivel_bot.linker.backbone.encoders import register_model_file
    from wikivel_bot.linker.backbone.weights import resolve_weights

    settings = obj.settings.linker
    model: Any = register_model_file(settings.model)
    source = resolve_weights(model, settings.pretrained, settings.weights)
    return prec.check_key(model, source.identity, device)
