"""Training the cascade's pair model over a frozen first stage (seed 004 §3.2.2, docs/cascade.md).

    data.py        what a cascade run loads: caches, the frozen first stage, top-K lists, batches
    fit.py         ``train --variant cascade``: the pair model, its losses, the verifier's fit

The model itself (``linker/cascade/``) is the linker room's; this room only fits it.
The room's front door imports nothing; import the modules themselves.
"""
