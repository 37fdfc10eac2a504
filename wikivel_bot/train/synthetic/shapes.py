"""A synthetic, learnable stand-in for the Wiki-VEL data (no network, seconds on a CPU).

Images are coloured shapes on a noisy background. The item hierarchy mirrors the real one
in miniature::

    Q9000001 coloured object  <- Q9000100+c "red object", ...        (one per colour)
    Q9000002 geometric shape  <- Q9000200+s "circle", ...            (one per shape)
    "red circle" (Q9001000 + c*100 + s)  P279 "red object" and P279 "circle"

Every file depicts its leaf item ("red circle"); some also depict the colour class or the
shape class, so files have one to three items like Commons files have one to many. Leaf
frequencies are skewed (a Zipf-like law over a shuffled order), so the top-k baseline is not
trivial. Colour and shape decide the items, so a head on even a random-weight backbone can
learn them: this is what the "learning happens" test measures. Nothing here is Commons data;
every number measured on it must say so (the card says ``"synthetic": true``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from wikivel_bot.train.data.dataset import FileRecord

COLOURS: Tuple[Tuple[str, Tuple[int, int, int]], ...] = (
    ("red", (215, 35, 35)),
    ("green", (40, 165, 50)),
    ("blue", (35, 70, 215)),
    ("yellow", (235, 210, 40)),
    ("purple", (135, 45, 170)),
    ("orange", (245, 135, 25)),
    ("cyan", (35, 195, 205)),
    ("black", (25, 25, 25)),
)
SHAPES: Tuple[str, ...] = ("circle", "square", "triangle", "cross", "ring", "bar")
ROOT_COLOUR = "Q9000001"
ROOT_SHAPE = "Q9000002"
IMAGE_SIZE = 64


def colour_qid(c: int) -> str:
    return f"Q{9000100 + c}"


def shape_qid(s: int) -> str:
    return f"Q{9000200 + s}"


def leaf_qid(c: int, s: int) -> str:
    return f"Q{9001000 + c * 100 + s}"


def item_records(leaf_images: Dict[str, str]) -> List[Dict[str, Any]]:
    """The synthetic items as ``label_set_from_records`` records.

    :param leaf_images: leaf QID -> file name (without ``File:``) used as its P18 image.
    """
    records: List[Dict[str, Any]] = [
        {"qid": ROOT_COLOUR, "label": "coloured object", "description": "synthetic: an object of some colour"},
        {"qid": ROOT_SHAPE, "label": "geometric shape", "description": "synthetic: a plane figure"},
    ]
    for c, (colour, _) in enumerate(COLOURS):
        records.append({"qid": colour_qid(c), "label": f"{colour} object",
                        "description": f"synthetic: something {colour}", "p279": [ROOT_COLOUR]})
    for s, shape in enumerate(SHAPES):
        records.append({"qid": shape_qid(s), "label": shape, "description": f"synthetic: a {shape} shape",
                        "p279": [ROOT_SHAPE]})
    for c, (colour, _) in enumerate(COLOURS):
        for s, shape in enumerate(SHAPES):
            qid = leaf_qid(c, s)
            records.append({"qid": qid, "label": f"{colour} {shape}", "description": f"synthetic: a {colour} {shape}",
                            "image": leaf_images.get(qid, ""), "p279": [colour_qid(c), shape_qid(s)]})
    return records


@dataclass(frozen=True)
class SyntheticFile:
    """One generated file: its record and the (colour, shape) that drew it."""

    record: FileRecord
    colour: int
    shape: int


def generate_files(n_files: int, seed: int = 0, first_page_id: int = 1000) -> List[SyntheticFile]:
    """File records with skewed leaf frequencies and 1-3 items each (deterministic per seed).

    :param n_files: how many files.
    :param seed: random seed.
    :param first_page_id: page id of the first file (page ids are consecutive).
    """
    rng = np.random.default_rng(seed)
    leaves = [(c, s) for c in range(len(COLOURS)) for s in range(len(SHAPES))]
    order = rng.permutation(len(leaves))
    # Zipf-like popularity over a shuffled order, flattened (exponent 0.8) so rare leaves
    # still get a handful of files at test sizes.
    weights = np.empty(len(leaves))
    weights[order] = 1.0 / np.arange(1, len(leaves) + 1) ** 0.8
    weights /= weights.sum()
    picks = rng.choice(len(leaves), size=n_files, p=weights)
    files = []
    for i, pick in enumerate(picks.tolist()):
        c, s = leaves[pick]
        colour = COLOURS[c][0]
        items = [leaf_qid(c, s)]
        if rng.random() < 0.25:
            items.append(colour_qid(c))
        if rng.random() < 0.25:
            items.append(shape_qid(s))
        categories = ["Synthetic shapes"]
        if rng.random() < 0.5:
            categories.append(f"{colour.capitalize()} things")
        page_id = first_page_id + i
        record = FileRecord(
            page_id=page_id,
            title=f"File:Synthetic shape {page_id}.png",
            items=tuple(items),
            source_items=tuple(items),
            description=f"A generated test picture (number {page_id}).",
            categories=tuple(categories),
        )
        files.append(SyntheticFile(record, c, s))
    return files


def draw(colour: int, shape: int, seed: int, size: int = IMAGE_SIZE) -> bytes:
    """PNG bytes of one shape on a noisy grey background (position and size jittered).

    :param colour: index into :data:`COLOURS`.
    :param shape: index into :data:`SHAPES`.
    :param seed: per-image seed.
    :param size: side in pixels.
    """
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    grey = int(rng.integers(150, 235))
    noise = rng.normal(0, 12, size=(size, size, 3))
    background = np.clip(grey + noise, 0, 255).astype(np.uint8)
    image = Image.fromarray(background, "RGB")
    pen = ImageDraw.Draw(image)
    rgb = tuple(int(np.clip(v + rng.integers(-20, 21), 0, 255)) for v in COLOURS[colour][1])
    radius = size * float(rng.uniform(0.28, 0.42))
    cx = size / 2 + float(rng.uniform(-0.1, 0.1)) * size
    cy = size / 2 + float(rng.uniform(-0.1, 0.1)) * size
    box = (cx - radius, cy - radius, cx + radius, cy + radius)
    name = SHAPES[shape]
    if name == "circle":
        pen.ellipse(box, fill=rgb)
    elif name == "square":
        pen.rectangle(box, fill=rgb)
    elif name == "triangle":
        pen.polygon([(cx, cy - radius), (cx - radius, cy + radius), (cx + radius, cy + radius)], fill=rgb)
    elif name == "cross":
        w = radius / 3
        pen.rectangle((cx - w, cy - radius, cx + w, cy + radius), fill=rgb)
        pen.rectangle((cx - radius, cy - w, cx + radius, cy + w), fill=rgb)
    elif name == "ring":
        pen.ellipse(box, outline=rgb, width=max(2, int(radius / 3)))
    else:  # bar
        pen.rectangle((cx - radius, cy - radius / 4, cx + radius, cy + radius / 4), fill=rgb)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def leaf_images(files: Sequence[SyntheticFile], every: int = 3) -> Dict[str, str]:
    """P18 images for some leaves: the first file drawing each third leaf, as items on
    Wikidata have an image that is itself a Commons file (the §4.2 leakage to remove)."""
    chosen: Dict[str, str] = {}
    for f in files:
        qid = leaf_qid(f.colour, f.shape)
        if (f.colour * len(SHAPES) + f.shape) % every == 0 and qid not in chosen:
            chosen[qid] = f.record.title.split(":", 1)[1]
    return chosen


def tiny_model_config() -> Dict[str, Any]:
    """A tiny open_clip config (embed 32, 2 layers, 32 px) for CPU smoke runs with random weights."""
    return {
        "embed_dim": 32,
        "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
    }


def make_synthetic(out_dir: Path, n_files: int = 1200, seed: int = 0, *, force: bool = False,
                   shard_size: int = 500) -> Dict[str, Any]:
    """Write a complete synthetic dataset directory, ready for ``wikivel-bot train``.

    Layout: ``labels/`` (label set), ``images/shard-*.tar`` (the files' images, keyed by page
    id) and ``images/items/`` (P18 images of some items, by file name), ``manifest.parquet`` and
    ``card.json`` (through the same :func:`write_dataset` as real dumps), and
    ``tiny-model.json`` (an open_clip config for ``--model`` with ``--weights random``).

    :param out_dir: the directory (created).
    :param n_files: files to generate.
    :param seed: seed of the files and of the split.
    :param force: replace an existing dataset there.
    :param shard_size: images per tar shard.
    :returns: the dataset card.
    """
    import json
    from collections import Counter

    from wikivel_bot.labels import label_set_from_records, write_label_set
    from wikivel_bot.train.data.dataset import write_dataset

    out_dir = Path(out_dir)
    files = generate_files(n_files, seed)
    chosen = leaf_images(files)
    counts = Counter(q for f in files for q in f.record.items)
    label_set = label_set_from_records(item_records(chosen), dict(counts), min_freq=0)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_label_set(label_set, out_dir / "labels", overwrite=force)
    write_images(out_dir, files, chosen, seed, shard_size)
    (out_dir / "tiny-model.json").write_text(json.dumps(tiny_model_config(), indent=2) + "\n", encoding="utf-8")
    return write_dataset([f.record for f in files], label_set, out_dir, seed=seed, labels_path="labels",
                         sources=[{"kind": "synthetic", "files": n_files, "seed": seed}], synthetic=True,
                         force=force)


def write_images(out_dir: Path, files: Sequence[SyntheticFile], chosen: Dict[str, str], seed: int,
                 shard_size: int) -> Path:
    """The files' images into ``images/shard-*.tar`` (keyed by page id) and the chosen items'
    P18 pictures into ``images/items/`` (the picture of the file each is named after).

    :returns: the item-image directory.
    """
    from wikivel_bot.train.data.shards import ShardWriter

    with ShardWriter(out_dir / "images", shard_size) as writer:
        for f in files:
            writer.add(str(f.record.page_id), draw(f.colour, f.shape, seed * 1_000_003 + f.record.page_id), "png")
    items_dir = out_dir / "images" / "items"
    items_dir.mkdir(parents=True, exist_ok=True)
    by_name = {f.record.title.split(":", 1)[1]: f for f in files}
    for name in chosen.values():
        f = by_name[name]
        (items_dir / name).write_bytes(draw(f.colour, f.shape, seed * 1_000_003 + f.record.page_id))
    return items_dir
