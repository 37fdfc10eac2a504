"""The reproduction check's table over seeds: each Table 4 row as mean ± a 95 % interval, and
the orders between rows that the paired intervals support.

Input: the per-seed raw results ``reproduce.py`` writes (one JSON per (data seed, training
seed), each with the command that made it). Output: the Markdown table the command prints
and ``report.md`` holds, and the summary of ``results.json``. The statistics are
:mod:`wikivel_bot.evaluation.seeds` (why the interval is taken over data seeds is said there);
nothing here runs a model, so a summary can be rebuilt from the raw files alone
(``reproduce-synthetic --summarize``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.evaluation.runs.paper_report import PAPER_TABLE4, TABLE4_COLUMNS
from wikivel_bot.evaluation.seeds import Interval, Order, SeedKey, all_orders, seed_interval

SYNTHETIC_TAG = "ours, SYNTHETIC data, random-init tiny CLIP"
# The metrics at which orders between rows are listed (every metric's are in results.json).
ORDER_METRICS: Tuple[str, ...] = ("R@1", "R@10")


@dataclass
class SeedSummary:
    """Every row over every run: intervals per (row, metric), orders between rows.

    :param runs: the raw per-seed results, as written (``reproduce.seed_result``).
    """

    runs: List[Dict[str, Any]]
    rows: List[Dict[str, Any]] = field(default_factory=list)
    orders: List[Order] = field(default_factory=list)

    @property
    def settings(self) -> Dict[str, Any]:
        """The size every run was made at (``files``, ``epochs``, ``batch_size``; the same for all)."""
        return dict(self.runs[0].get("settings") or {})

    @property
    def data_seeds(self) -> List[int]:
        return sorted({int(r["data_seed"]) for r in self.runs})

    @property
    def train_seeds(self) -> List[int]:
        return sorted({int(r["train_seed"]) for r in self.runs})

    def design(self) -> str:
        """The seeds in words, and what the interval is taken over."""
        first = self.rows[0]["ours"][TABLE4_COLUMNS[0]] if self.rows else None
        size = self.settings
        at = (f" at {size['files']:,} files, {size['epochs']} epochs, batch {size['batch_size']}"
              if {"files", "epochs", "batch_size"} <= set(size) else "")
        runs = f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}{at} (data seeds " \
               f"{_seeds(self.data_seeds)} × training seeds {_seeds(self.train_seeds)})"
        if first is None or first.low is None:
            return f"{runs}: one run gives no interval, so no order between rows is claimed"
        cond = "" if first.unit == "data seed" else \
            ", conditional on this one draw of data: no order between rows is claimed from it"
        return (f"{runs}; mean ± half-width of the 95 % t interval over the {first.units} {first.unit} means "
                f"({first.units - 1} df{cond})")

    def table(self) -> str:
        """Table 4 with our rows as mean ± 95 % interval, the paper's beside them, then the orders."""
        files = ", ".join(str(f) for f in sorted({int(r["files"]) for r in self.runs}))
        head = "| Table 4 row | source | batch | " + " | ".join(TABLE4_COLUMNS) + " |"
        lines = [f"Table 4, test split, zero hops, % — our rows: {SYNTHETIC_TAG} ({files} test files per "
                 f"data seed), {self.design()}; the paper's: 100,000 Commons test images, pretrained ViT-B/32, one "
                 "run. Not comparable: the synthetic figures only show that the route runs and learns. batch: the "
                 "rows per batch each row was trained at (— untrained).", "", head,
                 "| --- | --- | ---: | " + " | ".join("---:" for _ in TABLE4_COLUMNS) + " |"]
        for row in self.rows:
            ours = " | ".join(_cell(row["ours"][c]) for c in TABLE4_COLUMNS)
            paper = " | ".join(f"{v:.1f}" for v in row["paper"])
            lines.append(f"| {row['row']} | synthetic | {row['batch_label']} | {ours} |")
            lines.append(f"| {row['row']} | paper | {_batch(row['paper_batch'])} | {paper} |")
        return "\n".join(lines) + "\n\n" + self.order_table()

    def order_table(self) -> str:
        """Every pair of rows at :data:`ORDER_METRICS`: our paired difference and what it
        claims, beside the paper's difference (one run, no interval)."""
        metrics = [m for m in ORDER_METRICS if any(o.metric == m for o in self.orders)]
        lines = ["Orders between rows (percentage points, first row minus second, paired: the difference is "
                 "taken run by run on the same seeds and test files; an order is claimed only when its 95 % "
                 "interval excludes 0):", "",
                 "| rows | " + " | ".join(f"{m} difference | {m} order | paper {m}" for m in metrics) + " |",
                 "| --- | " + " | ".join("---: | --- | ---:" for _ in metrics) + " |"]
        by_pair: Dict[Tuple[str, str], Dict[str, Order]] = {}
        for order in self.orders:
            by_pair.setdefault((order.first, order.second), {})[order.metric] = order
        for (first, second), found in by_pair.items():
            cells = []
            for metric in metrics:
                order = found[metric]
                column = TABLE4_COLUMNS.index(metric)
                paper = PAPER_TABLE4[first][column] - PAPER_TABLE4[second][column]
                cells.append(f"{_difference(order.difference)} | {_verdict(order)} | {paper:+.1f}")
            lines.append(f"| {first} − {second} | " + " | ".join(cells) + " |")
        claimed = sum(o.verdict != "none" for o in self.orders if o.metric in metrics)
        lines.append("")
        lines.append(f"{claimed} of {sum(o.metric in metrics for o in self.orders)} orders claimed.")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> Dict[str, Any]:
        """The summary for ``results.json`` (fractions, every metric's orders)."""
        return {"synthetic": True, "columns": list(TABLE4_COLUMNS), "design": self.design(), "settings": self.settings,
                "data_seeds": self.data_seeds, "train_seeds": self.train_seeds,
                "runs": [{"data_seed": r["data_seed"], "train_seed": r["train_seed"], "command": r["command"]}
                         for r in self.runs],
                "rows": [{"row": r["row"], "model": r["model"], "paper": r["paper"], "batch": r["batch"],
                          "paper_batch": r["paper_batch"],
                          "ours": {c: r["ours"][c].to_dict() for c in TABLE4_COLUMNS}} for r in self.rows],
                "orders": [o.to_dict() for o in self.orders]}


