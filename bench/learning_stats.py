"""Seeds for the learning simulations (bench/learning.py, bench/learning_pair.py): every run
of a grid of data seeds × training seeds, in parallel processes, its raw result kept as one
JSON line beside the command that made it, and summaries as mean ± a 95 % interval over the
runs (``wikivel_bot.evaluation.seeds``: over data seeds, training seeds nested in them), with an
order between two rows claimed only when their paired interval excludes 0. Every figure is SYNTHETIC."""

from __future__ import annotations

import json
import math
import multiprocessing
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.evaluation.seeds import order_between, seed_interval

Key = Tuple[int, int]  # (data seed, training seed)


def keyed(runs: Sequence[Dict[str, Any]], value: Callable[[Dict[str, Any]], Optional[float]]) -> Dict[Key, float]:
    """{(data seed, training seed): value(run)} of the runs where the value is a finite number."""
    out: Dict[Key, float] = {}
    for run in runs:
        v = value(run)
        if v is not None and math.isfinite(float(v)):
            out[(int(run["data_seed"]), int(run["train_seed"]))] = float(v)
    return out


def cell(values: Mapping[Key, float], scale: float = 1.0, digits: int = 1) -> str:
    """"mean ± half-width" over the runs (``evaluation.seeds``: the interval is over data
    seeds, in which training seeds are nested), times ``scale``; "n/a" without any run."""
    if not values:
        return "n/a"
    got = seed_interval(values)
    shown = f"{scale * got.mean:.{digits}f}"
    return shown if got.half_width is None else f"{shown} ± {scale * got.half_width:.{digits}f}"


def paired(first: Mapping[Key, float], second: Mapping[Key, float], scale: float = 1.0, digits: int = 1) -> str:
    """second − first, run by run, "mean ± half-width", and the order it supports
    (``evaluation.seeds.order_between``: only when the paired interval excludes 0)."""
    common = sorted(set(first) & set(second))
    if not common:
        return "n/a"
    order = order_between("second", "first", "", {k: second[k] for k in common}, {k: first[k] for k in common})
    d = order.difference
    width = "" if d.half_width is None else f" ± {scale * d.half_width:.{digits}f}"
    said = {"above": "higher", "below": "lower"}.get(order.verdict, "no order")
    return f"{scale * d.mean:+.{digits}f}{width} ({said})"


def run_grid(run: Callable[[Dict[str, Any]], Dict[str, Any]], base: Dict[str, Any], data_seeds: Sequence[int],
             train_seeds: Sequence[int], jobs: int,
             done: Optional[Callable[[Dict[str, Any]], None]] = None) -> List[Dict[str, Any]]:
    """``run`` for every (data seed, training seed), ``jobs`` processes at a time, in grid order.

    :param base: the options every run shares (a plain dict: it crosses process boundaries).
    :param done: called with each run's result as soon as it is in (the raw file grows run
        by run, so a long grid cut short keeps what it finished).
    """
    tasks = [{**base, "data_seed": d, "train_seed": t} for d in data_seeds for t in train_seeds]
    results: List[Dict[str, Any]] = []
    if jobs <= 1:
        for task in tasks:
            results.append(run(task))
            if done is not None:
                done(results[-1])
        return results
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for result in pool.imap(run, tasks, chunksize=1):
            results.append(result)
            if done is not None:
                done(result)
    return results


class RawFile:
    """The raw results: a first line naming the command, date, CPU and options, then one line
    per run, appended as each run finishes."""

    def __init__(self, path: Path, command: str, header: Dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"command": command, **header, "synthetic": True}, sort_keys=True) + "\n",
                        encoding="utf-8")

    def add(self, run: Dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(run, sort_keys=True) + "\n")


def parse_seeds(text: str) -> List[int]:
    return [int(x) for x in text.split(",") if x.strip()]
