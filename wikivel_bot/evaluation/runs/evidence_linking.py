"""The evidence bench's linkers: trained, built as every path builds them, fed the set's evidence.

``evidence.py`` measures; this module gets it what it measures: the heads trained as
``dataset reproduce-synthetic`` trains them (:func:`train_linkers`, with the bench's training
seed), the ready linker built by ``build_ready_linker`` (:func:`ready_linker`), the set's
evidence handed over where a resolver over Commons would be (:class:`SyntheticResolver`),
and a split's files linked through ``ReadyLinker.link`` (:func:`link_files_of`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.core.evidence import Evidence
from wikivel_bot.evaluation.runs.reproduce import ReproduceOptions
from wikivel_bot.train.synthetic.evidence import SyntheticEvidence
from wikivel_bot.types import Candidate, MediaFile

CHUNK = 64


class SyntheticResolver:
    """The set's evidence where ``commons.evidence.EvidenceResolver`` would resolve Commons':
    the ready linker asks it for a batch's evidence, and the items outside the label set."""

    def __init__(self, evidence: SyntheticEvidence) -> None:
        self.evidence = evidence
        self.requests = 0  # nothing is asked of a wiki

    def resolve(self, files: Sequence[MediaFile]) -> Tuple[Dict[int, Tuple[Evidence, ...]], Dict[str, Any]]:
        found = {f.page_id: self.evidence.sources.get(f.page_id, ()) for f in files}
        named = {ev.qid for sources in found.values() for ev in sources}
        return found, {q: self.evidence.items[q] for q in named if q in self.evidence.items}


def train_linkers(data: Path, out: Path, options: Any) -> Dict[str, Optional[Path]]:
    """The checkpoint of each linker (None for zero-shot), trained as reproduce-synthetic does."""
    from wikivel_bot.train.cascade.fit import CascadeTrainConfig, train_cascade
    from wikivel_bot.train.fitting.loop import TrainConfig, train

    common: Dict[str, Any] = dict(data=str(data), model=str(data / "tiny-model.json"), pretrained="", weights="random",
                                  device="cpu", threads=options.threads, seed=options.training_seed,
                                  cache_dir=str(out / "cache"), progress=options.progress, patience=100)
    found: Dict[str, Optional[Path]] = {"zero-shot": None}
    wanted = set(options.linkers)
    for name in ("naive-mlp", "fusion"):
        if name in wanted or (name == "naive-mlp" and "cascade" in wanted):  # the cascade's first stage
            result = train(TrainConfig(linker=name, out=str(out / "runs" / name), epochs=options.epochs,
                                       batch_size=ReproduceOptions.batch_size, lr=0.01, **common))
            found[name] = Path(result.best or result.last)
    if "cascade" in wanted:
        result = train_cascade(CascadeTrainConfig(out=str(out / "runs" / "cascade"), first_stage=str(found["naive-mlp"]),
                                                  candidates=options.candidates, epochs=options.cascade_epochs,
                                                  batch_size=32, lr=0.003, **common))
        found["cascade"] = Path(result.best or result.last)
    return {name: found[name] for name in options.linkers}


def split_files(dataset: Any, store: Any, split: str) -> List[Tuple[MediaFile, bytes]]:
    """(file, image bytes) of a split's files, as the fetcher would hand them to the linker."""
    table = dataset.table
    out = []
    for row in dataset.split_rows(split).tolist():
        page_id, title = int(dataset.page_ids[row]), dataset.titles[row]
        data = store.get(page_id, title)
        if data:
            out.append((MediaFile(page_id=page_id, title=title, description=table.column("description")[row].as_py() or "",
                                  categories=tuple(table.column("categories")[row].as_py() or ())), data))
    return out


def ready_linker(name: str, checkpoint: Optional[Path], data: Path, out: Path, options: Any,
                 label_set: Any, loader: Any, resolver: Optional[SyntheticResolver], model: str) -> Any:
    """The ready linker as every path builds it (``build_ready_linker``), attached to the set."""
    from wikivel_bot.config import CascadeSettings, EvidenceSettings, LinkerSettings, Settings
    from wikivel_bot.linker import build_ready_linker

    linker = LinkerSettings(name=name, model=str(Path(data) / "tiny-model.json"), pretrained="", weights="random",
                            checkpoint=str(checkpoint or ""), device="cpu", threads=options.threads,
                            cache_dir=str(Path(out) / "cache"), batch_size=CHUNK, precision=options.precision,
                            top_k=options.top_k, evidence_model=model,
                            # A random-init backbone's cosines sit around 0: rank them all.
                            min_score=-2.0)
    # The set already holds its category-label evidence, in its configured share.
    settings = dataclasses.replace(Settings(), linker=linker, cascade=CascadeSettings(candidates=options.candidates),
                                   evidence=EvidenceSettings(category_label_match=False))
    source = (lambda: resolver) if resolver is not None else None
    return build_ready_linker(settings, label_set, item_images=lambda: loader, evidence=source)


def link_files_of(ready: Any, files: Sequence[Tuple[MediaFile, bytes]]) -> Dict[int, Tuple[Candidate, ...]]:
    """{page id: candidates, best first} of every file, through ``ReadyLinker.link``."""
    from wikivel_bot.linker.link import Linked

    out: Dict[int, Tuple[Candidate, ...]] = {}
    for start in range(0, len(files), CHUNK):
        for outcome in ready.link(files[start:start + CHUNK]):
            out[outcome.media.page_id] = outcome.candidates if isinstance(outcome, Linked) else ()
    return out
