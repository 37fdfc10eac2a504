"""The synthetic coloured shapes with Commons-like evidence, some of it misleading.

The files, images and items of ``shapes.py``; each file's leaf item ("red circle") is
what it depicts. On top, each file independently gains evidence as a resolver would return it
(``core.evidence.Evidence``), with controlled shares (:data:`DEFAULT_SHARES`):

* ``category`` — a category linked to its leaf: ``Category:Red circle shapes → leaf``;
* ``category_label`` — an unlinked category named exactly like the leaf (``Category:Red circle``);
* ``link`` — a description link to it (``[[w:en:Red circle]]``; the description names it);
* ``identifier`` — an identifier template resolving to it (``{{Synthetic shape register|0-0}}``);
* ``misleading`` — a category linked to a leaf the file does *not* depict (another leaf,
  drawn uniformly): ``Category:Photographs by Blue square`` → blue square, as
  "Photographs by X" names the photographer;
* the error knobs of ``evidence_errors`` (all 0 by default; ``HARD_SHARES`` sets them):
  every kind wrong at its own rate, the photographer linked too, look-alike wrong leaves,
  item-dependent presence and reliability;
* ``outside_label_set`` — the share of leaf items held out of the label set: their files keep
  them as depicted (``source_items``) but the label set maps them to their colour and shape
  classes, so an image-only linker cannot name them; only evidence can.

The categories join the file's categories and a link's title its description, as on Commons.

Written beside the usual dataset (``make_synthetic``'s layout): ``evidence.jsonl`` (per file:
``page_id``, ``depicts`` — the items as depicted, held-out leaves included — and ``sources``,
``Evidence.as_dict()`` each) and ``evidence_items.jsonl`` (what the resolver returns for
evidence items outside the label set, as :class:`~wikivel_bot.wikidata.entities.ItemInfo`
fields, so a linker can encode them; held-out leaves get their own P18 image, not a file of
the set). The card says ``"synthetic": true`` and, under ``"evidence"``, the configured and
the realised shares. Nothing here is Commons data; every number measured on it is SYNTHETIC.

:func:`simulated_records` adds SIMULATED image scores (a stand-in for a linker's, until the
linker scores evidence items itself) to make candidate records for ``train evidence``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.core.evidence import (
    KIND_CATEGORY,
    KIND_CATEGORY_LABEL,
    KIND_ID,
    KIND_LINK,
    Evidence,
    link_source,
)
from wikivel_bot.errors import UsageError
from wikivel_bot.train.evidence.fit import CandidateRecord, records_from_scores
from wikivel_bot.train.synthetic.evidence_errors import ERROR_SHARES, ErrorDraws, present
from wikivel_bot.train.synthetic.shapes import (
    COLOURS,
    ROOT_COLOUR,
    ROOT_SHAPE,
    SHAPES,
    SyntheticFile,
    colour_qid,
    draw,
    generate_files,
    item_records,
    leaf_images,
    leaf_qid,
    shape_qid,
    tiny_model_config,
    write_images,
)
from wikivel_bot.types import is_qid, qid_number
from wikivel_bot.wikidata.entities import ItemInfo

DEFAULT_SHARES: Dict[str, float] = {"category": 0.5, "category_label": 0.1, "link": 0.3, "identifier": 0.2,
                                    "misleading": 0.3, "outside_label_set": 0.2}
EVIDENCE_FILE = "evidence.jsonl"
ITEMS_FILE = "evidence_items.jsonl"
REGISTER = "Synthetic shape register"
LEAVES: Tuple[Tuple[int, int], ...] = tuple((c, s) for c in range(len(COLOURS)) for s in range(len(SHAPES)))


def leaf_label(c: int, s: int) -> str:
    """``red circle``: the leaf's label, as ``synthetic.item_records`` names it."""
    return f"{COLOURS[c][0]} {SHAPES[s]}"


def leaf_of(qid: str) -> Optional[Tuple[int, int]]:
    """(colour, shape) of a leaf item id, None for any other item."""
    number = qid_number(qid) - 9001000 if is_qid(qid) else -1
    c, s = divmod(number, 100)
    return (c, s) if 0 <= c < len(COLOURS) and 0 <= s < len(SHAPES) else None


def check_shares(shares: Optional[Mapping[str, float]]) -> Dict[str, float]:
    """:data:`DEFAULT_SHARES` with ``shares`` applied (the error knobs of ``evidence_errors``
    appear only when given, so the default set's card is as before).

    :raises UsageError: an unknown name or a share outside [0, 1] (named).
    """
    out = dict(DEFAULT_SHARES)
    known = (*DEFAULT_SHARES, *ERROR_SHARES)
    for name, value in (shares or {}).items():
        if name not in known:
            raise UsageError(f"unknown evidence share {name!r} (known: {', '.join(known)})")
        if not 0.0 <= float(value) <= 1.0:
            raise UsageError(f"evidence share {name} must be between 0 and 1, not {value}")
        out[name] = float(value)
    return out


