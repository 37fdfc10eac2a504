"""The thresholds file of ``wikivel-bot calibrate`` and the filter that applies it.

``thresholds.json`` holds, per linker, the score a suggestion must reach (and optionally one
per super-category), with what the threshold gave on the calibration part and on the
held-out part of the files::

    {"format": "wikivel-thresholds", "format_version": 1, "target": 0.9, "hops": 0,
     "holdout": 0.5, "min_support": 10, "by_category": false, "results": ["results.jsonl"],
     "linkers": {"zero-shot": {
         "threshold": 0.2931,            # null: the target was not reached, accept nothing
         "run": {...provenance...}, "files": {"calibrate": 51, "held_out": 49},
         "calibration": {...OperatingPoint...}, "held_out": {...OperatingPoint...},
         "categories": {"animal": {"threshold": 0.27, "calibration": {...}, "held_out": {...}}},
         "held_out_combined": {...}}}}

The filter (:class:`CalibratedFilter`) keeps a suggestion when its linker was calibrated and
its score reaches the threshold of its super-category (when one was calibrated) or else the
linker's. Suggestions of a linker the file does not know are left out: "calibrated" means
measured to reach the target, and nothing else was.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.errors import UsageError

FORMAT = "wikivel-thresholds"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class LinkerThresholds:
    """One linker's thresholds.

    :param threshold: accept ``score >= threshold``; None = accept nothing.
    :param categories: ``{super-category: threshold or None}``; categories not listed use
        :attr:`threshold`.
    :param info: everything else stored for the linker (run, operating points), as read.
    """

    linker: str
    threshold: Optional[float]
    categories: Mapping[str, Optional[float]] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def on(self) -> str:
        """What the threshold applies to: ``score`` (default) or a verifier's ``probability``."""
        return str(self.info.get("on", "score"))

    def threshold_for(self, category: str = "") -> Optional[float]:
        """The threshold of a suggestion in ``category`` (the linker's when not calibrated)."""
        if category and category in self.categories:
            return self.categories[category]
        return self.threshold


@dataclass(frozen=True)
class Thresholds:
    """A whole thresholds file.

    :param target: the precision asked for. :param hops: hop credit used for "correct".
    :param linkers: ``{linker name: LinkerThresholds}``.
    :param document: the file's full JSON (for reports).
    """

    target: float
    hops: int
    linkers: Mapping[str, LinkerThresholds]
    document: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def by_category(self) -> bool:
        """True when some linker has per-category thresholds (the filter needs categories)."""
        return any(t.categories for t in self.linkers.values())


def thresholds_document(linkers: Mapping[str, Mapping[str, Any]], *, target: float, hops: int, holdout: float,
                        min_support: int, by_category: bool, results: Sequence[str]) -> Dict[str, Any]:
    """The JSON document of a thresholds file (see the module docstring).

    :param linkers: ``{name: {"threshold": ..., "categories": {name: {"threshold": ...}}, ...}}``.
    """
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "target": target,
        "hops": hops,
        "holdout": holdout,
        "min_support": min_support,
        "by_category": by_category,
        "results": list(results),
        "linkers": {name: dict(linkers[name]) for name in sorted(linkers)},
    }


def write_thresholds(document: Mapping[str, Any], path: Union[str, Path]) -> None:
    """Write a thresholds document as JSON.

    :raises UsageError: the file cannot be written.
    """
    try:
        Path(path).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def parse_thresholds(document: Mapping[str, Any], where: str = "thresholds") -> Thresholds:
    """A :class:`Thresholds` from a document.

    :raises UsageError: not a thresholds document, or a malformed threshold (named).
    """
    if not isinstance(document, Mapping) or document.get("format") != FORMAT:
        raise UsageError(f"{where}: not a thresholds file of `wikivel-bot calibrate`")
    if document.get("format_version") != FORMAT_VERSION:
        raise UsageError(f"{where}: format version {document.get('format_version')!r} is not supported "
                         f"(expected {FORMAT_VERSION})")
    linkers: Dict[str, LinkerThresholds] = {}
    raw = document.get("linkers")
    if not isinstance(raw, Mapping) or not raw:
        raise UsageError(f"{where}: no linkers")
    for name, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise UsageError(f"{where}: linker {name!r} is not an object")
        categories = {str(c): _threshold(v.get("threshold") if isinstance(v, Mapping) else v, f"{where}: {name}/{c}")
                      for c, v in (entry.get("categories") or {}).items()}
        linkers[str(name)] = LinkerThresholds(str(name), _threshold(entry.get("threshold"), f"{where}: {name}"),
                                              categories, entry)
    try:
        target = float(document["target"])
        hops = int(document.get("hops", 0))
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{where}: 'target' must be a number") from None
    return Thresholds(target, hops, linkers, document, where)


