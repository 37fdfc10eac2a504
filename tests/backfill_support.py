"""Helpers for the backfill tests and benchmark: one local Ray for the whole session, and
Settings pointing at the local test wiki, a fresh SQLite queue and the tiny random model."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.commons_support import CONTACT
from tests.linker_support import tiny_model_file, write_animals_artifact
from wikivel_bot.config import LinkerSettings, Settings


@pytest.fixture(scope="session")
def ray_runtime() -> Iterator[str]:
    """One local Ray with 2 CPUs for every backfill test (starting Ray costs seconds); its
    GCS address, which a subprocess driver joins with ``--address``."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def backfill_settings(wiki: Any, tmp_path: Path, labels: Path, **backfill: Any) -> Settings:
    """Settings for a backfill of the test wiki into a new, migrated SQLite queue."""
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for

    url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    engine.dispose()
    settings = Settings()
    settings = settings.replace("db", url=url)
    settings = settings.replace("site", api_url=wiki.api_url, operator_contact=CONTACT, languages=("en",))
    linker = LinkerSettings(model=str(tiny_model_file()), pretrained="", weights="random", device="cpu",
                            batch_size=8, labels_dir=str(labels), cache_dir=str(labels.parent / "cache"))
    settings = dataclasses.replace(settings, linker=linker)
    return settings.replace("backfill", **{"actors": 1, **backfill})


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The animals label set on disk (its index is cached beside it after the first run)."""
    return write_animals_artifact(tmp_path_factory.mktemp("backfill") / "labels")
