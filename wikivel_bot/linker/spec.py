"""Linker variants as data: ``configs/*.json`` read into :class:`LinkerSpec`.

As in open_clip's ``model_configs``, an architecture is a JSON file, not a class: adding a
variant (another prompt template, a wider head) means adding a file, and a user can register
their own with :func:`add_linker_config`.

This module sits below every implementation: the linkers, their checkpoints and the trainer
read a spec from here, and it imports none of them (nor torch). What builds a linker from a
spec is :mod:`wikivel_bot.linker.factory`, the one module above the implementations.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from wikivel_bot.errors import LinkerError, UsageError

CONFIG_DIR = Path(__file__).parent / "configs"

# architecture -> what builds it; "clip" ones need torch and open_clip.
ARCHITECTURES = {
    "zero-shot": "clip",
    "naive": "clip",
    "fusion": "clip",
    "cascade": "cascade",
    "frequency-top": "baseline",
    "frequency-sample": "baseline",
}
QUERY_TEXT_FIELDS = ("title", "description", "categories")
TRAINABLE_PARTS = ("image_head", "text_head", "text_encoder", "query_head", "entity_head", "pair_model")
_REQUIRED = ("name", "architecture", "version", "description")


@dataclass(frozen=True)
class LinkerSpec:
    """One linker variant as read from its JSON config.

    :param name: the registry name (``--linker NAME``).
    :param architecture: zero-shot | naive | fusion | frequency-top | frequency-sample.
    :param version: bumped when the variant's behaviour changes (goes into Candidate rows).
    :param description: one line for ``wikivel-bot linkers``.
    :param item_text: template for an item's text, with ``{label}`` and ``{description}``;
        a part whose field is empty is left out together with its separator.
    :param query_text: parts of the file's text the query side reads (fusion).
    :param head: head hyper-parameters (see ``heads.py``).
    :param trainable: parts a training run may change; a checkpoint stores exactly these.
    :param uses_item_images: the item side also encodes the item's P18 image.
    :param source: the config file it came from.
    """

    name: str
    architecture: str
    version: int
    description: str
    item_text: str = "{label}"
    query_text: Tuple[str, ...] = ()
    head: Mapping[str, Any] = field(default_factory=dict)
    trainable: Tuple[str, ...] = ()
    uses_item_images: bool = False
    source: str = ""

    @property
    def kind(self) -> str:
        """``clip`` (needs torch and weights), ``cascade`` (a clip first stage and a pair model) or ``baseline``."""
        return ARCHITECTURES[self.architecture]

    @property
    def has_head(self) -> bool:
        """Whether the variant has trainable parts that come from a checkpoint."""
        return bool(self.trainable)

    def as_dict(self) -> Dict[str, Any]:
        """The config as stored in checkpoints and index manifests."""
        return {
            "name": self.name,
            "architecture": self.architecture,
            "version": self.version,
            "description": self.description,
            "item_text": self.item_text,
            "query_text": list(self.query_text),
            "head": dict(self.head),
            "trainable": list(self.trainable),
            "uses_item_images": self.uses_item_images,
        }

    def digest(self) -> str:
        """A hash of everything that changes what the linker computes (not the description)."""
        doc = self.as_dict()
        doc.pop("description")
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


_EXTRA_CONFIGS: List[Path] = []


def add_linker_config(path: str | Path) -> LinkerSpec:
    """Register a linker config file (or every ``*.json`` in a directory) for this process.

    :param path: a JSON file in the format of ``configs/*.json``, or a directory of them.
    :returns: the spec of the file (the last one for a directory).
    :raises LinkerError: unreadable or invalid config (the message names file and key).
    """
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    spec = None
    for file in files:
        spec = _read_spec(file)
        _EXTRA_CONFIGS.append(file)
    if spec is None:
        raise LinkerError(f"no linker configs (*.json) in {path}")
    return spec


def list_linkers() -> List[LinkerSpec]:
    """Every registered linker variant, built-in first, by name. Later files override."""
    specs: Dict[str, LinkerSpec] = {}
    for file in sorted(CONFIG_DIR.glob("*.json")) + list(_EXTRA_CONFIGS):
        spec = _read_spec(file)
        specs[spec.name] = spec
    return [specs[name] for name in sorted(specs)]


def get_spec(name: str) -> LinkerSpec:
    """The spec registered as ``name``.

    :raises UsageError: no such linker (the message lists the known names).
    """
    specs = {spec.name: spec for spec in list_linkers()}
    if name not in specs:
        raise UsageError(f"unknown linker {name!r}; known linkers: {', '.join(specs)}")
    return specs[name]


def _read_spec(file: Path) -> LinkerSpec:
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LinkerError(f"linker config not found: {file}") from None
    except (OSError, ValueError) as exc:
        raise LinkerError(f"{file}: not a readable JSON linker config: {exc}") from None
    if not isinstance(doc, dict):
        raise LinkerError(f"{file}: a linker config must be a JSON object")
    for key in _REQUIRED:
        if key not in doc:
            raise LinkerError(f"{file}: missing key {key!r}")
    known = {"name", "architecture", "version", "description", "item_text", "query_text", "head",
             "trainable", "uses_item_images"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise LinkerError(f"{file}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    if doc["architecture"] not in ARCHITECTURES:
        raise LinkerError(
            f"{file}: architecture {doc['architecture']!r} is not one of {', '.join(ARCHITECTURES)}"
        )
    query_text = tuple(doc.get("query_text", ()))
    bad = [f for f in query_text if f not in QUERY_TEXT_FIELDS]
    if bad:
        raise LinkerError(f"{file}: query_text fields {bad} not in {list(QUERY_TEXT_FIELDS)}")
    trainable = tuple(doc.get("trainable", ()))
    bad = [p for p in trainable if p not in TRAINABLE_PARTS]
    if bad:
        raise LinkerError(f"{file}: trainable parts {bad} not in {list(TRAINABLE_PARTS)}")
    if not isinstance(doc["version"], int):
        raise LinkerError(f"{file}: version must be an integer")
    return LinkerSpec(
        name=str(doc["name"]),
        architecture=doc["architecture"],
        version=doc["version"],
        description=str(doc["description"]),
        item_text=str(doc.get("item_text", "{label}")),
        query_text=query_text,
        head=dict(doc.get("head", {})),
        trainable=trainable,
        uses_item_images=bool(doc.get("uses_item_images", False)),
        source=str(file),
    )
