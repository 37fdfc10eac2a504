"""The report's figures (matplotlib, imported only here and only when drawing).

Three PNGs: precision and recall by k, precision by score band, and precision / human-item
recall by super-category. Without matplotlib the figures are skipped and the report says so
(it is the ``report`` extra, also part of ``train``: ``pip install 'wikivel-bot[report]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence, Tuple

from wikivel_bot.liveeval.aggregate import Summary

FIGURES = ("precision_recall_by_k.png", "precision_by_score_band.png", "by_super_category.png")


def draw_figures(summaries: Sequence[Summary], out_dir: Path) -> Tuple[List[Path], List[str]]:
    """Draw the figures of ``summaries`` (one line or bar group per linker) into ``out_dir``.

    :returns: (PNG paths written, notes about figures that could not be drawn).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], ["figures skipped: matplotlib is not installed (pip install 'wikivel-bot[report]')"]
    random = any(s.run.random_weights for s in summaries)
    suffix = " (RANDOM WEIGHTS)" if random else ""
    written = [
        _by_k(plt, summaries, out_dir / FIGURES[0], suffix),
        _by_band(plt, summaries, out_dir / FIGURES[1], suffix),
        _by_category(plt, summaries, out_dir / FIGURES[2], suffix),
    ]
    return written, []


def _by_k(plt: Any, summaries: Sequence[Summary], path: Path, suffix: str) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for summary in summaries:
        for level, style in ((0, "-"), (3, "--")):
            points = summary.curve[level]
            ks = [p[0] for p in points]
            left.plot(ks, [100 * p[1] for p in points], style, marker="o", markersize=3,
                      label=f"{summary.run.linker}, hops {level}")
            right.plot(ks, [100 * p[2] for p in points], style, marker="o", markersize=3,
                       label=f"{summary.run.linker}, hops {level}")
    for axis, name in ((left, "precision@k (%)"), (right, "recall@k (%)")):
        axis.set_xlabel("k")
        axis.set_ylabel(name)
        axis.set_ylim(0, 100)
        axis.legend(fontsize=7)
    fig.suptitle("Precision and recall by k" + suffix)
    return _save(plt, fig, path)


def _by_band(plt: Any, summaries: Sequence[Summary], path: Path, suffix: str) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(summaries))
    for index, summary in enumerate(summaries):
        positions = [i + index * width for i in range(len(summary.bands))]
        ax.bar(positions, [100 * b.precision(0) for b in summary.bands], width, label=f"{summary.run.linker}, hops 0")
        ax.plot(positions, [100 * b.precision(3) for b in summary.bands], "k_", markersize=12,
                label=f"{summary.run.linker}, hops 3" if index == 0 else None)
        if index == 0:
            ax.set_xticks(positions, [b.name for b in summary.bands], rotation=30, fontsize=7)
    ax.set_xlabel("score band")
    ax.set_ylabel("precision (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    ax.set_title("Precision by score band" + suffix)
    return _save(plt, fig, path)


def _by_category(plt: Any, summaries: Sequence[Summary], path: Path, suffix: str) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5))
    names = sorted({c.name for s in summaries for c in s.categories})
    height = 0.8 / max(1, len(summaries))
    for index, summary in enumerate(summaries):
        rows = {c.name: c for c in summary.categories}
        positions = [i + index * height for i in range(len(names))]
        left.barh(positions, [100 * rows[n].precision(0) if n in rows else 0 for n in names], height,
                  label=summary.run.linker)
        right.barh(positions, [100 * rows[n].recall(0) if n in rows else 0 for n in names], height,
                   label=summary.run.linker)
    for axis, name in ((left, "suggestion precision, hops 0 (%)"),
                       (right, f"human items found in top {summaries[0].recall_k}, hops 0 (%)")):
        axis.set_yticks(range(len(names)), names, fontsize=7)
        axis.set_xlim(0, 100)
        axis.set_xlabel(name)
        axis.legend(fontsize=7)
    fig.suptitle("By super-category" + suffix)
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
