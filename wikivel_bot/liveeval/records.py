"""The per-file results of ``evaluate-live``: what was compared, kept as JSON Lines.

One line per (file, linker run). The first keys follow the evaluation kit's contract
(:mod:`wikivel_bot.evaluation.jsonl`), so the same file is also a predictions file for
``wikivel-bot evaluate --predictions`` and ``wikivel-bot human-eval export``::

    {"file": "M10001", "items": ["Q146", "Q729"], "scores": [0.31, 0.27],
     "title": "File:Black cat on sofa.jpg", "uploaded": "2024-05-01T08:00:00Z",
     "page_url": "...", "thumb_url": "...",
     "truth": ["Q146"], "truth_unknown": [], "truth_categories": {"Q146": "animal"},
     "truth_labels": {"Q146": "house cat"},
     "suggestions": [{"rank": 1, "qid": "Q146", "label": "house cat", "score": 0.31,
                      "category": "animal", "hop": 0, "match": "Q146",
                      "writer": "", "writer_reason": "", "evidence_kind": "category",
                      "evidence": ["Category:House cats → Q146"]}, ...],
     "found": {"Q146": [1, 1, 1, 1]},
     "hits": {"0": {"correct": [1], "credited": [1]}, "1": ..., "2": ..., "3": ...},
     "run": {"linker": "zero-shot", "random_weights": true, "labelset_hash": "sha256:…", ...}}

``truth`` are the human items (non-deprecated P180) the linker did not see; ``hop`` is the
smallest hop level at which a suggestion stands for one of them (None: for none within 3
hops); ``found[q][h]`` is the first rank that stands for human item ``q`` at hop level
``h``; ``hits`` are :class:`~wikivel_bot.core.metrics.Hits` per hop level, so every metric
can be recomputed from the file alone, without the label set or the linker. ``writer`` is
the kind of skip the writer's re-check would give (:data:`WRITER_KINDS`), "" when it would
write. ``evidence_kind`` is why the item was suggested ("image only", or the kind of the
file's own evidence naming it: :mod:`wikivel_bot.core.evidence_view`), for precision by
evidence kind.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.core.evidence import BUCKETS
from wikivel_bot.core.evidence_view import IMAGE_ONLY
from wikivel_bot.core.metrics import MAX_HOPS, Hits
from wikivel_bot.errors import UsageError

HOP_LEVELS: Tuple[int, ...] = tuple(range(MAX_HOPS + 1))
# Why the writer's re-check (core.edit_rules.plan_edit) would not write a suggestion.
ALREADY = "already-present"
MORE_SPECIFIC = "more-specific-present"
PAGE = "page-refused"  # {{nobots}}, protection: the whole page, not the item
WRITER_KINDS: Tuple[str, ...] = (ALREADY, MORE_SPECIFIC, PAGE)


@dataclass(frozen=True)
class RunInfo:
    """What one ``evaluate-live`` run measured with: the provenance every number carries.

    :param site: the wiki (API URL, or the site name when none was set).
    :param started: when the run started (ISO 8601, UTC).
    :param selection: which files, in words (``upload log since 2024-05-01``, ``-cat:Cats``).
    :param linker: linker name (``zero-shot``, ``naive-mlp``...), the key thresholds use.
    :param linker_version: the linker's version string.
    :param model: open_clip architecture (or "" for baselines).
    :param weights: pretrained tag or local weights file ("random" for random weights).
    :param random_weights: True when the backbone was not pretrained: suggestions mean nothing.
    :param checkpoint: trained head checkpoint ("" for none).
    :param labelset_hash: content hash of the label set.
    :param labelset_items: items in the label set.
    :param top_k: suggestions kept per file.
    :param tool_version: wikivel-bot version.
    """

    site: str = ""
    started: str = ""
    selection: str = ""
    linker: str = ""
    linker_version: str = ""
    model: str = ""
    weights: str = ""
    random_weights: bool = False
    checkpoint: str = ""
    labelset_hash: str = ""
    labelset_items: int = 0
    top_k: int = 0
    tool_version: str = ""

    @property
    def identity(self) -> Tuple[str, ...]:
        """What makes two runs' scores comparable: same linker, weights, checkpoint, labels."""
        return (self.linker, self.linker_version, self.model, self.weights, self.checkpoint, self.labelset_hash)

    def weights_text(self) -> str:
        """The weights in words, saying "random weights" when so."""
        if self.random_weights:
            return "random weights (no pretraining: the suggestions are meaningless)"
        return self.weights or "default weights"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunInfo":
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass(frozen=True)
class Suggestion:
    """One ranked suggestion and how it compares with the human items.

    :param rank: 1-based rank.
    :param qid: the item.
    :param score: the linker's score.
    :param label: the item's label in the label set.
    :param category: the item's super-category ("" when the label set has none).
    :param hop: smallest hop level at which it stands for a human item (None: none).
    :param match: the human item it stands for at that level ("" when none).
    :param writer: the writer's skip kind (:data:`WRITER_KINDS`), "" when it would write.
    :param writer_reason: the writer's reason in words.
    :param probability: a verifier's calibrated match probability (cascade), None without one.
    :param evidence_kind: why it was suggested, as a report bucket (``image only``,
        ``category``, ``category label``, ``link``, ``identifier``, ``several``); lines
        written before evidence existed read back as ``image only``.
    :param evidence: the evidence texts (``Category:Eiffel Tower → Q243``), none for image only.
    """

    rank: int
    qid: str
    score: float
    label: str = ""
    category: str = ""
    hop: Optional[int] = None
    match: str = ""
    writer: str = ""
    writer_reason: str = ""
    probability: Optional[float] = None
    evidence_kind: str = IMAGE_ONLY
    evidence: Tuple[str, ...] = ()

    def correct(self, hops: int) -> bool:
        """True when this suggestion stands for a human item within ``hops`` hops."""
        return self.hop is not None and self.hop <= hops


