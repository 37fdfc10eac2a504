"""One learning round: decision records → a challenger → judged → promoted only if it wins.

``train --from-decisions`` runs :func:`train_challenger` on a dataset of
``dataset from-decisions``; the daemon's scheduled job (``learning.schedule``) builds that
dataset and runs the same function. The challenger always stays in the models directory
with its report (``NAME/report.json``); when ``promote`` is asked for, the registry runs it
on a win, and otherwise runs the running model *recalibrated* on this round's decisions (same
weights, a new entry ``recalibrated-…``): the judge compared the challenger with that
recalibrated model, so it is what should run when the challenger loses. Every change is
audited (``registry.audit``) and undone by ``models rollback``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError
from wikivel_bot.learning import registry
from wikivel_bot.learning.card import write_cards
from wikivel_bot.learning.dataset import CARD, RECORDS
from wikivel_bot.learning.contest import Rules, contest, recalibration_refused
from wikivel_bot.learning.judge import Verdict
from wikivel_bot.learning.records import read_records


@dataclass(frozen=True)
class RoundResult:
    """A round's challenger (``name``, ``checkpoint``), its verdict, whether it now runs, its
    report, and the running model's recalibrated entry when the challenger was kept (or None)."""

    name: str
    checkpoint: Path
    verdict: Verdict
    promoted: bool
    report: Dict[str, Any]
    recalibrated: Optional[str] = None


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
    linker, running = learner.linker, learner.running
    progress(f"champion: {linker.description.version} (training its {learner.kind})")
    data = learner.encode(records, data_dir)
    counts = {s: int(data.select(s).numel()) for s in ("train", "calibration", "evaluation")}
    if min(counts.values()) == 0:
        raise UsageError(f"too few decisions to learn from (pairs with an image per split: {counts}); "
                         "review more files, then run `dataset from-decisions` again")
    # The contest (learning/contest.py): each model calibrated on its own suggestions (the
    # decided pairs are the champion's proposals, a biased sample for any other model:
    # train/decisions/own_suggestions.py), judged at its own operating threshold on the same
    # decided pairs, each reviewer's share of them capped, and a win left to survive
    # leaving out any one reviewer.
    top_k = settings.linker.top_k
    rules = Rules(threshold=learning.threshold, top_k=top_k, epochs=learning.epochs, lr=learning.lr,
                  seed=learning.seed, resamples=learning.bootstrap)
    current = _current_calibration(running)
    outcome = contest(learner, data, rules, current=current)
    verdict, challenger = outcome.verdict, outcome.challenger
    platt_challenger, platt_champion = outcome.calibration, outcome.champion_calibration
    if platt_challenger is None:
        progress("challenger not calibrated: its own suggestions on the calibration files are of one kind; "
                 "the running model keeps its threshold")
    operating = operating_score(platt_challenger, learning.threshold) if platt_challenger is not None else None
    verifier = _refit_verifier(settings, records, data_dir, label_set, item_images, progress)
    # The evidence model learns from the same decisions, judged by the same contest (learning/evidence.py).
    evidence, evidence_report = _learn_evidence(settings, running, records, rules, progress)
    root = Path(models_dir)
    out = registry.new_model_dir(root, "challenger-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    now = format_timestamp()
    labelset = running.labelset_hash if running is not None else labelset_hash()
    base = {"data": str(data_dir), "pairs": counts, "epochs": learning.epochs, "lr": learning.lr}
    extra = _extra({**base, "trained": learner.kind}, platt_challenger, top_k, learning.threshold, operating, verifier,
                   out, evidence)
    path = learner.save(out / registry.MODEL, challenger, platt_challenger if platt_challenger is not None else current,
                        labelset, extra)
    from wikivel_bot.linker.checkpoint import file_digest

    card = _read_card(data_dir)
    report: Dict[str, Any] = {
        "created": now, "linker": linker.spec.name, "digest": file_digest(path),
        "champion_checkpoint": running.path if running is not None else "",
        "champion_digest": running.digest if running is not None else "",
        "champion_version": linker.description.version, "trained": learner.kind, "epochs": learning.epochs,
        "operating_threshold": operating,
        "calibration": {"champion": _plain(platt_champion), "challenger": _plain(platt_challenger)},
        "reviewers": outcome.report(), "evidence_model": evidence_report,
        "data": card, "data_dir": str(data_dir), "skipped": data.skipped, "verdict": verdict.as_json(),
    }
    if verifier is not None:
        report["verifier"] = verifier.as_report()
    promoted = bool(promote and verdict.promote)
    if promoted:
        report.update(promoted_at=now, promoted_by=by)
    registry.write_report(out, report)
    if platt_challenger is not None:
        _write_thresholds(out / "thresholds.json", linker.spec.name, operating, platt_challenger.a, platt_challenger.b,
                          learning.threshold, verdict.challenger.get("precision"))
    recalibrated = None
    if promoted:
        registry.promote(root, out.name, by=by, reason="; ".join(verdict.reasons))
        write_cards(root, out.name, report)
    elif promote:
        why = recalibration_refused(platt_champion, data)
        if why:
            progress(f"running model not recalibrated: {why}; it keeps its threshold")
        else:
            recalibrated = _recalibrate(root, learner, platt_champion, report, base, top_k, learning.threshold, verifier,
                                        labelset, by, evidence)
            progress(f"running model recalibrated (same weights): {recalibrated} now runs; "
                     "`wikivel-bot models rollback` undoes it")
    return RoundResult(out.name, path, verdict, promoted, report, recalibrated)


def _recalibrate(root: Path, learner: Any, platt: Any, challenger_report: Dict[str, Any], base: Dict[str, Any],
                 top_k: int, threshold: float, verifier: Any, labelset: str, by: str, evidence: Any) -> str:
    """The running model's weights with this round's calibration, as a new entry of the models
    directory that runs from now on: audited as ``recalibrate``, undone by ``models rollback``.
    Without it a kept challenger would leave the running model at a threshold fitted on older
    decisions, while the judge compared the challenger with the recalibrated one."""
    from wikivel_bot.linker.checkpoint import file_digest
    from wikivel_bot.train.decisions.own_suggestions import operating_score

    operating = operating_score(platt, threshold)
    out = registry.new_model_dir(root, "recalibrated-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    extra = _extra({**base, "trained": "calibration only (the running model's weights)"}, platt, top_k, threshold,
                   operating, verifier, out, evidence)
    path = learner.save(out / registry.MODEL, learner.champion, platt, labelset, extra)
    verdict = challenger_report["verdict"]
    why = (f"the running model recalibrated on its own suggestions of the calibration files (operating score "
           f"{operating:.4f}, same weights); the round's challenger was kept")
    report = {key: challenger_report[key] for key in ("linker", "champion_checkpoint", "champion_digest",
                                                      "champion_version", "data", "data_dir", "reviewers",
                                                      "evidence_model")}
    report.update(created=format_timestamp(), digest=file_digest(path), trained="calibration only", epochs=0,
                  operating_threshold=operating, calibration={"running": _plain(platt)},
                  verdict={"outcome": "recalibrated", "reasons": [why], "threshold": threshold,
                           "files": verdict.get("files"), "challenger": verdict.get("champion", {})})
    report.update(promoted_at=report["created"], promoted_by=by)
    registry.write_report(out, report)
    _write_thresholds(out / "thresholds.json", str(report["linker"]), operating, platt.a, platt.b, threshold,
                      verdict.get("champion", {}).get("precision"))
    registry.promote(root, out.name, by=by, reason=why, action="recalibrate")
    write_cards(root, out.name, report)
    return out.name


def _extra(trained: Dict[str, Any], platt: Any, top_k: int, threshold: float, operating: Optional[float],
           verifier: Any, out: Path, evidence: Any = None) -> Dict[str, Any]:
    """What a checkpoint of the round stores beside its weights (``linker.learned`` reads it)."""
    extra: Dict[str, Any] = {
        "from_decisions": trained,
        "calibration": None if platt is None else {"method": "platt", "a": platt.a, "b": platt.b, "top_k": top_k},
        "threshold": threshold,
        # The operating threshold is part of the model: the factory applies it as the
        # minimum score wherever this checkpoint runs (None: no usable calibration).
        "operating_threshold": operating}
    if verifier is not None and verifier.calibration is not None:
        # Applied by the factory wherever this checkpoint runs beside that verifier.
        extra["verifier_calibration"] = verifier.as_extra()
    if verifier is not None and verifier.tuned is not None:
        # The verifier's weights tuned on the decisions, a file beside the checkpoint: the
        # factory runs it instead of that verifier wherever this checkpoint runs beside it.
        extra["verifier_checkpoint"] = verifier.write_checkpoint(out)
    if evidence is not None:
        # The evidence model that runs with this checkpoint (won this round, or carried over
        # from the running one), a file beside it: linker.learned.learned_evidence_model.
        from wikivel_bot.learning.evidence import save_evidence_model

        extra["evidence_model"] = save_evidence_model(evidence, out)
    return extra


def _learn_evidence(settings: Any, running: Any, records: List[Any], rules: Any,
                    progress: Callable[[str], None]) -> Tuple[Any, Dict[str, Any]]:
    """(the evidence model to carry in this round's checkpoints, or None; the report). The
    model fitted on the decisions when it wins its contest; else the learned one that runs now
    (never the configured ``linker.evidence_model``: the factory loads that one by itself)."""
    from wikivel_bot.learning.evidence import learn_evidence_model, running_evidence_model

    current = running_evidence_model(settings.linker.evidence_model, running)
    outcome, report = learn_evidence_model(records, current, rules)
    if outcome.verdict.promote:
        progress("evidence model learned from the decisions: " + "; ".join(outcome.verdict.reasons))
        return outcome.challenger, report
    progress("evidence model not learned: " + "; ".join(outcome.verdict.reasons))
    return (current if current is not None and not settings.linker.evidence_model else None), report


def _current_calibration(running: Any) -> Any:
    """The running checkpoint's own Platt map as it runs now (None: an uncalibrated linker)."""
    extra = getattr(running, "extra", None) if running is not None else None
    doc = extra.get("calibration") if isinstance(extra, dict) else None
    if not isinstance(doc, dict) or doc.get("method") != "platt":
        return None
    from wikivel_bot.train.decisions.heads import Platt

    return Platt(float(doc["a"]), float(doc["b"]))


def _plain(platt: Any) -> Optional[Dict[str, float]]:
    return None if platt is None else {"a": platt.a, "b": platt.b}


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
