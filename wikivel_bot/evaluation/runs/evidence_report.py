"""The evidence bench's tables: one run (:func:`comparison_markdown`) and many seeds (:func:`seeds_markdown`).

One run's figures carry 95 % intervals over its test files (a bootstrap over files); over
seeds, each figure is the mean over runs with the 95 % t-interval of ``evaluation.seeds``
(taken over data seeds, training seeds nested in them), and an order between two rows is
claimed only when the interval of their *paired* difference — the same data seed and
training seed on both sides — excludes 0 (``evaluation.seeds.order_between``).
Every table says SYNTHETIC.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from wikivel_bot.evaluation.runs.evidence import (
    BASELINES,
    COLUMNS,
    EVIDENCE_ALONE,
    KINDS_MODEL,
    KINDS_RULE,
    WITH_EVIDENCE,
    EvidenceComparison,
)
from wikivel_bot.evaluation.runs.evidence_measures import Interval
from wikivel_bot.evaluation.seeds import Interval as SeedInterval
from wikivel_bot.evaluation.seeds import Order, SeedKey, order_between, seed_interval

def _pct(value: Optional[float]) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _interval(doc: Optional[Mapping[str, float]], scale: float = 100.0, signed: bool = True, digits: int = 1) -> str:
    if not doc:
        return "—"
    return Interval(doc["value"], doc["low"], doc["high"]).text(scale, signed, digits)


def comparison_markdown(result: EvidenceComparison) -> str:
    """One run's tables (percentages; every table says SYNTHETIC)."""
    doc = result.as_dict()
    o = result.options
    lines = [f"SYNTHETIC: test split of the synthetic evidence set ({result.files} files; hop 0), tiny open_clip "
             f"model with random init; threshold calibrated on the validation split for precision {o.target:.2f} "
             "(* not reached there: the threshold with the best precision there). %.", ""]
    lines += _rows_table(doc["rows"]) + [""] + _gains_table(doc["gains"]) + [""] + _calibration_table(doc["calibration"])
    for name, condition in doc["conditions"].items():
        shares = ", ".join(f"{k} {v:g}" for k, v in condition["shares"].items())
        lines += ["", f"Test set `{name}` ({shares}; the same files, linked with what was fitted above):", ""]
        lines += _rows_table([r for r in condition["rows"] if r["mode"] != "image only"])
        lines += [""] + _gains_table(condition["gains"]) + [""] + _calibration_table(condition["calibration"])
    lines += ["", "Evidence models (one per linker, fitted on the validation split's candidates, cross-fitted "
              "for the threshold): " + "; ".join(f"{n} {m['records']} records, {m['version']}"
                                                   for n, m in result.models.items())]
    shares = ", ".join(f"{k} {v:.2f}" for k, v in result.shares.items())
    lines += ["", f"Evidence as drawn (per file): {shares}."]
    return "\n".join(lines) + "\n"


