"""Shared set-up of the learning tests: a SQLite queue with real decisions, the tiny open_clip
model (random weights, CPU), the animals label set, and cascade checkpoints for its backbone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from tests.db_support import open_store
from tests.linker_support import TINY_MODEL, image_bytes, tiny_model_file, write_animals_artifact
from tests.review_support import CAT, DOG, HUMAN, add_file
from wikivel_bot.queue import migrate
from wikivel_bot.types import DecisionAction

# A file's colour says what it shows: a cat on red files (page % 3 == 0), a dog on the others.
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200)]


def decided_queue(tmp_path: Path, monkeypatch: Any, *, files: int = 15, linker: str = "naive-mlp",
                  settings: Optional[Mapping[str, str]] = None,
                  more: Optional[Callable[[Any, int], None]] = None) -> Path:
    """Files 1..``files`` enqueued with cat, dog and human; Bob approves the cat on red files and
    the dog on the others, rejecting the other of the two; ``more(store, page)`` adds decisions.
    Their images go to ``tmp_path/decisions/images`` (the dataset's thumbnail cache), the
    ``WIKIVEL_*`` settings point at all of it (``settings`` overrides them, without the prefix),
    and the working directory is ``tmp_path``. Returns the dataset directory."""
    tiny_model_file()
    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    store = open_store(url)
    migrate.upgrade(store.engine)
    data = tmp_path / "decisions"
    (data / "images").mkdir(parents=True)
    for page in range(1, files + 1):
        add_file(store, page, [CAT, DOG, HUMAN], day=page)
        cat = page % 3 == 0
        store.record_decision(page, "Q146", DecisionAction.APPROVE if cat else DecisionAction.REJECT, "Bob", "web")
        store.record_decision(page, "Q144", DecisionAction.REJECT if cat else DecisionAction.APPROVE, "Bob", "web")
        if more is not None:
            more(store, page)
        (data / "images" / f"M{page}.jpg").write_bytes(image_bytes(COLOURS[page % 3], seed=page))
    store.close()
    labels = write_animals_artifact(tmp_path / "labels")
    values = {"DB_URL": url, "LEARNING_MODELS_DIR": str(tmp_path / "models"),
              "LINKER_CACHE_DIR": str(tmp_path / "cache"), "LINKER_NAME": linker, "LINKER_MODEL": TINY_MODEL,
              "LINKER_WEIGHTS": "random", "LINKER_DEVICE": "cpu", "LINKER_PRECISION": "fp32",
              "LINKER_LABELS_DIR": str(labels), "LEARNING_EPOCHS": "2", "LEARNING_BOOTSTRAP": "100",
              "REVIEW_REVIEWER": "Olga", **dict(settings or {})}
    for key, value in values.items():
        monkeypatch.setenv(f"WIKIVEL_{key}", value)
    monkeypatch.chdir(tmp_path)
    return data


def cascade_checkpoint(path: Path, seed: int, *, calibration: Mapping[str, Any], item_images: int = 0,
                       random_scale: Optional[float] = None) -> Path:
    """A cascade checkpoint for the configured backbone and label set (first stage zero-shot).

    :param random_scale: every pair weight drawn from N(0, scale²) (seeded), so its score says
        something arbitrary; None: a fresh pair model (ranks like its first stage).
    :param item_images: how many item images its training read (0: it runs without a wiki).
    """
    import torch

    from wikivel_bot.config import load_settings
    from wikivel_bot.core.verification import Calibration
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
    from wikivel_bot.linker.cascade.pair import build_pair_model, pair_args
    from wikivel_bot.linker.clip import backbone_info
    from wikivel_bot.linker.spec import get_spec

    settings = load_settings().linker
    backbone = create_linker("zero-shot", replace(settings, name="zero-shot", checkpoint="", verifier="")).backbone
    spec = get_spec("cascade")
    torch.manual_seed(seed)
    pair = build_pair_model(backbone.embed_dim, spec.head)
    if random_scale is not None:
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for parameter in pair.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * random_scale)
    return save_cascade_checkpoint(
        path, spec=spec.as_dict(), pair=pair, pair_args=pair_args(spec.head), backbone=backbone_info(backbone),
        labelset_hash=load_label_set(settings.labels_dir).content_hash, first_stage_linker="zero-shot",
        first_stage=None, candidates=8, text_tokens=16, calibration=Calibration.from_dict(dict(calibration)),
        item_images=item_images)
