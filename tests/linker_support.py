"""Helpers for the linker tests: a tiny open_clip model, a small label set, test images.

The tiny model (ViT width 64, 2 layers, 32 px images; text width 64, 2 layers; embed dim 32)
has random weights and builds in a fraction of a second, so every linker variant runs
through its real code path on CPU. open_clip's ViT-B-32 tokenizer ships with the package.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

TINY_MODEL = "wikivel-tiny-test"
TINY_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
_CONFIG_DIR: Optional[Path] = None


def tiny_model_file() -> Path:
    """Write the tiny config once per process and register it with open_clip; its path.

    The path itself also works as ``--model PATH`` (the linker registers JSON paths).
    """
    global _CONFIG_DIR
    if _CONFIG_DIR is None:
        _CONFIG_DIR = Path(tempfile.mkdtemp(prefix="wikivel-tiny-"))
        (_CONFIG_DIR / f"{TINY_MODEL}.json").write_text(json.dumps(TINY_CONFIG))
        import open_clip

        open_clip.add_model_config(_CONFIG_DIR / f"{TINY_MODEL}.json")
    return _CONFIG_DIR / f"{TINY_MODEL}.json"


def tiny_cache_dir() -> Path:
    """A per-process cache directory (the warm-start weights cache writes there, not into
    the working directory)."""
    return tiny_model_file().parent / "cache"


def tiny_settings(**changes: object):  # -> LinkerSettings
    """LinkerSettings for the tiny model with random weights on CPU, in fp32.

    fp32 by default because ``auto`` depends on the host's CPU flags, and a test's outcome
    must not; tests of the other precisions ask for them (tests/test_linker_precision.py).
    """
    from wikivel_bot.config import LinkerSettings

    tiny_model_file()
    values = {"model": TINY_MODEL, "pretrained": "", "weights": "random", "device": "cpu", "batch_size": 4,
              "precision": "fp32", "cache_dir": str(tiny_cache_dir())}
    values.update(changes)
    return LinkerSettings(**values)  # type: ignore[arg-type]


@dataclass
class MemoryLabelSet:
    """An in-memory implementation of ``core.labelset.LabelSetView`` for tests.

    :param items: (qid, label, description, image) in index order.
    :param parents: direct P31 ∪ P279 parents per qid (items outside the set allowed).
    :param counts: depicts frequency per qid.
    """

    items: Sequence[Tuple[str, str, str, str]]
    parents: Mapping[str, Sequence[str]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        doc = json.dumps([list(self.items), dict(self.parents), dict(self.counts)], sort_keys=True)
        return hashlib.sha256(doc.encode()).hexdigest()

    @property
    def qids(self) -> List[str]:
        return [i[0] for i in self.items]

    @property
    def labels(self) -> List[str]:
        return [i[1] for i in self.items]

    @property
    def descriptions(self) -> List[str]:
        return [i[2] for i in self.items]

    @property
    def images(self) -> List[str]:
        return [i[3] for i in self.items]

    def index_of(self, qid: str) -> Optional[int]:
        qids = self.qids
        return qids.index(qid) if qid in qids else None

    def ancestors(self, qid: str, max_hops: int = 3) -> Dict[str, int]:
        found: Dict[str, int] = {}
        frontier = [qid]
        for hop in range(1, max_hops + 1):
            nxt = []
            for q in frontier:
                for parent in self.parents.get(q, ()):
                    if parent != qid and parent not in found:
                        found[parent] = hop
                        nxt.append(parent)
            frontier = nxt
        return found

    def frequency(self, qid: str) -> int:
        return int(self.counts.get(qid, 0))


def animals_label_set(extra: Sequence[Tuple[str, str, str, str]] = ()) -> MemoryLabelSet:
    """Twelve items with a small hierarchy::

        Q729 animal <- Q622852 domestic animal <- Q146 house cat, Q144 dog, Q7368 sheep
        Q729 animal <- Q5 human
        Q41176 building <- Q3947 house
        Q8502 mountain <- Q8072 volcano;  Q22698 park and Q89 apple stand alone
    """
    items = [
        ("Q729", "animal", "kingdom of multicellular eukaryotic organisms", ""),
        ("Q622852", "domestic animal", "animal kept by humans", ""),
        ("Q146", "house cat", "domesticated feline", "Cat poster 1.jpg"),
        ("Q144", "dog", "domestic animal", "Dog.jpg"),
        ("Q7368", "sheep", "", ""),
        ("Q5", "human", "species of hominid", ""),
        ("Q41176", "building", "structure with a roof and walls", ""),
        ("Q3947", "house", "building usually intended for living in", "House.jpg"),
        ("Q8502", "mountain", "large natural elevation", ""),
        ("Q8072", "volcano", "rupture in the crust of a planetary-mass object", ""),
        ("Q22698", "park", "area of open space for recreational use", ""),
        ("Q89", "apple", "fruit of the apple tree", ""),
        *extra,
    ]
    parents = {
        "Q622852": ["Q729"],
        "Q146": ["Q622852"],
        "Q144": ["Q622852"],
        "Q7368": ["Q622852"],
        "Q5": ["Q729"],
        "Q3947": ["Q41176"],
        "Q8072": ["Q8502"],
    }
    counts = {"Q5": 500, "Q729": 40, "Q146": 300, "Q144": 250, "Q3947": 120, "Q41176": 200, "Q8502": 90,
              "Q8072": 15, "Q22698": 60, "Q89": 30, "Q622852": 20, "Q7368": 10}
    return MemoryLabelSet(items, parents, counts)


def write_animals_artifact(out_dir: Path) -> Path:
    """The :func:`animals_label_set` items as a real label-set directory (wikivel_bot.labels).

    Frequencies there accumulate over the hierarchy (paper §3.2), so they differ from the
    in-memory set's direct counts; items, texts and parents are the same.
    """
    from wikivel_bot.labels import label_set_from_records, write_label_set

    memory = animals_label_set()
    records = [
        {"qid": qid, "label": label, "description": description, "image": image,
         "p279": list(memory.parents.get(qid, ()))}
        for qid, label, description, image in memory.items
    ]
    return write_label_set(label_set_from_records(records, dict(memory.counts), min_freq=0), out_dir)


def image_bytes(color: Tuple[int, int, int] = (200, 30, 30), size: Tuple[int, int] = (48, 40), fmt: str = "JPEG", seed: int = 0) -> bytes:
    """A small synthetic image (a colour plus a little noise) encoded as ``fmt``."""
    import random

    from PIL import Image

    rng = random.Random(seed)
    image = Image.new("RGB", size, color)
    pixels = image.load()
    for _ in range(size[0] * size[1] // 4):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        pixels[x, y] = tuple(rng.randrange(256) for _ in range(3))
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()