def load_thresholds(path: Union[str, Path]) -> Thresholds:
    """Read ``thresholds.json``.

    :raises UsageError: missing, unreadable or not a thresholds file.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg})") from None
    return parse_thresholds(document, str(path))


def _threshold(value: Any, where: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{where}: threshold {value!r} is not a number or null")
    return float(value)


class CalibratedFilter:
    """Keeps the suggestions that reach their calibrated threshold.

    :param thresholds: the loaded file.
    :param category_of: ``qid -> super-category``; needed when the file has per-category
        thresholds (else every suggestion gets its linker's threshold).
    """

    def __init__(self, thresholds: Thresholds, category_of: Optional[Callable[[str], str]] = None) -> None:
        self.thresholds = thresholds
        self.category_of = category_of
        self.kept = 0
        self.removed = 0
        self.uncalibrated: Dict[str, int] = {}  # linker -> suggestions left out for lack of a threshold

    def threshold(self, linker: str, qid: str) -> Tuple[bool, Optional[float]]:
        """(linker calibrated?, threshold for ``qid``; None = accept nothing)."""
        entry = self.thresholds.linkers.get(linker)
        if entry is None:
            return False, None
        category = self.category_of(qid) if (self.category_of and entry.categories) else ""
        return True, entry.threshold_for(category)

    def keep(self, linker: str, qid: str, score: Optional[float], probability: Optional[float] = None) -> bool:
        """True when a suggestion of ``linker`` for ``qid`` with ``score`` passes.

        A pair without a score (added by a reviewer, not by a linker) always passes: there
        is nothing to calibrate. A linker calibrated on a verifier's probability compares
        ``probability`` instead (a suggestion without one does not pass).
        """
        if score is None:
            self.kept += 1
            return True
        calibrated, threshold = self.threshold(linker, qid)
        if not calibrated:
            self.uncalibrated[linker] = self.uncalibrated.get(linker, 0) + 1
        entry = self.thresholds.linkers.get(linker)
        value = probability if entry is not None and entry.on == "probability" else score
        passed = threshold is not None and value is not None and float(value) >= threshold
        if passed:
            self.kept += 1
        else:
            self.removed += 1
        return passed

    def summary(self) -> str:
        """One line for the operator: what the filter did."""
        text = (f"calibrated thresholds ({self.thresholds.path or 'file'}, target precision "
                f"{self.thresholds.target:g} at hops {self.thresholds.hops}): kept {self.kept}, "
                f"left out {self.removed}")
        if self.uncalibrated:
            names = ", ".join(f"{name} ({count})" for name, count in sorted(self.uncalibrated.items()))
            text += f"; no threshold for linker(s) {names}, their suggestions were left out"
        return text


def filter_for(path: Union[str, Path], label_set_loader: Optional[Callable[[], Any]] = None) -> CalibratedFilter:
    """A :class:`CalibratedFilter` for ``thresholds.json``; the label set is loaded (through
    ``label_set_loader``) only when per-category thresholds need super-categories.

    :param path: the thresholds file.
    :param label_set_loader: returns a label set with ``super_category(qid)``.
    """
    thresholds = load_thresholds(path)
    category_of = None
    if thresholds.by_category and label_set_loader is not None:
        label_set = label_set_loader()
        category_of = _category_function(label_set)
    return CalibratedFilter(thresholds, category_of)


def _category_function(label_set: Any) -> Callable[[str], str]:
    method = getattr(label_set, "super_category", None)
    if method is None:
        return lambda qid: ""
    return lambda qid: method(qid) or ""
