"""The cascade's score of given items, for the file's evidence (``linker.evidence_link``).

The items a file's own evidence names join the cascade's candidates; they get the score its
re-ranked candidates get — the pair model's ``z / a`` over (file, item), first-stage cosine
units — so the ranking rules compare them on one scale:

* :func:`score_positions` — label-set items the first stage's top-K missed: their rows of the
  first stage's index and of the item text and item image indexes, as :meth:`CascadeLinker
  .verify` reads them;
* :func:`score_outside` — items outside the label set: the first stage's item row
  (``ClipLinker.encode_outside``), the raw item text and its P18 image encoded on the fly as
  the item indexes encode theirs (rounded to their fp16), then the pair model.

``cascade`` is the :class:`~wikivel_bot.linker.cascade.linker.CascadeLinker` (typed ``Any``:
that module imports this one).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import torch

from wikivel_bot.linker.backbone.encoders import encode_images
from wikivel_bot.linker.backbone.images import decode_item_images
from wikivel_bot.linker.backbone.text_tower import encode_texts
from wikivel_bot.linker.base import OutsideItem, Query
from wikivel_bot.linker.texts import render_item_text


@torch.inference_mode()
def score_positions(cascade: Any, queries: Sequence[Query],
                    positions: Sequence[Sequence[int]]) -> List[List[float]]:
    """Per query, the score of each label-set position given (in order)."""
    if not any(positions):
        return [[] for _ in positions]
    image, text, present, first = cascade._encode(queries)
    width = max(len(p) for p in positions)
    # Rows are padded to one width with their first item; the padding's scores are dropped.
    index = torch.tensor([list(p) + [p[0] if p else 0] * (width - len(p)) for p in positions],
                         dtype=torch.long, device=image.device)
    first_scores = torch.einsum("bd,bkd->bk", first, cascade._first_items(index))
    out = cascade._pair_scores(image, text, present, index, first_scores)
    return [out.scores[row, :len(p)].tolist() for row, p in enumerate(positions)]


@torch.inference_mode()
def score_outside(cascade: Any, queries: Sequence[Query],
                  items: Sequence[Sequence[OutsideItem]]) -> List[List[float]]:
    """Per query, the score of each outside item given (in order); each item encoded once."""
    distinct = {item.qid: item for row in items for item in row}
    if not distinct:
        return [[] for _ in items]
    order = sorted(distinct)
    where = {qid: i for i, qid in enumerate(order)}
    found = [distinct[q] for q in order]
    first_rows = cascade.first.encode_outside(found)
    texts = encode_texts(cascade.backbone, [render_item_text(cascade.spec.item_text, i.label, i.description)
                                            for i in found]).float().half().float()
    images = torch.zeros_like(texts)
    image_present = torch.zeros(len(found), dtype=torch.bool, device=texts.device)
    for row, vector in _images(cascade, [i.image for i in found]).items():
        images[row] = vector
        image_present[row] = True
    image, text, present, first = cascade._encode(queries)
    width = max(1, max(len(row) for row in items))
    index = torch.tensor([[where[i.qid] for i in row] + [0] * (width - len(row)) for row in items],
                         dtype=torch.long, device=image.device)
    first_scores = torch.einsum("bd,bkd->bk", first, first_rows[index])
    rows = torch.stack([texts[index], images[index]], dim=2)
    mask = torch.stack([torch.ones_like(index, dtype=torch.bool), image_present[index]], dim=2)
    out = cascade._pair_out(image, text, present, rows, mask, first_scores)
    return [out.scores[n, :len(row)].tolist() for n, row in enumerate(items)]


def _images(cascade: Any, names: Sequence[str]) -> Dict[int, torch.Tensor]:
    """{row: fp16-rounded image embedding} of the rows whose P18 image could be read."""
    wanted = {i: name for i, name in enumerate(names) if name}
    if cascade.item_image_loader is None or not wanted:
        return {}
    rows, decoded = decode_item_images(cascade.item_image_loader, wanted.items(), cascade.backbone.image_size)
    if not rows:
        return {}
    vectors = encode_images(cascade.backbone, decoded, cascade.settings.batch_size).float().half().float()
    return dict(zip(rows, vectors))
