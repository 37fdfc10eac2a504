"""The learning simulations' command line, runs and report (bench/learning.py and
bench/learning_pair.py give only their world): the grid of data seeds × training seeds, run in
parallel, kept raw, and summarised as mean ± a 95 % interval over the runs. Every figure is SYNTHETIC."""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from bench.evidence import cpu_line
from bench.learning_sim import POISONS, Reviewers, judged, labelled, simulate, simulation_parser
from bench.learning_stats import RawFile, cell, keyed, paired, parse_seeds, run_grid

STRATEGIES = ("no learning", "queue order", "uncertainty")


def run_one(task: Dict[str, Any]) -> Dict[str, Any]:
    """One run of the grid (in its own process): every strategy on one world, JSON-able."""
    import torch

    torch.set_num_threads(1)
    args = argparse.Namespace(**task)
    bench = importlib.import_module(task["module"])
    world = bench.make_world(args)
    who = Reviewers.draw(len(world.truth), args.data_seed, args.poison_share)
    out: Dict[str, Any] = {"data_seed": args.data_seed, "train_seed": args.train_seed,
                           "world": bench.describe(world, args), "strategies": {}}
    for strategy in task["strategies"]:
        result = simulate(strategy, world, args, who)
        out["strategies"][strategy] = result["rounds"]
        if strategy == "queue order":
            out["corrupted"], out["poisoned"] = result["corrupted"], result["poisoned"]
            data = world.tensors(result["decisions"], *labelled(result["decisions"], world.truth, who, flip=args.flip,
                                                                 seed=args.data_seed)[1:])
            final = judged(world, result["model"], data, args)
            out["final_corrupted"] = {"outcome": final.verdict.outcome, "reasons": final.verdict.reasons,
                                      "decisions": len(result["decisions"])}
    return out


def main_of(script: str, doc: str, make_world: Callable[..., Any], describe: Callable[..., str], *, rounds: int,
            epochs: int, lr: float, world_line: str, extra: Optional[Callable[[argparse.ArgumentParser], None]] = None,
            check: Optional[Callable[[argparse.ArgumentParser, argparse.Namespace], None]] = None) -> None:
    parser = simulation_parser(doc.split("\n\n")[0], rounds=rounds, epochs=epochs, lr=lr)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--from-raw", default="", help="only summarise the runs of a raw results file again")
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown or "queue order" not in strategies:
        parser.error(f"--strategies: unknown {unknown}" if unknown else "--strategies must include 'queue order'")
    if check is not None:
        check(parser, args)
    if args.from_raw:
        return summarise(Path(args.from_raw), strategies)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"nice -n 10 .venv/bin/python {script} {' '.join(sys.argv[1:])}".rstrip()
    print(f"command: {command}")
    print(f"date: {when}; CPU: {cpu_line()}; {args.jobs} processes of one torch thread")
    print(f"SYNTHETIC: {world_line}; honest reviewers wrong {100 * args.error:.0f} % of the time, {args.per_round} "
          f"decisions per round, {args.rounds} rounds, threshold 0.5 on each model's own calibrated probability; "
          "test: 1000 later files with full truth")
    base = {k: v for k, v in vars(args).items() if k not in ("seeds", "train_seeds", "jobs", "raw", "strategies")}
    base.update(module=script[:-3].replace("/", "."), strategies=strategies)
    raw = RawFile(Path(args.raw), command, {"date": when, "cpu": cpu_line(), "options": base}) if args.raw else None
    runs = run_grid(run_one, base, parse_seeds(args.seeds), parse_seeds(args.train_seeds), args.jobs,
                    done=raw.add if raw is not None else None)
    if raw is not None:
        print(f"raw results: {args.raw} (one line per run)")
    report(runs, strategies, args)
    print()
    print(f"{time.perf_counter() - started:.0f} s in all")


def summarise(path: Path, strategies: List[str]) -> None:
    """The report of a raw results file (its first line: the command, date, CPU and options)."""
    import json

    header, *runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"command: {header['command']}")
    print(f"date: {header['date']}; CPU: {header['cpu']}; summarised again from {path}")
    options = dict(header["options"])
    seeds = sorted({r["data_seed"] for r in runs}), sorted({r["train_seed"] for r in runs})
    options.update(seeds=",".join(map(str, seeds[0])), train_seeds=",".join(map(str, seeds[1])))
    report(runs, [s for s in strategies if s in runs[0]["strategies"]], argparse.Namespace(**options))


