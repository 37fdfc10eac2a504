"""Learning from reviewers' decisions: the torch side of ``wikivel_bot.learning`` (docs/learning.md).

``learning/`` decides *what* a round does (records, splits, the judge, the registry) and
stays free of torch; the fitting it asks for lives here, where torch is allowed.

    heads.py            Naive CLIP's heads fine-tuned on decisions; records encoded once
    own_suggestions.py  a model calibrated and judged on what it would itself suggest
    pair.py             the cascade's pair model fine-tuned on decisions
    verifier.py         the verifier's calibration re-fitted, its weights tuned when that helps
    learners.py         what a round trains, by the running linker's kind

The room's front door imports nothing; import the modules themselves.
"""