@dataclass(frozen=True)
class EvidencePlan:
    """What :func:`plan_evidence` drew: held-out leaves, and per file its evidence and the
    categories and description words that come with it."""

    held_out: Tuple[str, ...]
    sources: Dict[int, Tuple[Evidence, ...]]
    categories: Dict[int, Tuple[str, ...]]
    words: Dict[int, str]
    shares: Mapping[str, float] = dataclasses.field(default_factory=dict)


def plan_evidence(files: Sequence[SyntheticFile], seed: int, shares: Mapping[str, float]) -> EvidencePlan:
    """Draw every file's evidence (deterministic per seed; no images)."""
    rng = np.random.default_rng([seed, 26])
    n_held = int(round(shares["outside_label_set"] * len(LEAVES)))
    held = sorted(leaf_qid(*LEAVES[i]) for i in rng.choice(len(LEAVES), size=n_held, replace=False).tolist())
    sources: Dict[int, Tuple[Evidence, ...]] = {}
    categories: Dict[int, Tuple[str, ...]] = {}
    words: Dict[int, str] = {}
    errors = ErrorDraws(seed, shares, LEAVES)
    for f in files:
        # Every draw is made for every file, so one share's value does not move the others'.
        draws = rng.random(5)
        other = LEAVES[int(rng.integers(len(LEAVES) - 1))]
        if other == (f.colour, f.shape):
            other = LEAVES[-1]  # the one leaf the draw above left out
        wrong = errors.draw((f.colour, f.shape), other) if errors.active else None
        other = wrong.other if wrong is not None else other
        right = (leaf_qid(f.colour, f.shape), leaf_label(f.colour, f.shape))
        mistaken = (leaf_qid(*other), leaf_label(*other))

        def named(kind: str) -> Tuple[str, str]:
            return mistaken if wrong is not None and kind in wrong.wrong else right

        found: List[Evidence] = []
        names: List[str] = []
        text = ""
        if draws[0] < present(shares["category"], wrong):
            qid, label = named("category")
            names.append(f"{label.capitalize()} shapes")
            found.append(Evidence(KIND_CATEGORY, f"Category:{names[-1]}", qid))
        if draws[1] < present(shares["category_label"], wrong):
            qid, label = named("category_label")
            names.append(label.capitalize())
            found.append(Evidence(KIND_CATEGORY_LABEL, f"Category:{names[-1]}", qid))
        if draws[2] < present(shares["link"], wrong):
            qid, label = named("link")
            found.append(Evidence(KIND_LINK, link_source("enwiki", label.capitalize()), qid))
            text = f" See {label}."
        if draws[3] < present(shares["identifier"], wrong):
            qid, _ = named("identifier")
            number = other if qid == mistaken[0] else (f.colour, f.shape)
            found.append(Evidence(KIND_ID, f"{{{{{REGISTER}|{number[0]}-{number[1]}}}}}", qid))
        if draws[4] < shares["misleading"]:
            names.append(f"Photographs by {mistaken[1].capitalize()}")
            found.append(Evidence(KIND_CATEGORY, f"Category:{names[-1]}", mistaken[0]))
            if wrong is not None and wrong.co_link and not any(e.kind == KIND_LINK and e.qid == mistaken[0]
                                                                 for e in found):
                # The photographer linked in the description too: two kinds, one error.
                found.append(Evidence(KIND_LINK, link_source("enwiki", mistaken[1].capitalize()), mistaken[0]))
                text += f" Photo by {mistaken[1]}."
        page_id = f.record.page_id
        sources[page_id], categories[page_id], words[page_id] = tuple(found), tuple(names), text
    return EvidencePlan(tuple(held), sources, categories, words, dict(shares))


def realised_shares(files: Sequence[SyntheticFile], plan: EvidencePlan) -> Dict[str, Any]:
    """The shares as drawn: files with each kind of evidence (and misleading evidence), the
    leaves held out, and the files depicting one."""
    counts: Counter = Counter()
    names = {KIND_CATEGORY: "category", KIND_CATEGORY_LABEL: "category_label", KIND_LINK: "link",
             KIND_ID: "identifier"}
    for f in files:
        truth = leaf_qid(f.colour, f.shape)
        for ev in plan.sources[f.record.page_id]:
            if ev.qid != truth:
                counts["misleading"] += 1
                counts[f"wrong_{names[ev.kind]}"] += 1
            else:
                counts[names[ev.kind]] += 1
    n = max(len(files), 1)
    out: Dict[str, Any] = {name: counts[name] / n for name in DEFAULT_SHARES if name != "outside_label_set"}
    out["outside_label_set"] = len(plan.held_out) / len(LEAVES)
    held = set(plan.held_out)
    out["files_depicting_held_out"] = sum(1 for f in files if leaf_qid(f.colour, f.shape) in held) / n
    if any(plan_key in plan.shares for plan_key in ERROR_SHARES):
        # Wrong evidence of each kind per file (the photographer's category and link included).
        out.update({f"wrong_{name}": counts[f"wrong_{name}"] / n for name in names.values()})
    return out


