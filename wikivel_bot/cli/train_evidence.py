"""``wikivel-bot dataset synthetic-evidence`` and ``wikivel-bot train evidence``: the evidence
model's synthetic data and its fit (docs/evidence.md, "Scoring").

Registered under the ``dataset`` and ``train`` groups of ``cli/train.py`` by ``cli/__init__``.
Both run on the base install (numpy): neither imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.train import _echo_card as echo_card

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("synthetic-evidence")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Dataset directory to write (as `dataset synthetic`, plus evidence.jsonl and evidence_items.jsonl).")
@click.option("--files", "n_files", type=ranges.count(20, 10**7), default=1200, show_default=True, help="Files to generate.")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Seed of the images, the evidence and the split.")
@click.option("--category", type=ranges.finite_range(0, 1), default=0.5, show_default=True,
              help="Share of files with a category linked to the item they depict.")
@click.option("--category-label", type=ranges.finite_range(0, 1), default=0.1, show_default=True,
              help="Share with an unlinked category named exactly like it.")
@click.option("--link", type=ranges.finite_range(0, 1), default=0.3, show_default=True,
              help="Share with a description link to it.")
@click.option("--identifier", type=ranges.finite_range(0, 1), default=0.2, show_default=True,
              help="Share with an identifier template resolving to it.")
@click.option("--misleading", type=ranges.finite_range(0, 1), default=0.3, show_default=True,
              help="Share with a category linked to an item they do NOT depict ('Photographs by X').")
@click.option("--outside-label-set", type=ranges.finite_range(0, 1), default=0.2, show_default=True,
              help="Share of leaf items held out of the label set: only evidence can name them.")
@click.option("--records", "records_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write candidate records for `train evidence`, with SIMULATED image scores.")
@click.option("--top-k", type=ranges.TOP_K, default=10, show_default=True,
              help="--records: the image's candidates per file (evidence items are added).")
@click.option("--force", is_flag=True, help="Replace a dataset already in --out.")
def synthetic_evidence(out_dir: Path, n_files: int, seed: int, category: float, category_label: float, link: float,
                       identifier: float, misleading: float, outside_label_set: float, records_path: Optional[Path],
                       top_k: int, force: bool) -> None:
    """Write the synthetic dataset with Commons-like evidence: each file gains, with the
    given shares, a linked category, a description link or an identifier naming what it
    depicts, and misleading categories naming an item it does not; some items are held out of
    the label set. Nothing in it is Commons data, and every number measured on it is SYNTHETIC."""
    from wikivel_bot.train.evidence.fit import write_records
    from wikivel_bot.train.synthetic.evidence import load_evidence, make_evidence_synthetic, simulated_records

    shares = {"category": category, "category_label": category_label, "link": link, "identifier": identifier,
              "misleading": misleading, "outside_label_set": outside_label_set}
    card = make_evidence_synthetic(out_dir, n_files, seed, force=force, shares=shares)
    echo_card(card)
    realised = card["evidence"]["realised"]
    click.echo("evidence (share of files): " + ", ".join(f"{k} {v:.3f}" for k, v in realised.items()))
    click.echo(f"wrote {out_dir} (synthetic)")
    if records_path is not None:
        records = simulated_records(load_evidence(out_dir), top_k=top_k, seed=seed)
        count = write_records(records_path, records, about={
            "synthetic": True, "source": f"dataset synthetic-evidence {out_dir}", "scores": "simulated", "top_k": top_k})
        click.echo(f"wrote {records_path} ({count} candidate records; SYNTHETIC: simulated image scores)")


@click.command("evidence")
@click.option("--records", "records_path", required=True, type=_FILE,
              help="Candidate records, JSON lines (one candidate of a file with its image score, evidence kinds "
                   "and whether the file depicts it; see docs/evidence.md).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The checkpoint to write (JSON), for linker.evidence_model.")
@click.option("--l2", type=ranges.finite_range(0), default=1.0, show_default=True,
              help="L2 penalty on the standardised weights.")
@click.option("--held-out", type=ranges.finite_range(0, 1, high_open=True), default=0.25, show_default=True,
              help="Share of files kept out of the fit to check the calibration on.")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Which files are held out.")
@click.option("--synthetic/--not-synthetic", default=None,
              help="Say whether the records are generated (default: what their header says).")
def train_evidence(records_path: Path, out_path: Path, l2: float, held_out: float, seed: int,
                   synthetic: Optional[bool]) -> None:
    """Fit the evidence model: a logistic regression over each candidate's image score, its
    gap to the file's best and its image rank, the kinds of evidence naming it and whether it
    is in the label set, so that evidence the image contradicts scores low. Fitted on part of
    the files, its calibration checked on the rest (ECE). numpy only: the base install runs it.

    \b
    wikivel-bot dataset synthetic-evidence --out syn-ev --records syn-ev/records.jsonl
    wikivel-bot train evidence --records syn-ev/records.jsonl --out evidence-model.json
    """
    from wikivel_bot.train.evidence.fit import fit_records

    model = fit_records(records_path, out_path, l2=l2, held_out=held_out, seed=seed, synthetic=synthetic)
    tag = " (SYNTHETIC)" if model.data.get("synthetic") else ""
    split = model.metrics["split"]
    click.echo(f"fitted on {split['fitted_records']} candidates of {split['fitted_files']} files; "
               f"held out {split['held_out_files']} files{tag}")
    summary = model.metrics.get("held_out")
    if summary:
        click.echo(f"held out{tag}: ECE {summary['ece']:.4f}, ROC-AUC {summary['roc_auc']:.4f}, "
                   f"precision {summary['precision']:.4f} and recall {summary['recall']:.4f} at P >= 0.5, "
                   f"log-loss {summary['log_loss']:.4f}")
        for bucket, row in model.metrics["by_bucket"].items():
            click.echo(f"  {bucket}: {row['pairs']} candidates, match rate {row['match_rate']:.3f}, "
                       f"mean P {row['mean_probability']:.3f}")
    click.echo(f"wrote {out_path} (version {model.version[:12]})")
