"""Fine-tuning the cascade's pair model from reviewers' decisions (docs/learning.md).

The cascade (``linker.cascade``) ranks each file's first-stage candidates again with a pair
model that sees both sides at once: image, file text, item text, item image (seed 004's
re-ranker, seed 000's verifier). When the running linker is the cascade, a learning round
updates that pair model — the first stage and every CLIP embedding stay frozen, as in
``train --variant cascade`` — on the ``train`` files of the decision records:

* a pairwise logistic loss over every decided pair on the final logit
  ``z = a · first_stage_cosine + pair_logit``: approvals are positives and **rejections are
  explicit negatives** (the hardest there are: the running model ranked them high enough to
  be shown);
* plus the cascade's own listwise loss (``train.cascade.fit.cascade_loss``, the relaxed
  multi-positive contrastive) over each file's decided items, whenever a file has both an
  approval and a rejection: the approved items must outrank the rejected ones of that file.

Undecided suggestions are never labels (the learner never takes its own unreviewed
suggestions as either). Like the heads (``train.decisions.heads``), each model is then
calibrated and judged on its **own** suggestions (``train.decisions.own_suggestions`` says why):
the first stage's top ``candidates`` over every item the decisions name, re-ranked by the
pair model, its top-k; Platt on the linker's score ``z / a`` (cosine units), which is the
same map as Platt on ``z`` with the slope divided by ``a`` — so one calibration serves both
the operating threshold (on the score) and the verifier's probability (on ``z``).

Everything below :func:`encode_pair_records` works on tensors, so the SYNTHETIC simulation
(``bench/learning_pair.py``) runs the very same functions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from wikivel_bot.train.decisions.heads import DecisionTensors, Platt, fit_probability
from wikivel_bot.train.decisions.own_suggestions import OwnSuggestions

# Files read through the backbone at a time (decoded thumbnails are the memory).
FILE_BLOCK = 64


@dataclass
class PairDecisions(DecisionTensors):
    """Decided pairs with everything the pair model reads.

    ``files`` is the image embedding and ``items`` the item-text embedding (as for the heads);
    beside them, per file: ``text`` (file text embedding), ``present`` (the file has text),
    ``first_query`` (the first stage's query); per item: ``item_image``, ``item_image_present``
    and ``first_items`` (the first stage's item embedding). ``candidates``: the first stage's K.
    """

    text: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    present: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.bool))
    first_query: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    item_image: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    item_image_present: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.bool))
    first_items: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    candidates: int = 50


@dataclass(frozen=True)
class PairTuneConfig:
    epochs: int = 30
    lr: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 64
    # Weight of the listwise term beside the pairwise one.
    list_weight: float = 1.0
    seed: int = 0


def pair_output(pair: Any, data: PairDecisions, rows: torch.Tensor, index: torch.Tensor) -> Any:
    """The pair model's output for files ``rows`` (B,) and their item rows ``index`` (B, K)."""
    files = torch.stack([data.files[rows], data.text[rows]], dim=1)
    file_mask = torch.stack([torch.ones_like(data.present[rows]), data.present[rows]], dim=1)
    items = torch.stack([data.items[index], data.item_image[index]], dim=2)
    item_mask = torch.stack([torch.ones_like(index, dtype=torch.bool), data.item_image_present[index]], dim=2)
    first = torch.einsum("bd,bkd->bk", data.first_query[rows], data.first_items[index])
    return pair(files, file_mask, items, item_mask, first)


def _decided_lists(data: PairDecisions, pairs: torch.Tensor) -> Dict[int, List[Tuple[int, float]]]:
    """file row -> [(item row, label)] of the chosen decided pairs."""
    lists: Dict[int, List[Tuple[int, float]]] = {}
    for i in pairs.tolist():
        lists.setdefault(int(data.pair_file[i]), []).append((int(data.pair_item[i]), float(data.label[i])))
    return lists


def _padded(lists: Dict[int, List[Tuple[int, float]]], rows: List[int]) -> Tuple[torch.Tensor, ...]:
    """(rows (B,), item index (B, K), labels (B, K), valid (B, K)) padded to the longest list."""
    width = max(len(lists[r]) for r in rows)
    index = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.zeros((len(rows), width))
    valid = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, r in enumerate(rows):
        for k, (item, y) in enumerate(lists[r]):
            index[b, k], labels[b, k], valid[b, k] = item, y, True
    return torch.tensor(rows, dtype=torch.long), index, labels, valid


def fine_tune_pair(start: torch.nn.Module, data: PairDecisions, config: PairTuneConfig) -> torch.nn.Module:
    """A copy of ``start`` trained on the ``train`` pairs (module docstring); ``start`` is untouched."""
    from wikivel_bot.train.cascade.fit import cascade_loss

    torch.manual_seed(config.seed)
    pair = copy.deepcopy(start).float().train()
    lists = _decided_lists(data, data.select("train"))
    rows = sorted(lists)
    if not rows:
        return pair.eval()
    optimizer = torch.optim.AdamW(pair.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(config.seed)
    # The pair model is large beside a few hundred decisions and learns them by heart within a
    # few epochs: the epoch kept is the one whose logits fit the held-out ``calibration``
    # decisions best (the start counts, so a round never ends worse there than it began).
    held = data.select("calibration")
    best_loss, best_state = _held_loss(pair, data, held), copy.deepcopy(pair.state_dict())
    for _ in range(config.epochs):
        pair.train()
        order = [rows[i] for i in torch.randperm(len(rows), generator=generator).tolist()]
        for start_at in range(0, len(order), config.batch_size):
            batch, index, labels, valid = _padded(lists, order[start_at:start_at + config.batch_size])
            out = pair_output(pair, data, batch, index)
            loss = F.binary_cross_entropy_with_logits(out.logits[valid], labels[valid])
            # Listwise: a file's approvals above its rejections (padding can never win).
            both = (labels * valid).any(dim=1) & ((1 - labels) * valid).any(dim=1)
            if bool(both.any()):
                blocked = torch.full_like(out.logits, -1e4)
                logits = torch.where(valid, out.logits, blocked)[both]
                scores = torch.where(valid, out.scores, blocked)[both]
                loss = loss + config.list_weight * cascade_loss("contrastive", logits, scores,
                                                                (labels > 0.5)[both] & valid[both])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        held_loss = _held_loss(pair, data, held)
        if held_loss < best_loss:
            best_loss, best_state = held_loss, copy.deepcopy(pair.state_dict())
    pair.load_state_dict(best_state)
    return pair.eval()


def _held_loss(pair: Any, data: PairDecisions, pairs: torch.Tensor) -> float:
    """The pairwise loss of the decided ``pairs`` (0 when there are none: nothing to choose by)."""
    if pairs.numel() == 0:
        return 0.0
    pair.eval()
    with torch.no_grad():
        logits = pair_output(pair, data, data.pair_file[pairs], data.pair_item[pairs].unsqueeze(1)).logits[:, 0]
        return float(F.binary_cross_entropy_with_logits(logits, data.label[pairs]))


def _own_top(pair: Any, data: PairDecisions, rows: List[int], top_k: int) -> Tuple[List[List[float]], List[List[int]]]:
    """Per file row: the cascade's top ``top_k`` (scores, item rows) over ``data.items``: the
    first stage's top ``data.candidates``, re-ranked by ``pair`` (scores are ``z / a``)."""
    batch = torch.tensor(rows, dtype=torch.long)
    with torch.no_grad():
        first = data.first_query[batch] @ data.first_items.T
        index = first.topk(min(data.candidates, first.shape[1]), dim=1).indices
        pair.eval()
        scores = pair_output(pair, data, batch, index).scores
        top = scores.topk(min(top_k, scores.shape[1]), dim=1)
    return top.values.tolist(), torch.gather(index, 1, top.indices).tolist()


def own_pair_suggestions(pair: Any, data: PairDecisions, split: str, top_k: int) -> OwnSuggestions:
    """The cascade's own top ``top_k`` for each file of ``split`` (:func:`_own_top`), labelled
    by the decisions (undecided: not approved)."""
    lists = _decided_lists(data, data.select(split))
    rows = sorted(lists, key=lambda r: data.page_ids[r])
    if not rows or data.items.shape[0] == 0:
        return OwnSuggestions([], [], [], [])
    scores, chosen = _own_top(pair, data, rows, top_k)
    labels = [[dict(lists[r]).get(int(i), 0.0) > 0.5 for i in items] for r, items in zip(rows, chosen)]
    return OwnSuggestions([data.page_ids[r] for r in rows], scores, labels,
                          [sum(y > 0.5 for _, y in lists[r]) for r in rows])


def calibrate_own_pair(pair: Any, data: PairDecisions, top_k: int) -> Optional[Platt]:
    """Platt (on the score) fitted on the model's own suggestions of the ``calibration`` files;
    None when they are all of one kind (``heads.fit_probability``: the old threshold stays)."""
    x, y = own_pair_suggestions(pair, data, "calibration", top_k).flat()
    return fit_probability(x, y)


def judged_pair_files(pair: Any, data: PairDecisions, platt: Platt, top_k: int,
                      split: str = "evaluation") -> List[Tuple[int, List[float], List[bool], List[bool]]]:
    """Per file of ``split``: (page id, probabilities, labels, suggested) of its decided pairs,
    as ``own_suggestions.judged_files`` gives them for the heads: ``suggested`` says the pair
    is among the model's own top-k, so only those can be selected at the threshold."""
    lists = _decided_lists(data, data.select(split))
    if not lists or data.items.shape[0] == 0:
        return []
    rows = sorted(lists, key=lambda r: data.page_ids[r])
    _, chosen = _own_top(pair, data, rows, top_k)
    batch, index, labels, valid = _padded(lists, rows)
    with torch.no_grad():
        pair.eval()
        scores = pair_output(pair, data, batch, index).scores
    judged = []
    for b, r in enumerate(rows):
        n = int(valid[b].sum())
        own = set(chosen[b])
        probs = platt(scores[b, :n].double()).tolist()
        judged.append((data.page_ids[r], [float(p) for p in probs], [bool(y > 0.5) for y in labels[b, :n].tolist()],
                       [int(i) in own for i in index[b, :n].tolist()]))
    return judged


def score_calibration(platt: Platt, first_weight: float) -> Dict[str, Any]:
    """The verifier's map on ``z`` equal to ``platt`` on the score ``z / a``."""
    return {"method": "platt", "a": platt.a / first_weight, "b": platt.b}


# -- the real path: records + images through the running cascade ---------------------------

def encode_pair_records(records: Sequence[Any], images_dir: Path, linker: Any) -> PairDecisions:
    """Everything the pair model reads of the records' files and decided items.

    :param records: ``learning.records.Record`` values with a ``split``.
    :param linker: an attached ``CascadeLinker`` (the running cascade, or a verifier).
    Files without a decodable image, and decided items outside the label set, are left out
    (counted in ``skipped``).
    """
    from wikivel_bot.errors import FileUnavailable
    from wikivel_bot.linker.backbone.images import decode_image
    from wikivel_bot.linker.base import Query
    from wikivel_bot.types import MediaFile

    label_set = linker.label_set
    skipped = {"no image": 0, "item not in the label set": 0}
    kept: List[Tuple[Any, List[Tuple[int, float]]]] = []
    parts: List[Tuple[torch.Tensor, ...]] = []
    queries: List[Any] = []

    def flush() -> None:
        if queries:
            parts.append(tuple(t.float().cpu() for t in linker.file_features(queries)))
            queries.clear()

    for record in records:
        decided = [(q, 1.0) for q in record.positives] + [(q, 0.0) for q in record.negatives]
        found = [(label_set.index_of(q), y) for q, y in decided]
        skipped["item not in the label set"] += sum(p is None for p, _ in found)
        found = [(p, y) for p, y in found if p is not None]
        path = images_dir / record.image if record.image else None
        if not found:
            continue
        try:
            assert path is not None and path.is_file()
            image = decode_image(path.read_bytes(), min_side=linker.backbone.image_size)
        except (AssertionError, OSError, FileUnavailable):  # a missing or broken image leaves the file out
            skipped["no image"] += 1
            continue
        media = MediaFile(page_id=record.page_id, title=record.title, description=record.description,
                          categories=tuple(record.categories))
        queries.append(Query(record.title, image, linker.query_text(media)))
        kept.append((record, found))
        if len(queries) >= FILE_BLOCK:
            flush()
    flush()
    dim = linker.backbone.embed_dim
    if parts:
        image_t, text_t, present_t, first_t = (torch.cat([p[i] for p in parts]) for i in range(4))
    else:
        image_t, text_t, first_t = (torch.zeros((0, dim)) for _ in range(3))
        present_t = torch.zeros(0, dtype=torch.bool)
    positions = sorted({p for _, found in kept for p, _ in found})
    where = {p: i for i, p in enumerate(positions)}
    if positions:
        item_text, item_image, image_present, first_items = (t.cpu() for t in linker.item_features(positions))
    else:
        item_text = item_image = first_items = torch.zeros((0, dim))
        image_present = torch.zeros(0, dtype=torch.bool)
    pair_file, pair_item, label, split, reviewer = [], [], [], [], []
    for row, (record, found) in enumerate(kept):
        for p, y in found:
            pair_file.append(row)
            pair_item.append(where[p])
            label.append(y)
            split.append(record.split)
            reviewer.append(str(record.reviewers.get(label_set.qids[p], "")))
    return PairDecisions(
        files=image_t, items=item_text.float(), page_ids=[r.page_id for r, _ in kept],
        qids=[label_set.qids[p] for p in positions], pair_file=torch.tensor(pair_file, dtype=torch.long),
        pair_item=torch.tensor(pair_item, dtype=torch.long), label=torch.tensor(label), split=split,
        skipped=skipped, reviewer=reviewer, text=text_t, present=present_t.bool(), first_query=first_t,
        item_image=item_image.float(), item_image_present=image_present.bool(), first_items=first_items.float(),
        candidates=int(linker.cascade.candidates))
