"""Learning from reviewers (docs/learning.md): decisions become training records, a
challenger is fine-tuned from the running checkpoint, judged against it on later files, and
promoted only when it wins.

* ``records`` — human decisions → one training record per file (undone, overridden, skipped,
  excluded and capped decisions left out); ``splits`` — by file, in upload order;
  ``dataset`` — the directory ``dataset from-decisions`` writes (records, card, images);
* ``metrics`` — precision and recall at the operating threshold, R@1, nDCG@5, the paired
  bootstrap; ``judge`` — the champion/challenger rule;
* ``registry`` — the models directory: checkpoints, reports, which one runs, promotion and
  rollback (stdlib only: ``config`` reads it to resolve the running checkpoint);
* ``cycle`` — one round end to end (the CLI and the daemon's scheduled job); ``schedule``;
* ``card`` — the model card of a promotion. (The uncertainty review order is a pure rule,
  ``core/review_order.py``, read by the review session and the web page.)

The torch side (encoding records, fine-tuning the heads) is ``train/decisions/heads.py``.
This front door imports nothing, so the one linker factory can ask the registry cheaply.
"""
