"""The fitting loop: ``wikivel-bot train`` for the heads of naive-mlp, naive-te and fusion.

    embeddings.py  frozen-encoder embeddings cached per (backbone, weights, data)
    targets.py     in-batch loss targets: shared items, hop-weighted relatives (paper §4.3)
    losses.py      relaxed multi-positive contrastive loss, hinge triplet loss
    variants.py    what naive-mlp, naive-te and fusion compute from the cache
    setup.py       everything a run loads before its first step
    validate.py    validation passes (in-batch loss, ranking metrics of validation files)
    state.py       resume state and early stopping
    epochs.py      the epoch loop every training run shares (order, position, max-steps, Ctrl-C)
    loop.py        the training loop (``train``)

The room's front door imports nothing; import the modules themselves.
"""
