"""Training the evidence model (docs/evidence.md): image score + evidence kinds -> P(match).

    fit.py         candidate records for the evidence model; ``train evidence`` fits it

The model itself (``linker/evidence_model.py``, numpy) is the linker room's.
The room's front door imports nothing; import the modules themselves.
"""
