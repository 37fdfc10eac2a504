"""Synthetic, learnable stand-ins for the Wiki-VEL data (SYNTHETIC: no network, seconds on a CPU).

    shapes.py      coloured shapes on noisy backgrounds, items in a hierarchy (``dataset synthetic``)
    text.py        the same shapes with the colour split between the picture and the file's text
    evidence.py    the same shapes with category, link and identifier evidence, some misleading
    evidence_errors.py  how that evidence goes wrong in the harder set (every kind, look-alikes)

Every number measured on these sets is SYNTHETIC and says so where it appears.
The room's front door imports nothing; import the modules themselves.
"""
