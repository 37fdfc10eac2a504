"""The cascade: a first-stage linker proposes, a cross-attention pair model re-ranks.

(docs/cascade.md.) It sits above the CLIP linker it uses as its first stage and below the
factory, which is the only module outside this folder that builds from it.

* ``linker`` — :class:`~.linker.CascadeLinker` and ``build_cascade_linker``;
* ``pair`` — the pair model and its attentive weight α;
* ``checkpoint`` — self-describing cascade checkpoints (first stage embedded, calibration);
* ``text`` — the file text the cascade reads (file name, categories, description);
* ``verifier`` — a cascade checkpoint's calibrated pair model beside any linker.

Importing this package imports nothing; each module is imported by name.
"""
