"""The visual entity linker: open_clip encoders, heads, a cached label index, exact search.

Public API::

    from wikivel_bot.linker import build_ready_linker, link_files

    # Settings in: the linker (item images, cascade, verifier) attached, and its rules.
    # item_image_source: wikivel_bot.commons.providers (the room may not import commons/).
    ready = build_ready_linker(settings, label_set, item_images=item_image_source(settings))
    outcomes = link_files(ready.linker, [(media, thumbnail_bytes), ...],
                          rules=ready.rules, rejected={page_id: {"Q5"}})

The room, from the top floor down (docs/architecture.md draws it; tests/test_import_contract.py
holds every module to it):

* ``factory`` — :func:`build_ready_linker` (the whole Settings in, the ready linker and its
  rules out: the one way every path gets a linker) and, below it, :func:`create_linker`, the
  one place that imports the implementations; ``parity`` (the bf16/int8 precision check)
  builds whole linkers through it.
* ``cascade/`` — the cascade re-ranker (docs/cascade.md): ``linker`` (the cascade linker),
  ``pair`` (cross-attention pair model, α), ``checkpoint``, ``text`` (the file text it reads),
  ``verifier`` (a cascade checkpoint's calibrated pair model beside any linker).
* the implementations and what runs them: ``clip`` (CLIP linkers), ``baselines``,
  ``checkpoint`` (self-describing head checkpoints), ``link`` (``link_files``: the safety
  rules, decode pool, concurrent batches).
* the contract: ``base`` (the Linker protocol, queries, descriptions), ``spec`` (``LinkerSpec``
  from ``configs/*.json``; imports no implementation), ``texts`` (item and query texts),
  ``heads``, ``index`` (the on-disk label index), ``search`` (chunked top-k),
  ``evidence_model`` (image score + the file's evidence → a calibrated P(match); numpy).
* ``backbone/`` — open_clip and the CPU fast path, beside the contract and importing nothing of
  the linker outside itself: loading, encoding, precision, the exported tower, warm start,
  preprocessing and decoding, batching.

Importing this package does not import torch; the names below that need it load on use.
"""

from __future__ import annotations

from typing import Any

from wikivel_bot.linker.base import IndexInfo, Linker, LinkerDescription, Query
from wikivel_bot.linker.factory import ReadyLinker, build_ready_linker, create_linker
from wikivel_bot.linker.spec import LinkerSpec, add_linker_config, get_spec, list_linkers

_LAZY = {
    "link_files": "wikivel_bot.linker.link",
    "rules_from_settings": "wikivel_bot.linker.link",
    "Linked": "wikivel_bot.linker.link",
    "LinkFailed": "wikivel_bot.linker.link",
    "save_checkpoint": "wikivel_bot.linker.checkpoint",
    "load_checkpoint": "wikivel_bot.linker.checkpoint",
}

__all__ = [
    "IndexInfo", "Linker", "LinkerDescription", "LinkerSpec", "Query", "ReadyLinker", "add_linker_config",
    "build_ready_linker", "create_linker",
    "get_spec", "list_linkers", "link_files", "rules_from_settings", "Linked", "LinkFailed", "save_checkpoint",
    "load_checkpoint",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wikivel_bot.linker' has no attribute {name!r}")
