"""Offline evaluation that runs models: checkpoints, the cascade, evidence, the paper's report.

The floor above the pure metrics of ``wikivel_bot.evaluation`` (scoring, JSONL, tables, the
human-evaluation kit): these modules load checkpoints through the bot's own linker code
and datasets from ``train/``, so they import torch. Nothing below imports them.

    checkpoint.py     a checkpoint and the baselines on a split (``evaluate --checkpoint``)
    cascade.py        the cascade beside zero-shot/naive-mlp/fusion; the verifier's metrics
    evidence.py       image only / image + evidence / the image-free baselines (SYNTHETIC, bench/evidence.py)
    evidence_linking.py, evidence_baselines.py, evidence_measures.py, evidence_report.py
                      its linkers, its baselines (evidence kinds only), per-file measures with
                      bootstrap intervals, its tables over files and over seeds
    paper_report.py   the paper's Table 4 layout with our numbers, plots, a filled model card
    reproduce.py      every Table 4 row end to end on synthetic data, per (data seed, training seed)
                      (``dataset reproduce-synthetic``), each run's raw results kept
    reproduce_summary.py  the rows as mean ± 95 % interval over the seeds, paired orders between rows

The room's front door imports nothing; import the modules themselves.
"""
