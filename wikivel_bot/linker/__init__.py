"""The visual entity linker: open_clip encoders, heads, a cached label index, exact search.

Public API::

    from wikivel_bot.linker import create_linker, list_linkers, link_files, rules_from_settings

    linker = create_linker("naive-mlp", settings.linker)      # registry name -> Linker
    linker.attach(label_set, cache_dir=settings.linker.cache_dir, progress=True)
    outcomes = link_files(linker, [(media, thumbnail_bytes), ...],
                          rules=rules_from_settings(settings.linker), rejected={page_id: {"Q5"}})

The room, from the top floor down (docs/architecture.md draws it; tests/test_import_contract.py
holds every module to it):

* ``factory`` — :func:`create_linker`, the one place that imports the implementations;
  ``parity`` (the bf16/int8 precision check) builds whole linkers through it.
* ``cascade/`` — the cascade re-ranker (docs/cascade.md): ``linker`` (the cascade linker),
  ``pair`` (cross-attention pair model, α), ``checkpoint``, ``text`` (the file text it reads),
  ``verifier`` (a cascade checkpoint's calibrated pair model beside any linker).
* the implementations and what runs them: ``clip`` (CLIP linkers), ``baselines``,
  ``checkpoint`` (self-describing head checkpoints), ``link`` (``link_files``: the safety
  rules, decode pool, concurrent batches).
* the contract: ``base`` (the Linker protocol, queries, descriptions), ``spec`` (``LinkerSpec``
  from ``configs/*.json``; imports no implementation), ``texts`` (item and query texts),
  ``heads``, ``index`` (the on-disk label index), ``search`` (chunked top-k).
* ``backbone/`` — open_clip and the CPU fast path, beside the contract and importing nothing of
  the linker outside itself: loading, encoding, precision, the exported tower, warm start,
  preprocessing and decoding, batching.

Importing this package does not import torch; the names below that need it load on use.
"""

from __future__ import annotations

from typing import Any

from wikivel_bot.linker.base import IndexInfo, Linker, LinkerDescription, Query
from wikivel_bot.linker.factory import create_linker
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
    "IndexInfo", "Linker", "LinkerDescription", "LinkerSpec", "Query", "add_linker_config", "create_linker",
    "get_spec", "list_linkers", "link_files", "rules_from_settings", "Linked", "LinkFailed", "save_checkpoint",
    "load_checkpoint",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wikivel_bot.linker' has no attribute {name!r}")
