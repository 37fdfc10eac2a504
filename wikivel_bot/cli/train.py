"""``wikivel-bot dataset`` and ``wikivel-bot train``: build the Wiki-VEL dataset, train a head.

torch is imported inside the commands only.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Optional, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
TRAINABLE = ("naive-mlp", "naive-te", "fusion", "cascade")


def _show(progress: Optional[bool]) -> bool:
    return sys.stderr.isatty() if progress is None else progress


def _fractions(text: str) -> Tuple[float, float, float]:
    """``--split``'s three shares; float() reads nan and inf, which no share can be."""
    try:
        parts = tuple(float(p) for p in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3 or not all(math.isfinite(p) for p in parts):
        raise UsageError(f"--split takes three finite shares like 0.8,0.1,0.1 (not {text!r})")
    return parts[0], parts[1], parts[2]


@click.group("dataset")
def dataset() -> None:
    """Build the Wiki-VEL training dataset (paper §3) and fetch its images.

    A dataset directory holds manifest.parquet (one row per file: items, description,
    categories, split), card.json (counts per split like the paper's Table 1, top items
    like its Table 2) and images/ (tar shards of thumbnails).
    """


@dataset.command("build")
@click.option("--mediainfo-dump", required=True, type=_FILE,
              help="Commons MediaInfo JSON dump (commons-YYYYMMDD-mediainfo.json.bz2): the depicts items.")
@click.option("--pages-dump", required=True, type=_FILE,
              help="Commons pages dump (commonswiki-YYYYMMDD-pages-articles.xml.bz2): titles, descriptions, categories.")
@click.option("--labels", "labels_dir", type=_DIR,
              help="Label set (`wikivel-bot labels build`); ground truth is mapped through its frequency filter. "
                   "Without it only OUT/splits/*.txt are written: count f on OUT/splits/train.txt "
                   "(`labels build --count-files`, as the paper does) and run this again with --labels.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Dataset directory to write.")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Shuffle seed (same seed, same splits).")
@click.option("--split", "split_text", default="0.8,0.1,0.1", show_default=True,
              help="Train, validation and test shares, by file.")
@click.option("--max-files", type=ranges.count(), help="Keep this many files after the shuffle (paper: 1000000).")
@click.option("--published", type=_DIR,
              help="The published dataset's commons_images/ directory: take its train/validation/test split "
                   "of each file instead of drawing one (files it lacks are left out).")
@click.option("--category-filters", type=_FILE,
              help="More category patterns, one 'kind<TAB>regex' per line ('-kind' drops a built-in kind).")
@click.option("--languages", default="en", show_default=True, help="Description language fallback, comma separated.")
@click.option("--workers", type=ranges.workers(), help="Parsing processes (default: CPUs less one).")
@click.option("--decompressor", type=click.Choice(["auto", "parallel", "stdlib"]), default="auto", show_default=True,
              help="As for `labels build`.")
@click.option("--force", is_flag=True, help="Replace a dataset already in --out.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: when stderr is a terminal).")
def build(mediainfo_dump: Path, pages_dump: Path, labels_dir: Optional[Path], out_dir: Path, seed: int, split_text: str,
          max_files: Optional[int], published: Optional[Path], category_filters: Optional[Path], languages: str,
          workers: Optional[int], decompressor: str, force: bool, progress: Optional[bool]) -> None:
    """Build the dataset from the Commons dumps: .jpg/.jpeg/.png/.svg files with at least one
    depicts item, non-descriptive categories removed, shuffled and split 80/10/10 by file,
    then items mapped through the label set, P18 images removed from the test split.

    \b
    The paper's order (f counted on the training split, §3.2):
    wikivel-bot dataset build --mediainfo-dump commons-20231107-mediainfo.json.bz2 \\
        --pages-dump commonswiki-20231101-pages-articles.xml.bz2 --max-files 1000000 --out data/wikivel
    wikivel-bot labels build ... --count-files data/wikivel/splits/train.txt --out labels-f10
    wikivel-bot dataset build ... --labels labels-f10 --max-files 1000000 --out data/wikivel
    """
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.labels.parallel import default_workers
    from wikivel_bot.train.data.builder import BuildOptions, build_dataset

    langs = tuple(p.strip() for p in languages.split(",") if p.strip()) or ("en",)
    options = BuildOptions(seed=seed, fractions=_fractions(split_text), max_files=max_files, languages=langs,
                           workers=workers or default_workers(), decompressor=decompressor,
                           category_filters=category_filters, published=published, progress=_show(progress),
                           force=force)
    if labels_dir is None:
        done = build_dataset(mediainfo_dump, pages_dump, None, out_dir, options)
        sizes = ", ".join(f"{k} {v}" for k, v in done["splits"].items())
        click.echo(f"wrote {done['splits_dir']}/ (files per split before the frequency filter: {sizes})")
        click.echo(f"next: wikivel-bot labels build ... --count-files {done['splits_dir']}/train.txt --out LABELS; "
                   "then this command again with --labels LABELS")
        return
    label_set = load_label_set(labels_dir)
    card = build_dataset(mediainfo_dump, pages_dump, label_set, out_dir, options, labels_path=str(labels_dir.resolve()))
    _echo_card(card)
    click.echo(f"wrote {out_dir}")


def _echo_card(card: Any) -> None:
    from wikivel_bot.train.data.dataset import card_tables

    click.echo(card_tables(card), nl=False)
    labels = card.get("labels", {})
    if "counted_on_train_split" in labels and not labels["counted_on_train_split"]:
        click.echo("note: the label set's f was not counted on this training split (the paper counts it there, "
                   "§3.2): see `labels build --count-files`")
    filtering = card.get("filtering", {})
    shown = ", ".join(f"{k} {v}" for k, v in filtering.items() if not isinstance(v, dict))
    click.echo(f"filtering: {shown}")
    categories = filtering.get("categories")
    if categories:
        dropped = ", ".join(f"{k} {v}" for k, v in categories.get("dropped", {}).items()) or "none"
        click.echo(f"categories: {categories.get('kept', 0)} kept; dropped: {dropped}")


@dataset.command("synthetic")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Dataset directory to write (with labels/, images/ and tiny-model.json).")
@click.option("--files", "n_files", type=ranges.count(20, 10**7), default=1200, show_default=True, help="Files to generate.")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Seed of the images and the split.")
@click.option("--force", is_flag=True, help="Replace a dataset already in --out.")
@click.option("--text-signal", is_flag=True,
              help="Split the colour between picture and text: grey pictures for half the files, the colour "
                   "named in the file name, description or categories for most (for the cascade).")
def synthetic(out_dir: Path, n_files: int, seed: int, force: bool, text_signal: bool) -> None:
    """Write a synthetic, learnable dataset (coloured shapes with hierarchical items) for
    smoke runs without network: train it with --model DIR/tiny-model.json --weights random.
    Nothing in it is Commons data, and every report on it says so."""
    from wikivel_bot.train.synthetic.shapes import make_synthetic

    if text_signal:
        from wikivel_bot.train.synthetic.text import make_text_synthetic

        card = make_text_synthetic(out_dir, n_files, seed, force=force)
    else:
        card = make_synthetic(out_dir, n_files, seed, force=force)
    _echo_card(card)
    click.echo(f"wrote {out_dir} (synthetic)")


@dataset.command("import-published")
@click.option("--published", "published_dir", required=True, type=_DIR,
              help="The published dataset's directory (with commons_images/ and frequent_wikidata_items/).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Dataset directory to write (labels/, manifest, card, images/items/).")
@click.option("--min-freq", type=ranges.count(0), default=10, show_default=True,
              help="The f the published items were filtered with (recorded, not applied again).")
@click.option("--force", is_flag=True, help="Replace a dataset already in --out.")
def import_published_command(published_dir: Path, out_dir: Path, min_freq: int, force: bool) -> None:
    """Take the published Wiki-VEL dataset as it is: its items (already promoted, §3.2) are
    the label set, its splits and ground truth are kept, nothing is re-derived from dumps.
    Train and evaluate with --images PUBLISHED/commons_images."""
    from wikivel_bot.train.data.published import import_published

    card = import_published(published_dir, out_dir, force=force, min_freq=min_freq)
    _echo_card(card)
    click.echo(f"wrote {out_dir} (images: --images {published_dir / 'commons_images'})")


@dataset.command("reproduce-synthetic")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Working directory (per data seed: synthetic data, its published-layout copy, runs; "
                   "raw/ per-seed results; report.md).")
@click.option("--files", "n_files", type=ranges.count(60, 10**7), default=1200, show_default=True,
              help="Synthetic files per data seed.")
@click.option("--epochs", type=ranges.count(1, 100_000), default=30, show_default=True, help="Epochs per model.")
@click.option("--batch-size", type=ranges.count(8, 65536), default=128, show_default=True,
              help="Batch of the rows the paper trained at 1,024; its 'BS 256' rows take a quarter of it. "
                   "1024 runs the paper's own sizes (give more --files).")
@click.option("--data-seeds", default="0,1,2", show_default=True,
              help="Seeds of the synthetic data, e.g. 0,1,2 or 0-2: each a new draw of training and test files.")
@click.option("--train-seeds", default="0-4", show_default=True,
              help="Seeds of the training (batches, head init, dropout), each run on every data seed.")
@click.option("--threads", type=ranges.workers(), default=2, show_default=True, help="torch CPU threads.")
@click.option("--summarize", is_flag=True,
              help="Train nothing: rebuild the table from the per-seed results already in OUT/raw.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: when stderr is a terminal).")
def reproduce_synthetic_command(out_dir: Path, n_files: int, epochs: int, batch_size: int, data_seeds: str,
                                train_seeds: str, threads: int, summarize: bool, progress: Optional[bool]) -> None:
    """Check the whole reproduction route here, offline, over several seeds: per data seed a
    synthetic dataset written in the published layout and read back as published; per
    training seed MLP Naive CLIP (at both of the paper's batch sizes), TE Naive CLIP and CLIP
    Fusion trained (tiny random-init CLIP, CPU) and every model and baseline evaluated. Prints
    every Table 4 row as mean ± 95 % interval beside the paper's numbers, and the orders
    between rows that the paired intervals support. Each run's raw results stay in OUT/raw
    (a rerun resumes from them). The figures are synthetic and say so."""
    from wikivel_bot.evaluation.runs.reproduce import ReproduceOptions, reproduce_synthetic, summarize_dir

    if summarize:
        try:
            done = summarize_dir(out_dir)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        options = ReproduceOptions(files=n_files, data_seeds=_seeds(data_seeds, "--data-seeds"),
                                   train_seeds=_seeds(train_seeds, "--train-seeds"), epochs=epochs,
                                   batch_size=batch_size, threads=threads, progress=_show(progress))
        done = reproduce_synthetic(out_dir, options, report=lambda line: click.echo(line, err=True))
    click.echo(done.table(), nl=False)
    click.echo(f"wrote {out_dir / 'report.md'} and results.json ({len(done.runs)} runs in {out_dir / 'raw'})")


def _seeds(text: str, option: str) -> Tuple[int, ...]:
    """``0,1,2`` or ``0-4`` (or both, ``0-2,7``) as distinct seeds in the order given."""
    seeds: list = []
    try:
        for part in (p.strip() for p in text.split(",")):
            low, _, high = part.partition("-")
            seeds += range(int(low), int(high or low) + 1)
    except ValueError:
        seeds = []
    if not seeds or len(set(seeds)) != len(seeds) or not all(0 <= s < 2**32 for s in seeds):
        raise UsageError(f"{option} takes distinct seeds like 0,1,2 or 0-4 (not {text!r})")
    return tuple(seeds)


@dataset.command("fetch")
@click.option("--data", "data_dir", required=True, type=_DIR, help="Dataset directory.")
@click.option("--images", "images_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Shard directory (default: DATA/images).")
@click.option("--width", type=click.IntRange(20, 3840), default=330, show_default=True, help="Thumbnail width: a standard step.")
@click.option("--splits", default="train,validation,test", show_default=True, help="Splits to fetch.")
@click.option("--limit", type=ranges.count(), help="Stop after this many downloads.")
@click.option("--shard-size", type=ranges.count(1, 10**7), default=1000, show_default=True, help="Images per tar shard.")
@click.option("--retry-failed", is_flag=True, help="Also retry files recorded as unfetchable.")
@click.option("--item-images", is_flag=True,
              help="Also fetch the label set's P18 item images into IMAGES/items/ (read by the fusion linker).")
@click.option("--labels", "labels_dir", type=_DIR, help="Label set for --item-images (default: the dataset's).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def fetch(obj: CliContext, data_dir: Path, images_dir: Optional[Path], width: int, splits: str,
          limit: Optional[int], shard_size: int, retry_failed: bool, item_images: bool,
          labels_dir: Optional[Path], progress: Optional[bool]) -> None:
    """Download the dataset's thumbnails politely (standard widths, two connections, backoff
    on 429) into tar shards. A re-run skips what is in finished shards and what failed for
    good (failed.jsonl), so nothing is fetched twice."""
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.train.data.dataset import load_dataset, open_labels
    from wikivel_bot.train.data.fetch import fetch_item_images, fetch_thumbnails

    data = load_dataset(data_dir)
    wanted = tuple(s.strip() for s in splits.split(",") if s.strip())
    settings = obj.settings
    target = images_dir or data_dir / "images"
    reports = []
    with ThumbnailClient.from_settings(settings.fetch, contact=settings.site.operator_contact) as client:
        reports.append(("files", fetch_thumbnails(data, target, client, width=width, splits=wanted, limit=limit,
                                                  shard_size=shard_size, retry_failed=retry_failed,
                                                  progress=_show(progress))))
        if item_images:
            label_set = open_labels(data, str(labels_dir or ""))
            reports.append(("item images", fetch_item_images(list(label_set.images), target / "items", client,
                                                             width=width, progress=_show(progress))))
    for what, report in reports:
        click.echo(f"{report.wanted} {what} wanted: {report.already_present} already fetched, "
                   f"{report.known_failures} known failures skipped, {report.fetched} fetched now, "
                   f"{report.failed} failed for good, {report.transient} to retry later")
        for reason, n in report.reasons.items():
            click.echo(f"  {reason}: {n}")


@click.group("train", invoke_without_command=True)
@click.option("--linker", "--variant", "linker_name", type=click.Choice(TRAINABLE),
              help="Variant to train (paper §4): naive-mlp, naive-te (text encoder too), fusion, or cascade "
                   "(the pair model re-ranking a trained first stage; see --first-stage).")
@click.option("--data", "data_dir", type=_DIR, help="Dataset directory (`dataset build` or `dataset synthetic`).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Run directory: best.pt, last.pt, train-state.pt, metrics.jsonl (default: runs/LINKER).")
@click.option("--labels", "labels_dir", type=_DIR, help="Label set (default: the one the dataset card names).")
@click.option("--images", "images_dir", type=_DIR, help="Images: our shards, the published commons_images/ or image files (default: DATA/images).")
@click.option("--cache-dir", help="Embedding cache root (default: linker.cache_dir).")
@click.option("--model", help="open_clip architecture or model config JSON (default: linker.model).")
@click.option("--pretrained", help="Pretrained tag (default: linker.pretrained).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (default: linker.weights).")
@click.option("--device", help="auto, cpu, cuda, cuda:N (default: linker.device).")
@click.option("--threads", type=ranges.workers(0), help="CPU threads for torch (default: linker.threads).")
@click.option("--epochs", type=ranges.count(1, 100_000), default=10, show_default=True, help="Most epochs to run.")
@click.option("--batch-size", type=ranges.count(2, 65536), default=1024, show_default=True, help="(File, item) rows per batch (cascade: files per batch, at most 256).")
@click.option("--lr", type=ranges.FINITE_FLOAT, default=1e-3, show_default=True, help="AdamW learning rate of the heads.")
@click.option("--text-lr", type=ranges.FINITE_FLOAT, default=1e-5, show_default=True, help="Learning rate of the text encoder (naive-te).")
@click.option("--weight-decay", type=ranges.FINITE_FLOAT, default=0.01, show_default=True, help="AdamW weight decay.")
@click.option("--loss", type=click.Choice(["contrastive", "triplet"]), default=None,
              help="contrastive: relaxed multi-positive (§4.3); triplet: hinge on the hardest in-batch negative "
                   "[default: contrastive].")
@click.option("--margin", type=ranges.FINITE_FLOAT, default=0.2, show_default=True, help="Triplet margin.")
@click.option("--temperature", type=ranges.FINITE_FLOAT, default=0.07, show_default=True, help="Initial contrastive temperature.")
@click.option("--learn-temperature/--fixed-temperature", default=True, show_default=True, help="Learn the temperature.")
@click.option("--target-hops", type=click.IntRange(0, 3), default=1, show_default=True,
              help="Items this many hops above or below a file's item are targets too (0: exact items only).")
@click.option("--hop-weight", type=ranges.FINITE_FLOAT, default=0.5, show_default=True, help="Target weight per hop: hop_weight ** hops.")
@click.option("--rescale/--no-rescale", default=True, show_default=True, help="Weight rows by inverse batch frequency.")
@click.option("--val-per-epoch", type=ranges.count(1, 1000), default=2, show_default=True, help="Validation passes per epoch.")
@click.option("--patience", type=ranges.count(1, 100_000), default=4, show_default=True,
              help="Stop after this many validation passes without improvement.")
@click.option("--select", default="R@10", show_default=True,
              help="Validation metric for early stopping and best.pt: R@1, R@5, R@10, R@100, DivR@10, mAP@10, "
                   "MRR or val_loss.")
@click.option("--val-limit", type=ranges.count(0), default=10_000, show_default=True,
              help="Validation files ranked per pass (0: all).")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Seed of batches, initialisation and dropout.")
@click.option("--max-steps", type=ranges.count(), help="Stop after this many steps in all (resumable).")
@click.option("--resume", is_flag=True, help="Continue the run in --out where it stopped.")
@click.option("--first-stage", type=_FILE,
              help="cascade: the trained first-stage checkpoint (naive-mlp or fusion best.pt) whose top candidates it re-ranks.")
@click.option("--candidates", type=ranges.count(2, 10_000), help="cascade: candidates per file (default: cascade.candidates).")
@click.option("--calibration", type=click.Choice(["platt", "isotonic"]), default="platt", show_default=True,
              help="cascade: how the verifier's match probability is calibrated on the validation files.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: when stderr is a terminal).")
@click.option("--from-decisions", "from_decisions", type=_DIR,
              help="Fine-tune the running checkpoint (Naive CLIP's heads, or the cascade's pair model) on a `dataset "
                   "from-decisions` directory instead, judge it on the later held-out decisions, promote it only if "
                   "it wins (docs/learning.md; learning.* settings).")
@click.option("--promote/--no-promote", default=True, show_default=True,
              help="--from-decisions: promote a challenger that wins (--no-promote: judge and keep only).")
@click.pass_obj
def train(obj: CliContext, linker_name: Optional[str], data_dir: Optional[Path], out_dir: Optional[Path],
          labels_dir: Optional[Path],
          images_dir: Optional[Path], cache_dir: Optional[str], model: Optional[str], pretrained: Optional[str],
          weights: Optional[str], device: Optional[str], threads: Optional[int], progress: Optional[bool],
          first_stage: Optional[Path], candidates: Optional[int], calibration: str,
          from_decisions: Optional[Path] = None, promote: bool = True, **options: Any) -> None:
    """Train a linker's head on a dataset: AdamW, relaxed multi-positive contrastive loss
    with hop targets and inverse batch frequency (or hinge triplet), two validation passes
    per epoch, early stopping; writes self-describing checkpoints (best.pt is the one to use).

    \b
    wikivel-bot train --linker naive-mlp --data data/wikivel --out runs/naive-mlp
    wikivel-bot train --linker naive-mlp --data syn --model syn/tiny-model.json --weights random
    wikivel-bot train --variant cascade --first-stage runs/naive-mlp/best.pt --data data/wikivel

    `train evidence` fits the evidence model instead (it takes none of these options).
    """
    ctx = click.get_current_context()
    if ctx.invoked_subcommand is not None:
        return  # `train evidence`: the subcommand does the work
    if from_decisions is not None:
        from wikivel_bot.cli.learning import train_from_decisions

        train_from_decisions(obj, from_decisions, promote, model=model, weights=weights, device=device, threads=threads)
        return
    if linker_name is None or data_dir is None:
        # Not required=True: a subcommand runs without them.
        missing = "linker_name" if linker_name is None else "data_dir"
        raise click.MissingParameter(ctx=ctx, param=next(p for p in ctx.command.params if p.name == missing))
    if linker_name == "cascade":
        _train_cascade(obj, data_dir, out_dir, labels_dir, images_dir, cache_dir, model, pretrained, weights, device,
                       threads, progress, first_stage, candidates, calibration, options)
        return
    if first_stage is not None or candidates is not None:
        raise UsageError("--first-stage and --candidates are options of --variant cascade")
    options["loss"] = options["loss"] or "contrastive"
    from wikivel_bot.train.fitting.loop import TrainConfig
    from wikivel_bot.train.fitting.loop import train as run_training

    linker = obj.settings.linker
    config = TrainConfig(
        linker=linker_name, data=str(data_dir), out=str(out_dir or Path("runs") / linker_name),
        labels=str(labels_dir or ""), images=str(images_dir or ""), cache_dir=cache_dir or linker.cache_dir,
        model=model or linker.model, pretrained=linker.pretrained if pretrained is None else pretrained,
        weights=linker.weights if weights is None else weights, device=device or linker.device,
        threads=linker.threads if threads is None else threads, progress=_show(progress), **options,
    )
    _print_result(run_training(config))


def _train_cascade(obj: CliContext, data_dir: Path, out_dir: Optional[Path], labels_dir: Optional[Path],
                   images_dir: Optional[Path], cache_dir: Optional[str], model: Optional[str], pretrained: Optional[str],
                   weights: Optional[str], device: Optional[str], threads: Optional[int], progress: Optional[bool],
                   first_stage: Optional[Path], candidates: Optional[int], calibration: str,
                   options: Any) -> None:
    """``train --variant cascade``: the options the cascade shares with the others, and its own."""
    from wikivel_bot.train.cascade.fit import CascadeTrainConfig, train_cascade

    linker = obj.settings.linker
    select = options["select"] if options["select"] != "R@10" else "nDCG@5"
    config = CascadeTrainConfig(
        data=str(data_dir), out=str(out_dir or Path("runs") / "cascade"), first_stage=str(first_stage or ""),
        first_stage_linker=obj.settings.cascade.first_stage, labels=str(labels_dir or ""),
        images=str(images_dir or ""), cache_dir=cache_dir or linker.cache_dir, model=model or linker.model,
        pretrained=linker.pretrained if pretrained is None else pretrained,
        weights=linker.weights if weights is None else weights, device=device or linker.device,
        threads=linker.threads if threads is None else threads,
        candidates=candidates or obj.settings.cascade.candidates, text_tokens=obj.settings.cascade.text_tokens,
        epochs=options["epochs"], batch_size=min(options["batch_size"], 256), lr=options["lr"],
        weight_decay=options["weight_decay"], loss=options["loss"] or "contrastive", margin=options["margin"],
        calibration=calibration, select=select, patience=options["patience"], seed=options["seed"],
        max_steps=options["max_steps"], resume=options["resume"], progress=_show(progress),
    )
    _print_result(train_cascade(config))


def _print_result(result: Any) -> None:
    """How a training run ended, for ``train`` of any variant (a ``state.TrainResult``)."""
    position = result.position
    for note in result.notes:
        click.echo(f"note: {note}")
    click.echo(f"stopped: {position.stopped} after {position.step} steps ({position.epoch} epochs) in {result.seconds:.1f} s")
    if result.best is not None:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in result.best_metrics.items())
        click.echo(f"best: {result.best} (step {position.best_step}; {shown})")
    click.echo(f"last: {result.last}")
