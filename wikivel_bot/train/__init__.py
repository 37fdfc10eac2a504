"""Training and evaluating linkers: the Wiki-VEL dataset, losses, the training loop, reports.

Public API::

    from wikivel_bot.train import build_dataset, BuildOptions, load_dataset, make_synthetic
    from wikivel_bot.train import TrainConfig, train, evaluate_checkpoint, write_report

    card = build_dataset(mediainfo_dump, pages_dump, label_set, out_dir, BuildOptions(seed=0))
    card = make_synthetic(out_dir, n_files=1200)                 # no network, learnable
    fetch_thumbnails(load_dataset(out_dir), out_dir / "images", ThumbnailClient(...))
    result = train(TrainConfig(linker="naive-mlp", data=str(out_dir), out="runs/naive-mlp"))
    run = evaluate_checkpoint(result.best, out_dir)              # + zero-shot, random-freq, top-k
    write_report(run, "reports/naive-mlp")                       # Markdown, HTML, plots, model card

Modules, one concept each::

    dataset.py     manifest + card on disk; mapping, leakage removal (pure: no torch)
    splits.py      the seeded split, drawn before the frequency filter (splits/*.txt)
    counts.py      train-split item counts after promotion; where f was counted
    filenames.py   one spelling of a file's name for titles, P18 values and loose files
    categories.py  which Commons categories describe the image (patterns as data)
    pages.py       streaming the pages XML dump; description and category links
    builder.py     the dumps -> a dataset (``dataset build``)
    shards.py      tar shards (WebDataset layout) and the image store
    fetch.py       polite thumbnail downloads into shards (``dataset fetch``)
    synthetic.py   a generated, learnable stand-in dataset (``dataset synthetic``)
    published.py   the published dataset's layout, read as it is (``dataset import-published``)
    reproduce.py   every Table 4 row end to end on synthetic data (``dataset reproduce-synthetic``)
    embeddings.py  frozen-encoder embeddings cached per (backbone, weights, data)
    targets.py     in-batch loss targets: shared items, hop-weighted relatives
    losses.py      relaxed multi-positive contrastive loss, hinge triplet loss
    variants.py    what naive-mlp, naive-te and fusion compute from the cache
    setup.py       everything a run loads before its first step
    validate.py    validation passes (loss and ranking metrics)
    state.py       resume state and early stopping
    epochs.py      the epoch loop both training loops share (order, position, max-steps, Ctrl-C)
    loop.py        the training loop (``train``)
    evaluate.py    a checkpoint and the baselines on a split (``evaluate --checkpoint``)
    report.py      Table-4-style report with the paper's numbers, plots, model card
    synthetic_text.py  the synthetic set with the colour split between picture and text
    cascade_data.py    what a cascade run loads: caches, frozen first stage, top-K lists
    cascade.py     ``train --variant cascade``: the pair model, its losses, the verifier's fit
    cascade_eval.py    the cascade beside zero-shot/naive-mlp/fusion, verifier metrics
    evidence.py    candidate records for the evidence model; ``train evidence`` fits it
    synthetic_evidence.py  the synthetic set with category/link/id evidence, some misleading
    evidence_eval.py   image only / image + evidence / evidence alone on it (``bench/evidence.py``)

Importing this package does not import torch; the names below that need it load on use.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "BuildOptions": "wikivel_bot.train.builder",
    "build_dataset": "wikivel_bot.train.builder",
    "Dataset": "wikivel_bot.train.dataset",
    "FileRecord": "wikivel_bot.train.dataset",
    "load_dataset": "wikivel_bot.train.dataset",
    "write_dataset": "wikivel_bot.train.dataset",
    "card_tables": "wikivel_bot.train.dataset",
    "fetch_thumbnails": "wikivel_bot.train.fetch",
    "thumb_url": "wikivel_bot.train.fetch",
    "ImageStore": "wikivel_bot.train.shards",
    "ShardWriter": "wikivel_bot.train.shards",
    "make_synthetic": "wikivel_bot.train.synthetic",
    "TrainConfig": "wikivel_bot.train.loop",
    "TrainResult": "wikivel_bot.train.loop",
    "train": "wikivel_bot.train.loop",
    "relaxed_contrastive_loss": "wikivel_bot.train.losses",
    "hinge_triplet_loss": "wikivel_bot.train.losses",
    "evaluate_checkpoint": "wikivel_bot.train.evaluate",
    "EvaluationRun": "wikivel_bot.train.evaluate",
    "write_report": "wikivel_bot.train.report",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wikivel_bot.train' has no attribute {name!r}")
