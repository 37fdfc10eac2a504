"""What the safety rules cost the ranking: ``rank_candidates`` per file, with and without them.

    .venv/bin/python bench/safety.py [--items 18522] [--files 2000] [--k 60]

A synthetic label set the size of the paper's f=10 set (18,522 items, built in memory with
``label_set_from_records``): a P279 tree 1-4 levels under 12 roots, one item in six a person
(P31 human), a religion subtree and an ethnic-group class so the sensitive classes match
something. Each "file" is ``--k`` random (item, score) pairs — what the linker hands the
ranking for top_k 10 (10 × 3 overfetch × 2 while the safety rules are on) — and the file's
evidence: two category items, and on every tenth file a category linked to one of the people
(which ties the file to that person, the only way one is suggested). Timed: the ranking of all
files with ``safety=None`` and with the default :class:`SafetyRules`, interleaved, best of 3.
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

from wikivel_bot.core.ranking import RankingRules, rank_candidates  # noqa: E402
from wikivel_bot.core.evidence import Evidence  # noqa: E402
from wikivel_bot.core.safety import SafetyRules  # noqa: E402
from wikivel_bot.labels import label_set_from_records  # noqa: E402

WORDS = ("red blue old new small large river city park tree house bridge tower church market "
         "street garden station harbour mountain lake forest field road castle").split()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def build(items: int, rng: random.Random):
    records = [{"qid": "Q5", "label": "human"}, {"qid": "Q9174", "label": "religion"},
               {"qid": "Q41710", "label": "ethnic group"}]
    roots = [f"Q{900000 + i}" for i in range(12)]
    records += [{"qid": q, "label": f"root {i}"} for i, q in enumerate(roots)]
    classes = list(roots) + ["Q9174"]
    people: List[str] = []
    for n in range(items - len(records)):
        qid = f"Q{1000000 + n}"
        if n % 6 == 0:
            name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}son {n}"
            records.append({"qid": qid, "label": name, "p31": ["Q5"]})
            people.append(qid)
        elif n % 50 == 1:
            records.append({"qid": qid, "label": f"group {n}", "p31": ["Q41710"]})
        else:
            records.append({"qid": qid, "label": f"{rng.choice(WORDS)} thing {n}", "p279": [rng.choice(classes)]})
            if len(classes) < 4000:
                classes.append(qid)
    return label_set_from_records(records), people


def time_ranking(labels, files, rules: RankingRules) -> float:
    started = time.perf_counter()
    for scored, evidence in files:
        rank_candidates(scored, labels, rules=rules, evidence=evidence)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=18522)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--k", type=int, default=60)
    args = parser.parse_args()
    rng = random.Random(7)
    labels, people = build(args.items, rng)
    qids = list(labels.qids)
    files: List[Tuple[List[Tuple[str, float]], List[Evidence]]] = []
    for n in range(args.files):
        scored = [(q, rng.random()) for q in rng.sample(qids, args.k)]
        evidence = [Evidence("category", f"Category:Example {i}", q) for i, (q, _) in enumerate(scored[:2])]
        if n % 10 == 0:
            person = rng.choice(people)
            evidence.append(Evidence("category", f"Category:{labels.label_of(person)}", person))
        files.append((scored, evidence))
    plain = RankingRules(top_k=10)
    safe = RankingRules(top_k=10, safety=SafetyRules())
    time_ranking(labels, files[:50], safe)  # warm-up: caches of the label set
    runs = {"without": [], "with": []}
    for _ in range(3):
        runs["without"].append(time_ranking(labels, files, plain))
        runs["with"].append(time_ranking(labels, files, safe))
    best = {k: min(v) for k, v in runs.items()}
    per_file = {k: best[k] / args.files * 1e6 for k in best}
    print(f"CPU: {cpu_model()}; Python {platform.python_version()}; label set {len(labels):,} items "
          f"({len(people):,} people); {args.files:,} files x {args.k} scored items; best of 3 interleaved")
    print()
    print("| ranking | µs per file | files/s |")
    print("| --- | ---: | ---: |")
    for name in ("without", "with"):
        print(f"| {name} safety rules | {per_file[name]:,.0f} | {args.files / best[name]:,.0f} |")
    print(f"\nratio with/without: {best['with'] / best['without']:.2f} "
          f"(medians {statistics.median(runs['with']):.3f} s / {statistics.median(runs['without']):.3f} s)")


if __name__ == "__main__":
    main()
