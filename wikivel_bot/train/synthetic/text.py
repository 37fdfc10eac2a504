"""A synthetic dataset where the file's text carries part of the signal and the image the rest.

The coloured shapes of ``shapes.py`` (same items, hierarchy and skewed frequencies), with
the colour split between the picture and the words, as on Commons where a file name or a
category often names what the picture alone leaves open:

* the **image** always shows the shape; only ``colour_in_image`` of them (default half) are
  drawn in colour, the rest in greyscale (the shape is visible, its colour is not);
* the **file name** names the colour for ``colour_in_title`` of the files (``Red_thing...``),
  the **description** for ``colour_in_description``, a **category** ``<Colour> things`` for
  ``colour_in_category``; otherwise they are neutral.

So an image-only linker cannot know the colour of a grey picture, and a text-only one cannot
know the shape: combining both is needed for a first-rank answer.

With ``long_texts`` the words around the colour are as long as a real Commons file's
("London Victoria station – platform 8 …"): a file name with a place and a year, a
description of one sentence (the colour, when it is there, at a random place in
it), two or three descriptive categories and an upload-tool category the cascade leaves
out. About 50-75 CLIP tokens in all, so where the file text is cut decides what the
cascade reads (``bench/cascade_text.py``); the draws that decide where the colour is are
the same as without it, so both sets carry the same signal. Nothing here is Commons
data; every number measured on it must say so (the card says ``"synthetic": true`` and
``"text_signal": {...}``).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from wikivel_bot.train.data.dataset import FileRecord
from wikivel_bot.train.synthetic.shapes import (
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
# Words of the long texts: neutral about colour and shape (they name places and occasions).
PLACES = ("Victoria station platform 8", "the old market square", "Kew Gardens palm house", "the harbour wall",
          "Stadtpark Wien east gate", "the village pond", "Gare du Nord hall 2", "the museum courtyard")
CLAUSES = ("seen from the north side of the square", "with the clock tower and the market stalls behind it",
           "photographed on a cloudy afternoon in late October", "near the bus stop on the main road",
           "during the street festival, before the crowds arrived", "taken handheld from the footbridge",
           "shortly after the renovation of the building was finished", "next to a bench and a lamp post")
PLACE_CATEGORIES = ("Street furniture in London", "Public squares in Europe", "Buildings photographed in 2019",
                    "Views from footbridges", "Festivals in Vienna", "Railway stations in England")


def greyscale(png: bytes) -> bytes:
    """The same picture without colour (luminance only), as PNG."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L").convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def make_text_synthetic(out_dir: Path, n_files: int = 1200, seed: int = 0, *, force: bool = False,
                        shares: Dict[str, float] | None = None, shard_size: int = 500,
                        long_texts: bool = False) -> Dict[str, Any]:
    """Write the dataset directory (layout as ``make_synthetic``), colour split image/text.

    :param out_dir: the directory (created).
    :param n_files: files to generate.
    :param seed: seed of the files, the texts and the split.
    :param force: replace an existing dataset there.
    :param shares: overrides of :data:`DEFAULT_SHARES`.
    :param long_texts: file names, descriptions and categories as long as real ones (see
        the module docstring); the card's source says so.
    :returns: the dataset card.
    """
    from wikivel_bot.labels import label_set_from_records, write_label_set
    from wikivel_bot.train.data.dataset import write_dataset
    from wikivel_bot.train.data.shards import ShardWriter

    shares = {**DEFAULT_SHARES, **(shares or {})}
    out_dir = Path(out_dir)
    rng = np.random.default_rng([seed, 4])
    # The long texts' words come from their own generator: the draws above decide the same
    # signal with and without them.
    words = np.random.default_rng([seed, 5])
    base = generate_files(n_files, seed)
    records = []
    coloured = {}
    for f in base:
        colour = COLOURS[f.colour][0]
        page_id = f.record.page_id
        in_image = bool(rng.random() < shares["colour_in_image"])
        in_title = bool(rng.random() < shares["colour_in_title"])
        in_description = bool(rng.random() < shares["colour_in_description"])
        in_category = bool(rng.random() < shares["colour_in_category"])
        if long_texts:
            title, description, categories = _long_texts(words, colour, page_id, in_title, in_description, in_category)
        else:
            title = f"File:{colour.capitalize()}_thing_{page_id}.png" if in_title else f"File:Thing_{page_id}.png"
            description = f"A {colour} figure." if in_description else "A figure."
            categories = ["Synthetic shapes"] + ([f"{colour.capitalize()} things"] if in_category else [])
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
                         sources=[{"kind": "synthetic-text", "files": n_files, "seed": seed, **shares,
                                   **({"long_texts": True} if long_texts else {})}],
                         synthetic=True, force=force)
    return dict(card)


def _long_texts(words: np.random.Generator, colour: str, page_id: int, in_title: bool, in_description: bool,
                in_category: bool) -> Tuple[str, str, List[str]]:
    """(title, description, categories) of a file with Commons-like lengths (``long_texts``)."""
    place = PLACES[int(words.integers(len(PLACES)))]
    year = 2010 + int(words.integers(14))
    thing = f"{colour.capitalize()}_thing" if in_title else "Thing"
    title = f"File:{thing}_at_{place.replace(' ', '_')}_({year})_{page_id}.png"
    clauses = [CLAUSES[int(i)] for i in words.choice(len(CLAUSES), size=2, replace=False)]
    # Where the colour sits in the description is drawn too: a cut keeps it only sometimes.
    slot = int(words.integers(len(clauses) + 1))
    if in_description:
        clauses.insert(slot, f"a {colour} figure in the middle")
    description = f"A figure at {place}, " + ", ".join(clauses) + "."
    kept = [PLACE_CATEGORIES[int(i)] for i in words.choice(len(PLACE_CATEGORIES), size=2, replace=False)]
    categories = ["Synthetic shapes", *kept]
    position = int(words.integers(len(categories) + 1))
    if in_category:
        categories.insert(position, f"{colour.capitalize()} things")
    categories.append("Uploaded with UploadWizard")  # a tool category: left out of the file text
    return title, description, categories