def report(runs: List[Dict[str, Any]], strategies: List[str], args: argparse.Namespace) -> None:
    n = len(runs)
    print()
    print(f"{n} runs (data seeds {args.seeds} × training seeds {args.train_seeds}); mean ± 95 % t-interval, taken "
          "over data seeds (training seeds nested in them: wikivel_bot/evaluation/seeds.py). An order between two rows "
          "is claimed only when their paired interval excludes 0.")
    first = runs[0]
    print()
    print(f"### One run: data seed {first['data_seed']}, training seed {first['train_seed']} ({first['world']})")
    print()
    print("| strategy | round | decisions | running: precision | recall | R@1 | utility/file | promoted | "
          "old rule would | challenger: precision / R@1 / utility |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in strategies:
        for r in first["strategies"][s]:
            c, run = r.get("challenger"), r["running"]
            print(f"| {s} | {r['round']} | {r['decisions']} | {_pct(run['precision'])} | {_pct(run['recall'])} | "
                  f"{_pct(run['R@1'])} | {run['utility']:+.3f} | {_yes(r.get('promoted'))} | {_yes(r.get('old_rule'))} | "
                  + (f"{_pct(c['precision'])} / {_pct(c['R@1'])} / {c['utility']:+.3f}" if c else "—") + " |")
    def final(s: str, metric: str) -> Dict[Any, float]:
        return keyed(runs, lambda run: run["strategies"][s][-1]["running"][metric])
    print()
    print(f"### The running model after round {args.rounds}, full truth on the test files")
    print()
    print("| strategy | precision | recall | R@1 | utility per file | promotions per run |")
    print("|---|---|---|---|---|---|")
    for s in strategies:
        promos = keyed(runs, lambda run: sum(bool(r.get("promoted")) for r in run["strategies"][s]))
        print(f"| {s} | {cell(final(s, 'precision'), 100)} | {cell(final(s, 'recall'), 100)} | "
              f"{cell(final(s, 'R@1'), 100)} | {cell(final(s, 'utility'), 1, 3)} | "
              + (cell(promos, 1, 2) if s != "no learning" else "—") + " |")
    print()
    print("Paired over runs (second − first): utility per file | R@1 (points)")
    for a, b in (("no learning", "queue order"), ("queue order", "uncertainty"), ("no learning", "uncertainty")):
        if a in strategies and b in strategies:
            print(f"* {b} − {a}: {paired(final(a, 'utility'), final(b, 'utility'), 1, 3)} | "
                  f"{paired(final(a, 'R@1'), final(b, 'R@1'), 100)}")
    _rules(runs, strategies)
    _recalibration(runs, strategies)
    _attacks(runs, args)


def _rules(runs: List[Dict[str, Any]], strategies: List[str]) -> None:
    """The utility rule beside the rule before, on the same challengers and decisions."""
    def rounds(run: Dict[str, Any]) -> List[Dict[str, Any]]:
        return [r for s in strategies if s != "no learning" for r in run["strategies"][s]
                if r.get("old_rule") is not None and r.get("challenger")]

    def gain(r: Dict[str, Any]) -> float:
        # Over what runs when the challenger is kept (the recalibrated running model); raw
        # results written before that was recorded compare with the model running before the round.
        return r["challenger"]["utility"] - r.get("alternative", r["before"])["utility"]
    every = [r for run in runs for r in rounds(run)]
    now, old = sum(r["promoted"] for r in every), sum(bool(r["old_rule"]) for r in every)
    only_now = [r for r in every if r["promoted"] and not r["old_rule"]]
    only_old = [r for r in every if r["old_rule"] and not r["promoted"]]

    def mean_gain(pick: Callable[[Dict[str, Any]], bool]) -> str:
        per_run = keyed(runs, lambda run: _mean([gain(r) for r in rounds(run) if pick(r)]))
        return cell(per_run, 1, 3)
    print()
    print(f"The judge's rule, on the same {len(every)} learning rounds (challenger and decisions alike): the utility rule "
          f"promoted {now}, the rule before (precision gain beyond its interval, a silent model scored precision 0, "
          f"recall and nDCG@5 held) {old}; only the utility rule {len(only_now)}, only the rule before "
          f"{len(only_old)}. Full-truth utility gain per file of the challengers each rule promoted over "
          f"{'the running model recalibrated (what runs when the challenger is kept)' if any('alternative' in r for r in every) else 'the model running before the round'} "
          f"(mean per run): utility rule {mean_gain(lambda r: r['promoted'])}, rule before "
          f"{mean_gain(lambda r: bool(r['old_rule']))}; of those only the utility rule promoted: "
          f"{_signed(_mean([gain(r) for r in only_now]))} on average, only the rule before: "
          f"{_signed(_mean([gain(r) for r in only_old]))}.")


def _signed(value: float) -> str:
    return "n/a" if value != value else f"{value:+.3f}"


def _mean(xs: List[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _recalibration(runs: List[Dict[str, Any]], strategies: List[str]) -> None:
    def pick(run: Dict[str, Any]) -> List[Dict[str, Any]]:
        return [r["recalibrated"] for s in strategies for r in run["strategies"][s] if r.get("recalibrated")]
    count = sum(len(pick(run)) for run in runs)
    if not count:
        return
    before = keyed(runs, lambda run: _mean([x["before"]["utility"] for x in pick(run)]))
    after = keyed(runs, lambda run: _mean([x["after"]["utility"] for x in pick(run)]))
    first = keyed(runs, lambda run: next((r["recalibrated"]["before"]["utility"] for r in run["strategies"][strategies[0]]
                                          if r.get("recalibrated")), None))
    first_after = keyed(runs, lambda run: next((r["recalibrated"]["after"]["utility"]
                                                for r in run["strategies"][strategies[0]] if r.get("recalibrated")), None))
    print()
    print(f"Recalibrating the running model when nothing is promoted ({count} rounds in all): its full-truth utility "
          f"per file at the threshold it had {cell(before, 1, 3)}, recalibrated {cell(after, 1, 3)} (mean per run); "
          f"paired change {paired(before, after, 1, 3)}. The first recalibration of `{strategies[0]}` (the untrained "
          f"start): {cell(first, 1, 3)} → {cell(first_after, 1, 3)}.")


def _attacks(runs: List[Dict[str, Any]], args: argparse.Namespace) -> None:
    corrupted = [c for run in runs for c in run.get("corrupted", [])]
    better = sum(1 for c in corrupted if c["promoted"] and c["challenger"]
                 and c["challenger"]["utility"] > c["running"]["utility"])
    print()
    print(f"Corrupted challengers ({100 * args.flip:.0f} % of training and calibration labels flipped, evaluation honest): "
          f"promoted {sum(c['promoted'] for c in corrupted)} of {len(corrupted)}; of those, really better on full truth "
          f"(utility): {better}. Final challenger on all queue-order decisions flipped: "
          f"{sum(run['final_corrupted']['outcome'] == 'keep' for run in runs)} of {len(runs)} refused.")
    print()
    print(f"Poisoning by one account deciding {100 * args.poison_share:.0f} % of the files in every split "
          "(evaluation included), each round of `queue order`:")
    print()
    print("Worse on full truth: lower utility per file than what runs when the challenger is kept.")
    print()
    print("| poison | rounds | promoted without guard rails | of which worse on full truth | promoted with cap and "
          "leave-one-reviewer-out | of which worse on full truth |")
    print("|---|---|---|---|---|---|")
    for poison in POISONS:
        cases = [p for run in runs for p in run.get("poisoned", {}).get(poison, [])]

        def worse(key: str) -> int:
            return sum(1 for p in cases if p[key] and p["challenger"]
                       and p["challenger"]["utility"] < p["running"]["utility"])
        print(f"| {poison} | {len(cases)} | {sum(p['undefended'] for p in cases)} | {worse('undefended')} | "
              f"{sum(p['defended'] for p in cases)} | {worse('defended')} |")


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None or value != value else f"{100 * value:.1f}"


def _yes(value: Optional[bool]) -> str:
    return "—" if value is None else "yes" if value else "no"


