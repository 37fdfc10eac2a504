"""One learning round: decision records → a challenger → judged → promoted only if it wins.

``train --from-decisions`` runs :func:`train_challenger` on a dataset of
``dataset from-decisions``; the daemon's scheduled job (``learning.schedule``) builds that
dataset and runs the same function. The challenger always stays in the models directory
with its report (``NAME/report.json``); the registry changes only on a win (and only when
``promote`` is asked for), and every change is audited (``registry.audit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError
from wikivel_bot.learning import registry
from wikivel_bot.learning.card import write_cards
from wikivel_bot.learning.dataset import CARD, RECORDS
from wikivel_bot.learning.judge import Verdict, judge
from wikivel_bot.learning.metrics import FileScores
from wikivel_bot.learning.records import read_records


@dataclass(frozen=True)
class RoundResult:
    name: str
    checkpoint: Path
    verdict: Verdict
    promoted: bool
    report: Dict[str, Any]


def train_challenger(data_dir: Path, settings: Any, *, labelset_hash: Callable[[], str], by: str,
                     promote: bool = True, models_dir: Optional[str] = None, progress: Callable[[str], None] = print,
                     label_set: Optional[Callable[[], Any]] = None, item_images: Optional[Callable[[], Any]] = None,
                     ) -> RoundResult:
    """Fine-tune from the running checkpoint, judge, keep, and promote on a win.

    :param data_dir: a ``dataset from-decisions`` directory.
    :param settings: the whole ``Settings`` as read (learning: the rule); the champion is the
        running model of ``learning.models_dir`` (``registry.with_running_model``), else ``linker``'s.
    :param labelset_hash: the label set in use (asked only when no checkpoint runs yet).
    :param by: who asked (recorded in the audit line of a promotion).
    :param promote: promote a winner (False: judge and keep only).
    :param label_set: the label set in use, asked only by a cascade (its pair model is trained
        over the label set's items) and to re-fit a verifier's calibration (``linker.verifier``);
        None: ``linker.labels_dir``'s.
    :param item_images: P18 images for a cascade or verifier fitted with them
        (``commons.providers.item_image_source``); None: such a verifier keeps its calibration,
        and such a cascade is refused in one line.
    :raises UsageError: no models directory, too few decisions to train or judge.
    """
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.train.decisions.learners import load_learner
    from wikivel_bot.train.decisions.own_suggestions import operating_score

    learning = settings.learning
    models_dir = models_dir or learning.models_dir
    if not models_dir:
        raise UsageError("learning.models_dir is not set: say where checkpoints and their reports live")
    # The champion is what runs: the registry's running checkpoint, as the one factory builds it.
    settings = registry.with_running_model(settings)
    records = read_records(data_dir / RECORDS)
    label_set = label_set or (lambda: default_label_set(settings.linker.labels_dir))
    # Naive CLIP's heads, or the cascade's pair model (train/decisions/learners.py).
    learner = load_learner(settings.linker, settings.cascade, label_set, item_images)
    linker, champion, running = learner.linker, learner.champion, learner.running
    progress(f"champion: {linker.description.version} (training its {learner.kind})")
    data = learner.encode(records, data_dir)
    counts = {s: int(data.select(s).numel()) for s in ("train", "calibration", "evaluation")}
    if min(counts.values()) == 0:
        raise UsageError(f"too few decisions to learn from (pairs with an image per split: {counts}); "
                         "review more files, then run `dataset from-decisions` again")
    challenger = learner.fine_tune(data, learning.epochs, learning.lr, learning.seed)
    # Each model calibrated on its own suggestions, judged at its own operating threshold on
    # the same decided pairs (train/decisions/own_suggestions.py says why: the decided pairs are the
    # champion's proposals, a biased sample for any other model).
    top_k = settings.linker.top_k
    platt_champion = learner.calibrate(champion, data, top_k)
    platt_challenger = learner.calibrate(challenger, data, top_k)
    verdict = judge(_scores(learner.judged(champion, data, platt_champion, top_k)),
                    _scores(learner.judged(challenger, data, platt_challenger, top_k)),
                    threshold=learning.threshold, resamples=learning.bootstrap, seed=learning.seed)
    operating = operating_score(platt_challenger, learning.threshold)
    verifier = _refit_verifier(settings, records, data_dir, label_set, item_images, progress)
    root = Path(models_dir)
    out = registry.new_model_dir(root, "challenger-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    now = format_timestamp()
    extra = {"from_decisions": {"data": str(data_dir), "pairs": counts, "epochs": learning.epochs, "lr": learning.lr,
                                "trained": learner.kind},
             "calibration": {"method": "platt", "a": platt_challenger.a, "b": platt_challenger.b, "top_k": top_k},
             "threshold": learning.threshold,
             # The operating threshold is part of the model: the factory applies it as the
             # minimum score wherever this checkpoint runs (None: the slope is not positive).
             "operating_threshold": operating}
    if verifier is not None and verifier.calibration is not None:
        # Applied by the factory wherever this checkpoint runs beside that verifier.
        extra["verifier_calibration"] = verifier.as_extra()
    if verifier is not None and verifier.tuned is not None:
        # The verifier's weights tuned on the decisions, a file beside the challenger: the
        # factory runs it instead of that verifier wherever this checkpoint runs beside it.
        extra["verifier_checkpoint"] = verifier.write_checkpoint(out)
    path = learner.save(out / registry.MODEL, challenger, platt_challenger,
                        running.labelset_hash if running is not None else labelset_hash(), extra)
    from wikivel_bot.linker.checkpoint import file_digest

    card = _read_card(data_dir)
    report: Dict[str, Any] = {
        "created": now, "linker": linker.spec.name, "digest": file_digest(path),
        "champion_checkpoint": running.path if running is not None else "",
        "champion_digest": running.digest if running is not None else "",
        "champion_version": linker.description.version, "trained": learner.kind, "epochs": learning.epochs,
        "operating_threshold": operating,
        "calibration": {"champion": vars(platt_champion), "challenger": vars(platt_challenger)},
        "data": card, "data_dir": str(data_dir), "skipped": data.skipped, "verdict": verdict.as_json(),
    }
    if verifier is not None:
        report["verifier"] = verifier.as_report()
    promoted = bool(promote and verdict.promote)
    if promoted:
        report.update(promoted_at=now, promoted_by=by)
    registry.write_report(out, report)
    _write_thresholds(out / "thresholds.json", linker.spec.name, operating, platt_challenger.a, platt_challenger.b,
                      learning.threshold, verdict.challenger.get("precision"))
    if promoted:
        registry.promote(root, out.name, by=by, reason="; ".join(verdict.reasons))
        write_cards(root, out.name, report)
    return RoundResult(out.name, path, verdict, promoted, report)


def _refit_verifier(settings: Any, records: List[Any], data_dir: Path, label_set: Optional[Callable[[], Any]],
                    item_images: Optional[Callable[[], Any]], progress: Callable[[str], None]) -> Any:
    """The verifier's calibration re-fitted on the held-out decisions, and its weights tuned
    on the train decisions with the round's epochs, lr and seed (kept only when they beat the
    re-fit: ``train/decisions/verifier.py``); None when no verifier is configured."""
    if not settings.linker.verifier:
        return None
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.train.decisions.verifier import refit_verifier

    learning = settings.learning
    refit = refit_verifier(settings.linker, records, data_dir, item_images=item_images,
                           label_set=label_set or (lambda: default_label_set(settings.linker.labels_dir)),
                           epochs=learning.epochs, lr=learning.lr, seed=learning.seed)
    progress(refit.summary())
    return refit


def _scores(rows: List[Any]) -> List[FileScores]:
    return [FileScores(page, tuple(ps), tuple(ys), tuple(ss)) for page, ps, ys, ss in sorted(rows, key=lambda r: r[0])]


def _read_card(data_dir: Path) -> Dict[str, Any]:
    import json

    try:
        doc = json.loads((data_dir / CARD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _write_thresholds(path: Path, linker: str, score: Optional[float], a: float, b: float, probability: float,
                      precision: Optional[float]) -> None:
    """The challenger's operating threshold as a `wikivel-bot calibrate` thresholds file, for
    ``review --calibrated`` and the web's calibrated filter: the cosine score at which its
    calibrated probability reaches ``probability`` (None: accept nothing). The running model
    applies it by itself (``linker.factory``); this file only narrows what is shown."""
    import math

    from wikivel_bot.liveeval.thresholds import FORMAT, FORMAT_VERSION, write_thresholds

    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "hops": 0,
           "target": precision if precision is not None and math.isfinite(precision) else probability,
           "linkers": {linker: {"threshold": None if score is None else round(score, 6), "on": "score",
                                "from_decisions": {"probability": probability, "platt": {"a": a, "b": b}}}}}
    write_thresholds(doc, path)  # the format's one writer (an OS error is one line)
