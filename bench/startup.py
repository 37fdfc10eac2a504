"""Start-up of ``wikivel-bot suggest`` for one image with a cached label index ("warm").

    .venv/bin/python bench/startup.py [--runs 5] [--model ViT-B-32] [--precision auto]

Runs ``wikivel-bot suggest photo.jpg --weights random`` once to fill the caches (label index,
warm-start weights), then ``--runs`` more times, and prints the median wall seconds and
the median CPU seconds (user + system, all threads) of the process, beside the same for a
bare ``python -c "import torch, open_clip"`` (the floor no start-up can go below) and with
the warm-start cache switched off (``--no-cache`` = the previous start-up path). Random
weights: the model's cost is that of trained weights.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
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


def median_of(cmd: List[str], env: Dict[str, str], cwd: str, runs: int) -> Tuple[float, float]:
    samples = [timed(cmd, env, cwd) for _ in range(runs)]
    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    import numpy as np
    from PIL import Image

    work = Path(tempfile.mkdtemp(prefix="wikivel-startup-"))
    buffer = io.BytesIO()
    Image.fromarray((np.random.default_rng(0).random((248, 330, 3)) * 255).astype("uint8")).save(buffer, "JPEG")
    (work / "photo.jpg").write_bytes(buffer.getvalue())
    env = dict(os.environ, PYTHONPATH=str(ROOT), WIKIVEL_LINKER_CACHE_DIR=str(work / "cache"))
    python = sys.executable
    suggest = [python, "-m", "wikivel_bot", "suggest", "photo.jpg", "--weights", "random", "--model", args.model,
               "--precision", args.precision]
    timed(suggest, env, str(work))  # fills the label index and the warm-start weights
    rows = []
    rows.append(("python -c 'import torch, open_clip' (floor)",
                 median_of([python, "-c", "import torch, open_clip"], env, str(work), args.runs)))
    rows.append((f"suggest, warm ({args.precision})", median_of(suggest, env, str(work), args.runs)))
    # Without the weights cache (the previous start-up path: build the model, cast it): a
    # plain file where the cache directory would be, so nothing can be read or written there.
    shutil.rmtree(work / "cache" / "backbones")
    (work / "cache" / "backbones").write_text("blocked by bench/startup.py")
    rows.append(("suggest, no weights cache (previous start-up path)", median_of(suggest, env, str(work), args.runs)))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {load}; median of {args.runs} runs")
    print(f"command: .venv/bin/python bench/startup.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| what | wall s | CPU s |")
    print("| --- | ---: | ---: |")
    for name, (wall, cpu) in rows:
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
