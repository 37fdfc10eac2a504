"""Start-up of ``wikivel-bot suggest`` for one image with a cached label index ("warm").

    .venv/bin/python bench/startup.py [--runs 5] [--model ViT-B-32] [--precision auto]

Runs ``wikivel-bot suggest photo.jpg --weights random`` once per path to fill its caches (label index,
warm-start weights, exported image tower), then ``--runs`` more times, and prints the median
wall seconds and the median CPU seconds (user + system, all threads) of the process, beside
the import floors (``python -c "import torch"``: no start-up that runs torch can go below it;
``import torch, open_clip``: the floor of the ordinary path), the same suggest with the
exported tower blocked (the previous start-up path: open_clip model from the warm-start
weights) and with both caches blocked (the path before that). The load average is printed
before and after (other processes on a shared machine slow every row). Random weights: the
model's cost is that of trained weights.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path[0] = str(Path(__file__).resolve().parents[1])

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: List[str], env: Dict[str, str], cwd: str) -> Tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _load(values: Tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    import numpy as np
    from PIL import Image

    from wikivel_bot.linker.backbone.precision import cpu_model

    work = Path(tempfile.mkdtemp(prefix="wikivel-startup-"))
    buffer = io.BytesIO()
    Image.fromarray((np.random.default_rng(0).random((248, 330, 3)) * 255).astype("uint8")).save(buffer, "JPEG")
    (work / "photo.jpg").write_bytes(buffer.getvalue())
    python = sys.executable
    suggest = [python, "-m", "wikivel_bot", "suggest", "photo.jpg", "--weights", "random", "--model", args.model,
               "--precision", args.precision]
    # One cache directory per path; an older path has a plain file where a newer cache's
    # directory would be, so nothing can be read or written there.
    paths = {"tower": (), "no tower": ("towers",), "neither": ("towers", "backbones")}
    envs = {}
    for name, blocked in paths.items():
        cache = work / f"cache-{name.replace(' ', '-')}"
        cache.mkdir()
        for directory in blocked:
            (cache / directory).write_text("blocked by bench/startup.py")
        envs[name] = dict(os.environ, PYTHONPATH=str(ROOT), WIKIVEL_LINKER_CACHE_DIR=str(cache))
        timed(suggest, envs[name], str(work))  # fills the label index and the caches not blocked
    if not list((work / "cache-tower" / "towers").glob("*.pt")):
        raise SystemExit(f"no exported image tower was written for {args.model}: see the warning of suggest")
    commands = {
        "python -c 'import torch' (floor)": ([python, "-c", "import torch"], envs["tower"]),
        "python -c 'import torch, open_clip' (floor of the open_clip path)":
            ([python, "-c", "import torch, open_clip"], envs["tower"]),
        f"suggest, warm ({args.precision}; exported image tower)": (suggest, envs["tower"]),
        "suggest, no exported tower (previous start-up path: open_clip, cached weights)": (suggest, envs["no tower"]),
        "suggest, no tower and no weights cache (the path before that)": (suggest, envs["neither"]),
    }
    before = os.getloadavg()
    # Interleaved rounds: a change of load during the run falls on every row alike.
    samples: Dict[str, List[Tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (cmd, env) in commands.items():
            samples[name].append(timed(cmd, env, str(work)))
    rows = [(name, (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)))
            for name, runs in samples.items()]
    after = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs ({cpu_model() or 'unknown CPU'}); median of {args.runs} interleaved runs; "
          f"load average before {_load(before)}, after {_load(after)}")
    print(f"command: .venv/bin/python bench/startup.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| what | wall s | CPU s |")
    print("| --- | ---: | ---: |")
    for name, (wall, cpu) in rows:
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
