"""The backbone: open_clip loaded, fed and run fast on CPU.

The linkers above (``clip``, ``link``, the cascade) call it; it imports nothing of the linker
outside this folder, so it can be read, benchmarked and replaced on its own.

* loading and encoding: ``encoders`` (the :class:`~.encoders.Backbone`, image encoding),
  ``text_tower`` (tokens and text encoding, the text tower's weights), ``weights`` (where
  weights come from: tag, file, ``random``), ``backbones`` (the documented model choices);
* precision: ``precision`` (auto/fp32/bf16/int8 choice and parity verdicts), ``fastpath``
  (applying it), ``packed`` (bf16 weights packed once for oneDNN), ``pooled`` (the last block
  on the pooled rows only);
* start-up: ``tower`` (the exported image tower: starts without open_clip), ``warmstart``
  (cached inference-ready weights);
* input: ``images`` (safe decoding of downloaded bytes), ``imageprep`` (preprocessing without
  torchvision), ``prefetch`` (the decode pool), ``decode_budget``;
* batching: ``parallel_batches`` (several batches at once, one torch thread each).

Importing this package imports nothing; each module is imported by name.
"""