def make_evidence_synthetic(out_dir: Path, n_files: int = 1200, seed: int = 0, *, force: bool = False,
                            shares: Optional[Mapping[str, float]] = None, shard_size: int = 500,
                            fractions: Sequence[float] = (0.8, 0.1, 0.1)) -> Dict[str, Any]:
    """Write the dataset directory (``make_synthetic``'s layout) with the evidence files.

    :param out_dir: the directory (created).
    :param n_files: files to generate.
    :param seed: seed of the files, the evidence and the split.
    :param force: replace an existing dataset there.
    :param shares: overrides of :data:`DEFAULT_SHARES`.
    :param fractions: train / validation / test shares of the files (the split depends only
        on ``seed`` and these, so sets drawn with other shares split the same files alike).
    :returns: the card (with ``"evidence"``).
    """
    from wikivel_bot.labels import label_set_from_records, write_label_set
    from wikivel_bot.train.data.dataset import CARD, write_dataset

    shares = check_shares(shares)
    out_dir = Path(out_dir)
    if (out_dir / CARD).exists() and not force:
        raise UsageError(f"{out_dir} already holds a dataset (use --force to replace it)")
    base = generate_files(n_files, seed)
    plan = plan_evidence(base, seed, shares)
    files = [SyntheticFile(dataclasses.replace(
        f.record, categories=f.record.categories + plan.categories[f.record.page_id],
        description=f.record.description + plan.words[f.record.page_id]), f.colour, f.shape) for f in base]
    held = set(plan.held_out)
    # Held-out leaves are not in the label set, so its test-leakage rule would not see a
    # file of the set used as their P18: they get pictures of their own instead.
    chosen = {q: name for q, name in leaf_images(files).items() if q not in held}
    records = item_records(chosen)
    # A count of 0 keeps the classes (through their leaves) and maps a held-out leaf to its
    # colour and shape classes (§3.2's promotion), so its files stay in the dataset.
    counts: Dict[str, int] = {r["qid"]: 0 for r in records}
    counts.update({q: n for q, n in Counter(q for f in files for q in f.record.items).items() if q not in held})
    label_set = label_set_from_records(records, counts, min_freq=1)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_label_set(label_set, out_dir / "labels", overwrite=force)
    items_dir = write_images(out_dir, files, chosen, seed, shard_size)
    outside = _outside_items(plan, label_set, items_dir, seed)
    _write_jsonl(out_dir / ITEMS_FILE, (_item_doc(info) for info in outside))
    _write_jsonl(out_dir / EVIDENCE_FILE, ({"page_id": f.record.page_id, "depicts": list(f.record.source_items),
                                             "sources": [ev.as_dict() for ev in plan.sources[f.record.page_id]]}
                                            for f in files))
    (out_dir / "tiny-model.json").write_text(json.dumps(tiny_model_config(), indent=2) + "\n", encoding="utf-8")
    card = dict(write_dataset([f.record for f in files], label_set, out_dir, seed=seed, labels_path="labels",
                              fractions=tuple(fractions),
                              sources=[{"kind": "synthetic-evidence", "files": n_files, "seed": seed, **shares}],
                              synthetic=True, force=force))
    card["evidence"] = {"shares": shares, "realised": realised_shares(files, plan), "held_out_items": list(plan.held_out),
                        "items_outside_label_set": len(outside), "files": EVIDENCE_FILE, "items": ITEMS_FILE,
                        "truth": f"{EVIDENCE_FILE} depicts (held-out leaves included; the manifest's items map "
                                 "them to the label set)"}
    (out_dir / CARD).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def _outside_items(plan: EvidencePlan, label_set: Any, items_dir: Path, seed: int) -> List[ItemInfo]:
    """ItemInfo of every evidence item the label set lacks (drawing a P18 for every third leaf)."""
    qids = sorted({ev.qid for found in plan.sources.values() for ev in found if label_set.index_of(ev.qid) is None})
    out = []
    for qid in qids:
        leaf = leaf_of(qid)
        if leaf is None:  # the generator names leaves only; kept general for safety
            out.append(ItemInfo(qid=qid, label=qid))
            continue
        c, s = leaf
        image = ""
        if (c * len(SHAPES) + s) % 3 == 0:
            image = f"Synthetic item {qid}.png"
            (items_dir / image).write_bytes(draw(c, s, seed * 1_000_003 + 7_000_000 + int(qid[1:])))
        out.append(ItemInfo(qid=qid, label=leaf_label(c, s), label_language="en",
                            description=f"synthetic: a {leaf_label(c, s)}", description_language="en",
                            image=image, subclass_of=(colour_qid(c), shape_qid(s)), resolved=qid))
    return out