def _rows_table(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    lines = ["| linker | evidence | " + " | ".join(COLUMNS) + " |", "| --- | --- |" + " ---: |" * len(COLUMNS)]
    for row in rows:
        cells = [_pct(row[c]) for c in COLUMNS[:-1]]
        threshold = "—" if row["threshold"] is None else f"{row['on']} ≥ {row['threshold']:.3f}"
        if row["reached"] is False:
            threshold += " *"
        lines.append(f"| {row['linker']} | {row['mode']} | " + " | ".join(cells) + f" | {threshold} |")
    return lines


def _gains_table(gains: Mapping[str, Mapping[str, Any]]) -> List[str]:
    lines = ["Image + evidence minus each image-free baseline on the same test files, points "
             "[95 % bootstrap over files]:", "",
             "| linker | R@1 − evidence alone | R@1 − kinds rule | R@1 − kinds model | precision − kinds rule "
             "| precision − kinds model | recall − kinds model |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, by_base in gains.items():
        lines.append(f"| {name} | {_interval(by_base[EVIDENCE_ALONE]['R@1'])} | {_interval(by_base[KINDS_RULE]['R@1'])}"
                     f" | {_interval(by_base[KINDS_MODEL]['R@1'])} | {_interval(by_base[KINDS_RULE]['precision'])}"
                     f" | {_interval(by_base[KINDS_MODEL]['precision'])}"
                     f" | {_interval(by_base[KINDS_MODEL].get('recall'))} |")
    return lines


def _calibration_table(calibration: Mapping[str, Mapping[str, Any]]) -> List[str]:
    lines = ["Calibration of the probabilities served (ECE, 10 bins) and ROC-AUC on lone-category evidence "
             "[95 % bootstrap over files]:", "",
             "| served by | candidates | ECE | evidence candidates | ECE on them | lone-category (depicted) | AUC |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, c in calibration.items():
        lone = c.get("lone_category", {})
        ece_evidence = f"{c['ece_evidence']:.3f}" if "ece_evidence" in c else "—"
        lines.append(f"| {name} | {c.get('candidates', 0)} | {c.get('ece', 0):.3f} | {c.get('evidence_candidates', 0)} | "
                     f"{ece_evidence} | {lone.get('candidates', 0)} ({lone.get('matches', 0)}) | "
                     f"{_interval(lone.get('auc'), 1.0, False, 3)} |")
    return lines


# -- over seeds ----------------------------------------------------------------------------------

def _text(found: Optional[SeedInterval], scale: float = 100.0, signed: bool = False, digits: int = 1) -> str:
    """``mean [low, high]`` of an interval over seeds (``[one unit]`` without an interval)."""
    if found is None:
        return "—"
    sign = "+" if signed else ""
    if found.low is None or found.high is None:
        return f"{found.mean * scale:{sign}.{digits}f} [one {found.unit}]"
    return (f"{found.mean * scale:{sign}.{digits}f} [{found.low * scale:{sign}.{digits}f}, "
            f"{found.high * scale:{sign}.{digits}f}]")


def _over(runs: Sequence[Mapping[str, Any]], get: Callable[[Mapping[str, Any]], Optional[float]]
          ) -> Dict[SeedKey, float]:
    """{(data seed, training seed): the figure} of the runs where it is defined."""
    out: Dict[SeedKey, float] = {}
    for run in runs:
        value = get(run["part"])
        if value is not None and math.isfinite(value):
            out[(run["options"]["data_seed"], run["options"]["train_seed"])] = float(value)
    return out


def _interval_of(values: Mapping[SeedKey, float]) -> Optional[SeedInterval]:
    return seed_interval(values) if values else None


def seeds_markdown(results: Sequence[Mapping[str, Any]], condition: str = "") -> str:
    """Mean [95 % interval] over the runs of each row (``evaluation.seeds``: the interval is taken
    over data seeds, training seeds nested in them), and the paired orders it supports.

    :param results: the raw results of the runs (``EvidenceComparison.as_dict``).
    :param condition: "" for the set fitted on, else a further test set's name.
    """
    runs = [{**r, "part": r if not condition else r["conditions"][condition]} for r in results]
    seeds = sorted({(r["options"]["data_seed"], r["options"]["train_seed"]) for r in results})
    keys = [(row["linker"], row["mode"]) for row in runs[0]["part"]["rows"]]

    def row(run: Mapping[str, Any], linker: str, mode: str) -> Mapping[str, Any]:
        return next(r for r in run["rows"] if r["linker"] == linker and r["mode"] == mode)

    lines = [f"SYNTHETIC, {len(runs)} runs ({len({d for d, _ in seeds})} data seeds × "
             f"{len({t for _, t in seeds})} training seeds): mean [95 % t-interval over data seeds, "
             "training seeds nested in them], %.", "",
             "| linker | evidence | R@1 | precision | recall | misleading kept |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    def column(linker: str, mode: str, name: str) -> Dict[SeedKey, float]:
        return _over(runs, lambda part: row(part, linker, mode)[name])

    for linker, mode in keys:
        cells = [_text(_interval_of(column(linker, mode, name)))
                 for name in ("R@1", "precision", "recall", "misleading kept")]
        lines.append(f"| {linker} | {mode} | " + " | ".join(cells) + " |")
    lines += ["", "Paired over runs: image + evidence minus each image-free baseline (the same data and training "
              "seed on both sides), points [95 % interval]; an order is claimed only where it excludes 0:", "",
              "| linker | baseline | R@1 | order | precision | order | recall | order |",
              "| --- | --- | ---: | --- | ---: | --- | ---: | --- |"]
    for linker in [name for name, mode in keys if mode == WITH_EVIDENCE]:
        for base in BASELINES:
            cells = []
            for metric in ("R@1", "precision", "recall"):
                both, other = column(linker, WITH_EVIDENCE, metric), column("evidence", base, metric)
                common = set(both) & set(other)
                if not common:
                    cells += ["—", "—"]
                    continue
                order = order_between(f"{linker} {WITH_EVIDENCE}", base, metric, {k: both[k] for k in common},
                                      {k: other[k] for k in common})
                cells += [_text(order.difference, 100.0, True), _verdict(order)]
            lines.append(f"| {linker} | {base} | " + " | ".join(cells) + " |")
    lines += ["", "Served calibration over runs: ECE overall, ECE on evidence candidates, ROC-AUC on "
              "lone-category evidence (mean [95 % interval]):", "",
              "| served by | ECE | ECE on evidence | AUC lone category |", "| --- | ---: | ---: | ---: |"]
    for name in runs[0]["part"]["calibration"]:
        def calib(get: Callable[[Mapping[str, Any]], Optional[float]], name: str = name) -> str:
            return _text(_interval_of(_over(runs, lambda part: get(part["calibration"].get(name, {})))), 1.0, False, 3)

        lines.append(f"| {name} | {calib(lambda c: c.get('ece'))} | {calib(lambda c: c.get('ece_evidence'))} | "
                     f"{calib(lambda c: _point((c.get('lone_category') or {}).get('auc')))} |")
    return "\n".join(lines) + "\n"


def conditions_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """One line per test set and linker: fitted on the first set, tested on each (mean [95 %
    interval] over runs; the order against the kinds-only model as :func:`seeds_markdown` claims it)."""
    names = ["", *results[0]["conditions"]]
    lines = ["| test set | linker | R@1 | precision | recall | R@1 − kinds model | order | ECE on evidence "
             "| AUC lone category |", "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for condition in names:
        runs = [{**r, "part": r if not condition else r["conditions"][condition]} for r in results]
        linkers = [row["linker"] for row in runs[0]["part"]["rows"] if row["mode"] == WITH_EVIDENCE]

        def column(linker: str, mode: str, name: str) -> Dict[SeedKey, float]:
            return _over(runs, lambda part: next(r for r in part["rows"]
                                                 if r["linker"] == linker and r["mode"] == mode)[name])

        for linker in linkers + ["evidence"]:
            mode = WITH_EVIDENCE if linker != "evidence" else KINDS_MODEL
            cells = [_text(_interval_of(column(linker, mode, name))) for name in ("R@1", "precision", "recall")]
            if linker == "evidence":
                cells += ["", ""]
            else:
                order = order_between(linker, KINDS_MODEL, "R@1", column(linker, mode, "R@1"),
                                      column("evidence", KINDS_MODEL, "R@1"))
                cells += [_text(order.difference, 100.0, True), _verdict(order)]
            key = linker if linker != "evidence" else f"evidence ({KINDS_MODEL})"
            cells += [_text(_interval_of(_over(runs, lambda part: part["calibration"].get(key, {}).get(
                          "ece_evidence"))), 1.0, False, 3),
                      _text(_interval_of(_over(runs, lambda part: _point(
                          (part["calibration"].get(key, {}).get("lone_category") or {}).get("auc")))), 1.0, False, 3)]
            shown = condition or "as fitted"
            lines.append(f"| {shown} | {linker if linker != 'evidence' else KINDS_MODEL} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _point(doc: Optional[Mapping[str, float]]) -> Optional[float]:
    return None if not doc else float(doc["value"])


def _verdict(order: Order) -> str:
    if order.verdict == "above":
        return "**image + evidence above**"
    if order.verdict == "below":
        return "**image + evidence below**"
    return "none claimed"


def load_runs(paths: Sequence[Any]) -> List[Dict[str, Any]]:
    """The raw results of runs, read from their JSON files (sorted by data and training seed)."""
    import json
    from pathlib import Path

    docs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    return sorted(docs, key=lambda d: (d["options"]["data_seed"], d["options"]["train_seed"]))
