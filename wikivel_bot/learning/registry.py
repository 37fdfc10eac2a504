"""The models directory: checkpoints trained from decisions, their reports, and which runs.

Layout (``learning.models_dir``)::

    registry.json          {"running": "NAME" or null, "previous": [...older running names]}
    audit.jsonl            one line per promotion, recalibration or rollback: when, who, from, to, why
    NAME/model.pt          the checkpoint (a linker head checkpoint)
    NAME/report.json       its judgement: metrics of champion and challenger, the verdict

Why a file and not a database row: ``suggest`` has no queue database, and every path that
builds a linker must agree on the checkpoint. Settings are read without it (``config``
knows nothing of models); the one factory (``linker.factory.build_ready_linker``) and the
learning round ask :func:`with_running_model` when they build a linker, so the daemon,
``suggest``, ``link``, the backfill's actors and the round run (and name, in their linker
version) the promoted model, while ``status`` and ``config show`` start with a broken
registry and say what is wrong (:func:`running_model_problem`). Writes are atomic (temporary
file, rename). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError

REGISTRY = "registry.json"
AUDIT = "audit.jsonl"
MODEL = "model.pt"
REPORT = "report.json"
# Where config.Settings.origins says a key came from when a command's flag set it.
COMMAND_LINE = "the command line"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class ModelEntry:
    """One checkpoint of the models directory, as ``models`` lists it."""

    name: str
    path: Path
    running: bool
    report: Mapping[str, Any]
    # The running checkpoint whose model.pt is gone: listed so `models` can say so.
    missing: bool = False

    @property
    def verdict(self) -> str:
        return str(self.report.get("verdict", {}).get("outcome", "")) if self.report else ""


def running_checkpoint(models_dir: str | Path) -> Optional[Path]:
    """The checkpoint registry.json names as running, or None (nothing promoted yet).

    :raises UsageError: an unreadable registry, or a running model whose file is gone (the
        message names the way out: the ``models`` commands load settings without this).
    """
    name = read_registry(models_dir).get("running")
    if not name:
        return None
    path = Path(models_dir) / str(name) / MODEL
    if not path.is_file():
        # Never another model in its place: a silent change of model would be unaudited.
        raise UsageError(f"{Path(models_dir) / REGISTRY} names {name!r} as running, but {path} is missing; "
                         "run `wikivel-bot models rollback` (or `models promote NAME`)")
    return path


def running_linker(models_dir: str | Path) -> Optional[str]:
    """The linker variant the running checkpoint was trained as (its report's ``linker``),
    or None: a checkpoint learned on a zero-shot linker's embeddings runs as ``naive-mlp``."""
    name = read_registry(models_dir).get("running")
    linker = read_report(Path(models_dir) / str(name)).get("linker") if name else None
    return str(linker) if linker else None


def with_running_model(settings: Any, given: Iterable[str] = ()) -> Any:
    """``settings`` with the checkpoint ``learning.models_dir`` runs in ``linker`` (and, when
    its report names one, the variant it runs as); unchanged without a models directory or
    before any promotion. Duck-typed on ``config.Settings`` (``learning.models_dir``,
    ``replace``), so this module stays standard library only.

    :param given: linker keys a command set by its own flags (``suggest --checkpoint``);
        with the keys the settings' origins name as set on "the command line" (global
        overrides, ``run --linker``), an explicit ``checkpoint`` runs as given and an
        explicit ``name`` is kept.
    :raises UsageError: the registry is unreadable, or its running model's file is gone
        (never another model in its place: a silent change of model would be unaudited).
    """
    models_dir = settings.learning.models_dir
    given = {*given, *(key.split(".", 1)[1] for key, where in getattr(settings, "origins", ())
                       if key.startswith("linker.") and where == COMMAND_LINE)}
    if not models_dir or "checkpoint" in given:
        return settings
    try:
        running = running_checkpoint(models_dir)
        linker = running_linker(models_dir)
    except UsageError as exc:
        raise UsageError(f"learning.models_dir: {exc}") from None
    if running is None:
        return settings
    # A head learned over a zero-shot linker's embeddings runs as the variant it was saved as.
    changes: Dict[str, Any] = {"checkpoint": str(running)}
    if linker and "name" not in given:
        changes["name"] = linker
    return settings.replace("linker", **changes)


def running_model_problem(models_dir: str | Path) -> Optional[str]:
    """What stops a linker from being built with this models directory, in one line, or None:
    ``status`` and ``config show`` say it instead of refusing to start."""
    if not models_dir:
        return None
    try:
        running_checkpoint(models_dir)
    except UsageError as exc:
        return str(exc)
    return None


def read_registry(models_dir: str | Path) -> Dict[str, Any]:
    path = Path(models_dir) / REGISTRY
    if not path.is_file():
        return {"running": None, "previous": []}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable models registry: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a readable models registry")
    doc.setdefault("running", None)
    doc.setdefault("previous", [])
    return doc


def list_models(models_dir: str | Path) -> List[ModelEntry]:
    """Every checkpoint directory (oldest name first) with its report and whether it runs;
    a running checkpoint whose ``model.pt`` is gone comes last, marked ``missing``."""
    root = Path(models_dir)
    running = read_registry(root).get("running") if root.is_dir() else None
    entries = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        if (sub / MODEL).is_file():
            entries.append(ModelEntry(sub.name, sub / MODEL, sub.name == running, read_report(sub)))
    if running and not any(e.running for e in entries):
        gone = root / str(running)
        entries.append(ModelEntry(str(running), gone / MODEL, True, read_report(gone), missing=True))
    return entries


def read_report(model_dir: Path) -> Dict[str, Any]:
    try:
        doc = json.loads((model_dir / REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def new_model_dir(models_dir: str | Path, stem: str) -> Path:
    """A fresh directory for a challenger: ``STEM``, or ``STEM-2``... when taken."""
    root = Path(models_dir)
    root.mkdir(parents=True, exist_ok=True)
    candidate, n = root / stem, 1
    while candidate.exists():
        n += 1
        candidate = root / f"{stem}-{n}"
    candidate.mkdir()
    return candidate


def write_report(model_dir: Path, report: Mapping[str, Any]) -> Path:
    return _write_json(model_dir / REPORT, report)


def promote(models_dir: str | Path, name: str, *, by: str, reason: str = "", action: str = "promote") -> Optional[str]:
    """Make NAME the running checkpoint; returns the one it replaced. Audited.

    :param action: the audit line's action: ``promote``, or ``recalibrate`` for the running
        model's weights recalibrated by a learning round (``learning.cycle``); both are undone
        by :func:`rollback` alike.
    :raises UsageError: no such checkpoint.
    """
    root = Path(models_dir)
    require_checkpoint(root, name)
    doc = read_registry(root)
    before = doc.get("running")
    if before == name:
        raise UsageError(f"{name} is already the running checkpoint")
    previous = [p for p in doc.get("previous", []) if p != name]
    if before:
        previous.append(before)
    _write_json(root / REGISTRY, {"running": name, "previous": previous})
    audit(root, action, by=by, before=before, after=name, reason=reason)
    return before


def rollback(models_dir: str | Path, *, by: str, reason: str = "") -> Optional[str]:
    """Run the checkpoint that ran before the current one (or the linker's own
    ``linker.checkpoint`` when none did); returns the name now running. Audited.

    :raises UsageError: nothing was promoted.
    """
    root = Path(models_dir)
    doc = read_registry(root)
    before = doc.get("running")
    if not before:
        raise UsageError(f"nothing to roll back: no checkpoint of {root} runs")
    previous = [p for p in doc.get("previous", []) if (root / p / MODEL).is_file()]
    after = previous.pop() if previous else None
    _write_json(root / REGISTRY, {"running": after, "previous": previous})
    audit(root, "rollback", by=by, before=before, after=after, reason=reason)
    return after


def audit(root: Path, action: str, **fields: Any) -> None:
    """One line in ``audit.jsonl``: what changed, who did it, when (UTC)."""
    line = {"at": format_timestamp(), "action": action, **fields}
    root.mkdir(parents=True, exist_ok=True)
    with (root / AUDIT).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")


def audit_lines(models_dir: str | Path) -> List[Dict[str, Any]]:
    path = Path(models_dir) / AUDIT
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def require_checkpoint(models_dir: str | Path, name: str) -> None:
    """Refuse a NAME with no checkpoint in the models directory, before anything else is
    said about it: a typo must not read as a checkpoint that lost its judgement.

    :raises UsageError: not a name, or no ``NAME/model.pt``; the message lists the
        checkpoints there are and where to see them (``wikivel-bot models``).
    """
    root = Path(models_dir)
    check_name(name)
    if (root / name / MODEL).is_file():
        return
    present = [e.name for e in list_models(root) if not e.missing]
    there = f"checkpoints there: {', '.join(present)}" if present else "it holds no checkpoint yet"
    raise UsageError(f"no checkpoint {name!r} in {root} ({there}); `wikivel-bot models` lists them "
                     "with their verdicts")


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise UsageError(f"not a checkpoint name: {name!r}")


def _write_json(path: Path, doc: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(dict(doc), out, indent=2, ensure_ascii=False, sort_keys=True)
            out.write("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
