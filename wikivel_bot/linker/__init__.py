"""The visual entity linker: open_clip encoders, heads, a cached label index, exact search.

Public API::

    from wikivel_bot.linker import create_linker, list_linkers, link_files, rules_from_settings

    linker = create_linker("naive-mlp", settings.linker)      # registry name -> Linker
    linker.attach(label_set, cache_dir=settings.linker.cache_dir, progress=True)
    outcomes = link_files(linker, [(media, thumbnail_bytes), ...],
                          rules=rules_from_settings(settings.linker), rejected={page_id: {"Q5"}})

Modules: ``registry`` (configs/*.json, factory), ``encoders`` + ``weights`` (open_clip),
``heads``, ``checkpoint``, ``index`` (on-disk label index), ``search`` (chunked top-k),
``clip`` (CLIP linkers), ``baselines``, ``images`` (safe decoding), ``texts``, ``link``.
CPU fast path: ``precision`` (auto/fp32/bf16/int8 choice, parity verdicts), ``fastpath``
(applying it), ``parity`` (the check), ``prefetch`` (decode pool), ``warmstart`` (cached
inference-ready weights), ``tower`` (the exported image tower: starts without open_clip),
``imageprep`` (preprocessing without torchvision), ``backbones`` (documented model choices);
the cascade (docs/cascade.md): ``cascade`` (linker), ``pair`` (cross-attention pair model, α),
``cascade_checkpoint``, ``cascade_text`` (the file text it reads), ``verifier`` (a cascade
checkpoint's calibrated pair model beside any linker: ``linker.verifier``).

Importing this package does not import torch; the names below that need it load on use.
"""

from __future__ import annotations

from typing import Any

from wikivel_bot.linker.base import IndexInfo, Linker, LinkerDescription, Query
from wikivel_bot.linker.registry import (
    LinkerSpec,
    add_linker_config,
    create_linker,
    get_spec,
    list_linkers,
)

_LAZY = {
    "link_files": "wikivel_bot.linker.link",
    "rules_from_settings": "wikivel_bot.linker.link",
    "Linked": "wikivel_bot.linker.link",
    "LinkFailed": "wikivel_bot.linker.link",
    "save_checkpoint": "wikivel_bot.linker.checkpoint",
    "load_checkpoint": "wikivel_bot.linker.checkpoint",
}

__all__ = [
    "IndexInfo", "Linker", "LinkerDescription", "LinkerSpec", "Query", "add_linker_config", "create_linker",
    "get_spec", "list_linkers", "link_files", "rules_from_settings", "Linked", "LinkFailed", "save_checkpoint",
    "load_checkpoint",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wikivel_bot.linker' has no attribute {name!r}")
