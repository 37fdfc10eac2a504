"""The daemon's learning job: every ``learning.schedule_hours`` (0 = off, the default), a
learning round — the dataset from the queue's decisions, a challenger, the judge, and a
promotion only if it wins.

A promoted checkpoint runs from the daemon's next link batch (``daemon.promotions``: the linker
is rebuilt when the registry changes, no restart) and at once in ``suggest`` and ``link``,
which read the registry when they start. The round's event line names what runs
(``runs=NAME``: the promoted challenger, or the running model recalibrated when the challenger
was kept, ``recalibrated=NAME``; ``runs=unchanged`` when neither happened).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Optional

from wikivel_bot.events import event

JOB_ID = "learn"


def add_learning_job(scheduler: Any, settings: Any, job: Callable[[], Any]) -> bool:
    """Schedule ``job`` on an APScheduler ``scheduler`` when ``learning.schedule_hours`` asks
    for it; False (and nothing scheduled) when it is 0 or no models directory is set."""
    hours = float(settings.learning.schedule_hours)
    if hours <= 0:
        return False
    if not settings.learning.models_dir:
        event("learning", "off", level=logging.WARNING, reason="learning.schedule_hours is set but "
              "learning.models_dir is not")
        return False
    scheduler.add_job(job, "interval", seconds=hours * 3600.0, id=JOB_ID)
    return True


def learning_round(settings: Any, store: Any, *, fetch: Optional[Callable[[str], bytes]] = None) -> Any:
    """One round for the daemon: rebuild ``MODELS_DIR/decisions`` from the queue, train and
    judge a challenger, promote it if it wins. Returns the ``cycle.RoundResult``."""
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.learning.cycle import train_challenger
    from wikivel_bot.learning.dataset import build_from_decisions

    learning = settings.learning
    data_dir = Path(learning.models_dir) / "decisions"
    client = None
    if fetch is None:
        from wikivel_bot.commons.thumbnails import ThumbnailClient

        client = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
        fetch = client.get
    try:
        built = build_from_decisions(store, data_dir, reviewer_cap=learning.reviewer_cap,
                                     exclude=tuple(learning.exclude_reviewers), fetch=fetch)
    finally:
        if client is not None:
            client.close()
    from wikivel_bot.commons.providers import item_image_source

    result = train_challenger(data_dir, settings, by="daemon (learning.schedule_hours)",
                              labelset_hash=lambda: default_label_set(settings.linker.labels_dir).content_hash,
                              progress=lambda _: None, item_images=item_image_source(settings))
    event("learning", "promoted" if result.promoted else "kept", challenger=result.name,
          files=len(built.records), reasons="; ".join(result.verdict.reasons),
          runs=result.name if result.promoted else (result.recalibrated or "unchanged"),
          recalibrated=result.recalibrated or "no")
    return result