@dataclass(frozen=True)
class FileResult:
    """The comparison for one file (see the module docstring for the JSON form).

    :param file: the MediaInfo id (``M123``).
    :param truth: human items, sorted.
    :param suggestions: ranked suggestions, best first.
    :param hits: ``{hops: (correct ranks, credited ranks)}`` for hop levels 0..3.
    :param found: ``{human item: first rank standing for it at hops 0..3 (None: none)}``.
    :param truth_categories: super-category of each human item.
    :param truth_labels: label of each human item ("" when the label set has none).
    :param truth_unknown: human items the label set does not keep (not predictable at hop 0).
    :param run: the run's provenance.
    :param title: ``File:…`` title. :param uploaded: upload time (ISO, UTC).
    :param page_url: the file page. :param thumb_url: the thumbnail the linker saw.
    :param line: line number when read from a file (0 otherwise).
    :param withheld: ``{safety rule: suggestions withheld}`` for the file (``core.safety``);
        lines written before the safety rules existed read back as ``{}``.
    """

    file: str
    truth: Tuple[str, ...]
    suggestions: Tuple[Suggestion, ...]
    hits: Mapping[int, Tuple[Tuple[int, ...], Tuple[int, ...]]]
    found: Mapping[str, Tuple[Optional[int], ...]]
    truth_categories: Mapping[str, str] = field(default_factory=dict)
    truth_labels: Mapping[str, str] = field(default_factory=dict)
    truth_unknown: Tuple[str, ...] = ()
    run: RunInfo = field(default_factory=RunInfo)
    title: str = ""
    uploaded: str = ""
    page_url: str = ""
    thumb_url: str = ""
    line: int = 0
    withheld: Mapping[str, int] = field(default_factory=dict)

    @property
    def items(self) -> Tuple[str, ...]:
        """The ranked QIDs."""
        return tuple(s.qid for s in self.suggestions)

    @property
    def scores(self) -> Tuple[float, ...]:
        return tuple(s.score for s in self.suggestions)

    def hits_at(self, hops: int) -> Hits:
        """The :class:`Hits` of this file's ranking at hop level ``hops`` (0..3)."""
        correct, credited = self.hits[hops]
        return Hits(tuple(correct), tuple(credited), len(set(self.truth)), len(self.suggestions))

    def to_json(self) -> Dict[str, Any]:
        """Plain data for one JSON line (key order as in the module docstring)."""
        return {
            "file": self.file,
            "items": list(self.items),
            "scores": list(self.scores),
            "title": self.title,
            "uploaded": self.uploaded,
            "page_url": self.page_url,
            "thumb_url": self.thumb_url,
            "truth": list(self.truth),
            "truth_unknown": list(self.truth_unknown),
            "truth_categories": dict(self.truth_categories),
            "truth_labels": dict(self.truth_labels),
            "suggestions": [asdict(s) for s in self.suggestions],
            "found": {q: list(ranks) for q, ranks in self.found.items()},
            "hits": {str(h): {"correct": list(c), "credited": list(k)} for h, (c, k) in sorted(self.hits.items())},
            "run": asdict(self.run),
            "withheld": dict(self.withheld),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "", line: int = 0) -> "FileResult":
        """Read one line's data back.

        :param where: ``PATH:LINE`` for error messages.
        :raises UsageError: naming the line and the key that is missing or malformed.
        """
        try:
            suggestions = tuple(
                Suggestion(
                    rank=int(s["rank"]), qid=str(s["qid"]), score=float(s["score"]), label=str(s.get("label", "")),
                    category=str(s.get("category", "")), hop=None if s.get("hop") is None else int(s["hop"]),
                    match=str(s.get("match", "")), writer=str(s.get("writer", "")),
                    writer_reason=str(s.get("writer_reason", "")),
                    probability=None if s.get("probability") is None else float(s["probability"]),
                    evidence_kind=_bucket(s.get("evidence_kind", IMAGE_ONLY)),
                    evidence=tuple(str(t) for t in s.get("evidence", ())),
                )
                for s in data["suggestions"]
            )
            hits = {int(h): (tuple(int(r) for r in v["correct"]), tuple(int(r) for r in v["credited"]))
                    for h, v in data["hits"].items()}
            found = {str(q): tuple(None if r is None else int(r) for r in ranks) for q, ranks in data["found"].items()}
            truth = tuple(str(q) for q in data["truth"])
            result = cls(
                file=str(data["file"]), truth=truth, suggestions=suggestions, hits=hits, found=found,
                truth_categories={str(k): str(v) for k, v in data.get("truth_categories", {}).items()},
                truth_labels={str(k): str(v) for k, v in data.get("truth_labels", {}).items()},
                truth_unknown=tuple(str(q) for q in data.get("truth_unknown", ())),
                run=RunInfo.from_json(data.get("run", {})), title=str(data.get("title", "")),
                uploaded=str(data.get("uploaded", "")), page_url=str(data.get("page_url", "")),
                thumb_url=str(data.get("thumb_url", "")), line=line,
                withheld={str(k): int(v) for k, v in data.get("withheld", {}).items()},
            )
        except KeyError as exc:
            raise UsageError(f"{where}: missing key {exc.args[0]!r} (not a line written by evaluate-live?)") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: malformed result line ({exc})") from None
        if not truth:
            raise UsageError(f"{where}: no human items in 'truth'")
        missing = [h for h in HOP_LEVELS if h not in hits]
        if missing:
            raise UsageError(f"{where}: 'hits' lacks hop level(s) {missing}")
        return result