def _item_doc(info: ItemInfo) -> Dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(info).items()}


def _write_jsonl(path: Path, docs: Any) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class SyntheticEvidence:
    """The evidence of a synthetic evidence dataset, read back (:func:`load_evidence`)."""

    sources: Dict[int, Tuple[Evidence, ...]]
    depicts: Dict[int, Tuple[str, ...]]
    items: Dict[str, ItemInfo]
    label_qids: Tuple[str, ...]


def load_evidence(data_dir: Path) -> SyntheticEvidence:
    """Read ``evidence.jsonl``, ``evidence_items.jsonl`` and the label set's items.

    :raises UsageError: not a dataset with evidence, or a damaged line (file and line named).
    """
    from wikivel_bot.train.data.dataset import load_dataset, open_labels

    data_dir = Path(data_dir)
    dataset = load_dataset(data_dir)
    if "evidence" not in dataset.card:
        raise UsageError(f"{data_dir} holds no evidence (write one with `wikivel-bot dataset synthetic-evidence`)")
    label_qids = tuple(open_labels(dataset).qids)
    sources: Dict[int, Tuple[Evidence, ...]] = {}
    depicts: Dict[int, Tuple[str, ...]] = {}
    for number, doc in _read_jsonl(data_dir / EVIDENCE_FILE):
        try:
            page_id = int(doc["page_id"])
            sources[page_id] = tuple(Evidence.from_dict(s) for s in doc["sources"])
            depicts[page_id] = tuple(str(q) for q in doc["depicts"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{data_dir / EVIDENCE_FILE}:{number}: not a file's evidence: {exc}") from None
    items: Dict[str, ItemInfo] = {}
    names = {f.name for f in dataclasses.fields(ItemInfo)}
    for number, doc in _read_jsonl(data_dir / ITEMS_FILE):
        try:
            fields: Dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in names}
            info = ItemInfo(**fields)
        except TypeError as exc:
            raise UsageError(f"{data_dir / ITEMS_FILE}:{number}: not an item: {exc}") from None
        items[info.qid] = info
    return SyntheticEvidence(sources, depicts, items, label_qids)


def _read_jsonl(path: Path) -> List[Tuple[int, Dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"{path}: unreadable: {exc}") from None
    out = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append((number, json.loads(line)))
            except ValueError as exc:
                raise UsageError(f"{path}:{number}: not JSON: {exc}") from None
    return out


def simulated_scores(depicts: Sequence[str], qids: Sequence[str], rng: np.random.Generator,
                     noise: float = 0.04) -> Dict[str, float]:
    """SIMULATED image scores of ``qids`` for a file depicting ``depicts``: a stand-in for a
    linker's cosine (about 0.32 for the leaf shown, 0.25 for a leaf of its colour or shape,
    0.18 for others, classes in between, plus Gaussian noise), so the evidence model can be
    fitted and tested before the linker scores evidence items itself.
    """
    leaf = next((leaf_of(q) for q in depicts if leaf_of(q) is not None), None)
    c, s = leaf if leaf is not None else (-1, -1)
    out = {}
    for qid in qids:
        other = leaf_of(qid)
        if other is not None:
            same_c, same_s = other[0] == c, other[1] == s
            mean = 0.18 + 0.07 * same_c + 0.07 * same_s
        elif qid in (ROOT_COLOUR, ROOT_SHAPE):
            mean = 0.20
        else:  # a colour or a shape class: closer when it is the file's own
            mean = 0.17 + 0.08 * (qid in (colour_qid(c), shape_qid(s)))
        out[qid] = float(mean + rng.normal(0.0, noise))
    return out


def simulated_records(evidence: SyntheticEvidence, *, top_k: int = 10, seed: int = 0,
                      noise: float = 0.04) -> List[CandidateRecord]:
    """Candidate records of every file of the set with :func:`simulated_scores` (SYNTHETIC):
    the image's top-K over the label set plus every evidence item, labelled by ``depicts``."""
    rng = np.random.default_rng([seed, 27])
    in_set = frozenset(evidence.label_qids)
    out: List[CandidateRecord] = []
    for page_id in sorted(evidence.sources):
        sources = evidence.sources[page_id]
        depicted = evidence.depicts[page_id]
        qids = list(dict.fromkeys([*evidence.label_qids, *(ev.qid for ev in sources)]))
        scores = simulated_scores(depicted, qids, rng, noise)
        out.extend(records_from_scores(page_id, scores, sources, set(depicted), in_set, top_k))
    return out
