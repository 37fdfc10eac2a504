"""A synthetic dataset where the file's text carries part of the signal and the image the rest.

The coloured shapes of ``synthetic.py`` (same items, hierarchy and skewed frequencies), with
the colour split between the picture and the words, as on Commons where a file name or a
category often names what the picture alone leaves open:

* the **image** always shows the shape; only ``colour_in_image`` of them (default half) are
  drawn in colour, the rest in greyscale (the shape is visible, its colour is not);
* the **file name** names the colour for ``colour_in_title`` of the files (``Red_thing...``),
  the **description** for ``colour_in_description``, a **category** ``<Colour> things`` for
  ``colour_in_category``; otherwise they are neutral.

So an image-only linker cannot know the colour of a grey picture, and a text-only one cannot
know the shape: combining both is needed for a first-rank answer. Nothing here is Commons
data; every number measured on it must say so (the card says ``"synthetic": true`` and
``"text_signal": {...}``).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict

import numpy as np

from wikivel_bot.train.dataset import FileRecord
from wikivel_bot.train.synthetic import (
    COLOURS,
    SyntheticFile,
    draw,
    generate_files,
    item_records,
    leaf_images,
    tiny_model_config,
)

DEFAULT_SHARES = {"colour_in_image": 0.5, "colour_in_title": 0.6, "colour_in_description": 0.3,
                  "colour_in_category": 0.3}


def greyscale(png: bytes) -> bytes:
    """The same picture without colour (luminance only), as PNG."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L").convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def make_text_synthetic(out_dir: Path, n_files: int = 1200, seed: int = 0, *, force: bool = False,
                        shares: Dict[str, float] | None = None, shard_size: int = 500) -> Dict[str, Any]:
    """Write the dataset directory (layout as ``make_synthetic``), colour split image/text.

    :param out_dir: the directory (created).
    :param n_files: files to generate.
    :param seed: seed of the files, the texts and the split.
    :param force: replace an existing dataset there.
    :param shares: overrides of :data:`DEFAULT_SHARES`.
    :returns: the dataset card.
    """
    from wikivel_bot.labels import label_set_from_records, write_label_set
    from wikivel_bot.train.dataset import write_dataset
    from wikivel_bot.train.shards import ShardWriter

    shares = {**DEFAULT_SHARES, **(shares or {})}
    out_dir = Path(out_dir)
    rng = np.random.default_rng([seed, 4])
    base = generate_files(n_files, seed)
    records = []
    coloured = {}
    for f in base:
        colour = COLOURS[f.colour][0]
        page_id = f.record.page_id
        in_image = bool(rng.random() < shares["colour_in_image"])
        title = f"File:{colour.capitalize()}_thing_{page_id}.png" if rng.random() < shares["colour_in_title"] \
            else f"File:Thing_{page_id}.png"
        description = f"A {colour} figure." if rng.random() < shares["colour_in_description"] else "A figure."
        categories = ["Synthetic shapes"]
        if rng.random() < shares["colour_in_category"]:
            categories.append(f"{colour.capitalize()} things")
        coloured[page_id] = in_image
        records.append(FileRecord(page_id=page_id, title=title, items=f.record.items, source_items=f.record.items,
                                  description=description, categories=tuple(categories)))
    # P18 images are named after (and drawn like) files of the set, so the builder's test
    # leakage removal sees them, as with real items whose image is a Commons file.
    base = [SyntheticFile(r, f.colour, f.shape) for r, f in zip(records, base)]
    chosen = leaf_images(base)
    counts = Counter(q for f in base for q in f.record.items)
    label_set = label_set_from_records(item_records(chosen), dict(counts), min_freq=0)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_label_set(label_set, out_dir / "labels", overwrite=force)
    with ShardWriter(out_dir / "images", shard_size) as writer:
        for f in base:
            png = draw(f.colour, f.shape, seed * 1_000_003 + f.record.page_id)
            writer.add(str(f.record.page_id), png if coloured[f.record.page_id] else greyscale(png), "png")
    items_dir = out_dir / "images" / "items"
    items_dir.mkdir(parents=True, exist_ok=True)
    by_name = {f.record.title.split(":", 1)[1]: f for f in base}
    for name in chosen.values():
        # Item images (P18) are always in colour: Wikidata's pictures are not the files'.
        f = by_name[name]
        (items_dir / name).write_bytes(draw(f.colour, f.shape, seed * 1_000_003 + f.record.page_id))
    (out_dir / "tiny-model.json").write_text(json.dumps(tiny_model_config(), indent=2) + "\n", encoding="utf-8")
    card = write_dataset(records, label_set, out_dir, seed=seed, labels_path="labels",
                         sources=[{"kind": "synthetic-text", "files": n_files, "seed": seed, **shares}],
                         synthetic=True, force=force)
    return dict(card)