def _bucket(value: Any) -> str:
    if value not in BUCKETS:
        raise ValueError(f"evidence_kind {value!r} is not one of {', '.join(BUCKETS)}")
    return str(value)


def write_result(handle: IO[str], result: FileResult) -> None:
    """Append one result as a JSON line (flushed, so an interrupted run keeps what it did)."""
    handle.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    handle.flush()


def iter_results(path: Union[str, Path]) -> Iterator[FileResult]:
    """The results of a JSON Lines file, in file order.

    :raises UsageError: no such file, or a bad line (named with its number).
    """
    path = Path(path)
    try:
        handle = open(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, text in enumerate(handle, start=1):
            text = text.strip()
            if not text:
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(data, dict):
                raise UsageError(f"{where}: expected a JSON object")
            yield FileResult.from_json(data, where, number)


def read_results(paths: Union[str, Path, Sequence[Union[str, Path]]]) -> List[FileResult]:
    """All results of one or more files (runs of several linkers may be concatenated).

    :raises UsageError: a bad line, no results at all, or one file twice in one linker's run.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    results: List[FileResult] = []
    seen: Dict[Tuple[str, str], str] = {}
    for path in paths:
        for result in iter_results(path):
            key = (result.run.linker, result.file)
            where = f"{path}:{result.line}"
            if key in seen:
                raise UsageError(f"{where}: {result.file} of linker {result.run.linker!r} already on {seen[key]}")
            seen[key] = where
            results.append(result)
    if not results:
        raise UsageError(f"no results in {', '.join(str(p) for p in paths)}")
    return results


def by_linker(results: Iterable[FileResult]) -> Dict[str, List[FileResult]]:
    """Results grouped by linker name (sorted), each group in file order.

    :raises UsageError: when one linker name covers runs that are not comparable (other
        weights, checkpoint or label set): thresholds and summaries would mix them.
    """
    groups: Dict[str, List[FileResult]] = {}
    identity: Dict[str, Tuple[str, ...]] = {}
    for result in results:
        name = result.run.linker
        known = identity.setdefault(name, result.run.identity)
        if known != result.run.identity:
            raise UsageError(f"results of linker {name!r} come from different setups (weights, checkpoint or "
                             f"label set differ, line {result.line}); evaluate them in separate files")
        groups.setdefault(name, []).append(result)
    return {name: groups[name] for name in sorted(groups)}


def write_truth(handle: IO[str], result: FileResult) -> None:
    """One ``{"file", "items"}`` truth line (for ``wikivel-bot evaluate --truth``)."""
    handle.write(json.dumps({"file": result.file, "items": list(result.truth)}) + "\n")
