"""The open_clip backbones documented for deployment (``linker.model`` + ``linker.pretrained``).

Any open_clip architecture works; these are the ones measured in docs/benchmarks.md and
shown by ``wikivel-bot linkers``. Torch-free, like the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class BackboneChoice:
    """A documented backbone.

    :param model: open_clip architecture (``linker.model``).
    :param pretrained: its pretrained tag (``linker.pretrained``).
    :param note: when to choose it.
    """

    model: str
    pretrained: str
    note: str


BACKBONES: Tuple[BackboneChoice, ...] = (
    BackboneChoice("ViT-B-32", "laion2b_s34b_b79k", "default: the paper's backbone; 224 px, embed 512"),
    BackboneChoice(
        "MobileCLIP2-S0", "dfndr2b",
        "CPU deployments: FastViT image tower (reparameterized at load), 256 px, embed 512; "
        "throughput beside ViT-B-32 in docs/benchmarks.md; needs its own label index and heads",
    ),
)
