"""Training linkers: the Wiki-VEL dataset, the fitting loop, and the models that learn.

Public API::

    from wikivel_bot.train import build_dataset, BuildOptions, load_dataset, make_synthetic
    from wikivel_bot.train import TrainConfig, train

    card = build_dataset(mediainfo_dump, pages_dump, label_set, out_dir, BuildOptions(seed=0))
    card = make_synthetic(out_dir, n_files=1200)                 # no network, learnable
    fetch_thumbnails(load_dataset(out_dir), out_dir / "images", ThumbnailClient(...))
    result = train(TrainConfig(linker="naive-mlp", data=str(out_dir), out="runs/naive-mlp"))

Evaluating a checkpoint and the paper's report live in the one home of offline evaluation,
``wikivel_bot.evaluation`` (its ``runs/`` floor runs models; this room never imports it).

Sub-rooms, one concern each (each ``__init__`` lists its modules)::

    data/       building the dataset: dumps -> manifest, splits, counts, shards, thumbnails,
                the published dataset's layout (pure: no torch)
    synthetic/  generated, learnable stand-ins: shapes, shapes + text, shapes + evidence
    fitting/    the fitting loop (``train``): cached embeddings, targets, losses, variants,
                set-up, validation, resume state, the shared epoch loop
    cascade/    ``train --variant cascade``: the pair model over a frozen first stage
    evidence/   ``train evidence``: candidate records and the evidence model's fit
    decisions/  learning from reviewers' decisions (torch side of ``learning/``): the heads,
                the cascade's pair model and the verifier fine-tuned, judged on their own
                suggestions

Floors: ``data`` at the bottom; ``synthetic`` and ``fitting`` on it; ``cascade`` and
``evidence`` on those; ``decisions`` on top (tests/test_import_contract.py).
Importing this package does not import torch; the names below that need it load on use.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "BuildOptions": "wikivel_bot.train.data.builder",
    "build_dataset": "wikivel_bot.train.data.builder",
    "Dataset": "wikivel_bot.train.data.dataset",
    "FileRecord": "wikivel_bot.train.data.dataset",
    "load_dataset": "wikivel_bot.train.data.dataset",
    "write_dataset": "wikivel_bot.train.data.dataset",
    "card_tables": "wikivel_bot.train.data.dataset",
    "fetch_thumbnails": "wikivel_bot.train.data.fetch",
    "thumb_url": "wikivel_bot.train.data.fetch",
    "ImageStore": "wikivel_bot.train.data.shards",
    "ShardWriter": "wikivel_bot.train.data.shards",
    "make_synthetic": "wikivel_bot.train.synthetic.shapes",
    "TrainConfig": "wikivel_bot.train.fitting.loop",
    "TrainResult": "wikivel_bot.train.fitting.loop",
    "train": "wikivel_bot.train.fitting.loop",
    "relaxed_contrastive_loss": "wikivel_bot.train.fitting.losses",
    "hinge_triplet_loss": "wikivel_bot.train.fitting.losses",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wikivel_bot.train' has no attribute {name!r}")