def summarize(runs: Sequence[Mapping[str, Any]], paper_batch: Mapping[str, int],
              order_metrics: Sequence[str] = TABLE4_COLUMNS) -> SeedSummary:
    """Intervals and orders from the raw per-seed results.

    :param runs: raw results (``columns``, ``rows`` with ``row``/``model``/``batch``/``ours``).
    :param paper_batch: the paper's batch of each trained row.
    :param order_metrics: metrics at which every pair of rows is compared.
    :raises ValueError: no runs, two runs on the same seeds, runs made at different sizes
        (files, epochs, batch) or with different rows.
    """
    if not runs:
        raise ValueError("no per-seed results to summarize")
    ordered = sorted((dict(r) for r in runs), key=lambda r: (int(r["data_seed"]), int(r["train_seed"])))
    keys = [(int(r["data_seed"]), int(r["train_seed"])) for r in ordered]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two results for the same (data seed, training seed): {sorted(keys)}")
    sizes = {json.dumps(r.get("settings"), sort_keys=True) for r in ordered}
    if len(sizes) > 1:
        raise ValueError(f"the per-seed results were made at different sizes, not one table: {sorted(sizes)}")
    names = [row["row"] for row in ordered[0]["rows"]]
    values: Dict[str, Dict[str, Dict[SeedKey, float]]] = {n: {c: {} for c in TABLE4_COLUMNS} for n in names}
    batches: Dict[str, set] = {n: set() for n in names}
    models: Dict[str, str] = {}
    for key, run in zip(keys, ordered):
        if [row["row"] for row in run["rows"]] != names:
            raise ValueError(f"the run on seeds {key} has other rows than the run on seeds {keys[0]}")
        columns = list(run.get("columns", TABLE4_COLUMNS))
        for row in run["rows"]:
            models[row["row"]] = row["model"]
            batches[row["row"]].add(row.get("batch"))
            for metric, value in zip(columns, row["ours"]):
                if metric in values[row["row"]]:
                    values[row["row"]][metric][key] = float(value)
    summary = SeedSummary(runs=ordered)
    for name in names:
        used = sorted(b for b in batches[name] if b)
        summary.rows.append({"row": name, "model": models[name], "paper": list(PAPER_TABLE4[name]),
                             "batch": used[0] if len(used) == 1 else (used or None),
                             "batch_label": "/".join(f"{b:,}" for b in used) or "—",
                             "paper_batch": paper_batch.get(name),
                             "ours": {c: seed_interval(values[name][c]) for c in TABLE4_COLUMNS}})
    summary.orders = all_orders(values, order_metrics, names)
    return summary


def _seeds(seeds: Sequence[int]) -> str:
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def _batch(value: Optional[int]) -> str:
    return f"{value:,}" if value else "—"


def _cell(interval: Interval) -> str:
    half = interval.half_width
    return f"{100 * interval.mean:.1f}" if half is None else f"{100 * interval.mean:.1f} ± {100 * half:.1f}"


def _difference(interval: Interval) -> str:
    if interval.low is None or interval.high is None:
        return f"{_points(interval.mean)} (no interval)"
    return f"{_points(interval.mean)} [{_points(interval.low)}, {_points(interval.high)}]"


def _points(value: float) -> str:
    """Signed percentage points, one decimal; two where one would round a bound to ±0.0 and
    hide which side of 0 it is on."""
    text = f"{100 * value:+.1f}"
    return f"{100 * value:+.2f}" if text in ("+0.0", "-0.0") and value != 0 else text


def _verdict(order: Order) -> str:
    if order.verdict == "above":
        return "first above"
    if order.verdict == "below":
        return "second above"
    return "none"
