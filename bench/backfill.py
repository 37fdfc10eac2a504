"""Backfill throughput: Ray Data pipeline versus the daemon's link path, plus per-stage costs.

    PYTHONPATH=$PWD .venv/bin/python bench/backfill.py [--files 2000] [--model tiny|ViT-B-32]

A local test wiki (tests/testwiki) in this process serves ``--files`` synthetic 640x480
JPEG uploads (thumbnails at 330 px). Then, in one run on the same machine:

1. per-stage costs, each stage function called directly on a sample (no Ray): read/filter
   (API query, queue, claim, eligibility rules), thumbnail download, decode + resize/crop
   to the model's input, link (normalise + encode + search + rank), write (the queue
   transaction of a block; every other block written one transaction per file instead,
   for the ratio) — wall and CPU seconds per file, medians over batches;
2. the daemon's link path: queue the files (``uploads_of`` + ``enqueue``, what the poller
   does), then ``fetch_pending`` + ``link_pending`` rounds until done, one process;
3. the backfill: ``run_backfill`` on a local Ray with 2 CPUs over the title list.

Both paths use the same linker (random weights: the numbers are about speed only), the
same label set (the starter set), fresh SQLite queues, and the robot-policy download limits
(2 connections, 25 Mbit/s). Prints Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run from the repository root, not bench/: bench/queue.py would shadow the stdlib `queue`.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any, Dict, List  # noqa: E402

os.environ.setdefault("PYWIKIBOT_DIR", tempfile.mkdtemp(prefix="bench-pwb-"))
os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")

from tests.linker_support import tiny_model_file  # noqa: E402
from tests.testwiki import TestWiki  # noqa: E402

CONTACT = "https://commons.example/wiki/User:Benchmark"


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def cpu_flags() -> List[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni")
            return [f for f in line.split(":", 1)[1].split() if f in wanted]
    return []


def jpeg(i: int) -> bytes:
    """A distinct 640x480 JPEG: a colour field with a few bands (sha1 differs per file)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (640, 480), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
    draw = ImageDraw.Draw(image)
    for band in range(6):
        y = (i * 7 + band * 80) % 480
        draw.rectangle([0, y, 640, y + 20], fill=((band * 40 + i) % 256, 255 - band * 30, (i * 3) % 256))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


def settings_for(wiki: TestWiki, work: Path, name: str, model: str) -> Any:
    from wikivel_bot.config import LinkerSettings, Settings
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for

    url = f"sqlite:///{work / (name + '.sqlite')}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    engine.dispose()
    settings = Settings().replace("db", url=url)
    settings = settings.replace("site", api_url=wiki.api_url, operator_contact=CONTACT, languages=("en",))
    linker = LinkerSettings(model=model, pretrained="", weights="random", device="cpu", batch_size=32,
                            cache_dir=str(work / "cache"))
    return dataclasses.replace(settings, linker=linker)


def per_file(samples: List[float]) -> float:
    return statistics.median(samples) if samples else float("nan")


def stage_costs(settings: Any, titles: List[str], sample: int) -> Dict[str, Dict[str, float]]:
    """Each stage function on ``sample`` files, alone: wall and CPU seconds per file."""
    from wikivel_bot.backfill import stages
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.backfill.rows import PENDING, BackfillCounters, new_row
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.backfill.pipeline import ready_linker
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker.link import model_input_steps, model_side

    site = open_site(settings.site)
    fetcher = Fetcher(site, settings.fetch, settings.poll, tuple(settings.site.languages), None)
    store = open_store(settings)
    label_set = default_label_set("")
    ready = ready_linker(settings, label_set)  # as the backfill's driver and actors build it
    linker = ready.linker
    identity = (linker.description.name, linker.description.version, label_set.content_hash)
    client = ThumbnailClient.from_settings(settings.fetch, CONTACT)
    costs: Dict[str, Dict[str, List[float]]] = {k: {"wall": [], "cpu": []}
                                                 for k in ("read/filter", "download", "decode", "link", "write", "write per file")}
    steps = model_input_steps(linker)
    geometry, finish = (steps.geometry, steps.finish) if steps else (None, None)
    counters = BackfillCounters()

    def timed(name: str, n: int, call: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()
        costs[name]["wall"].append((time.perf_counter() - wall) / max(1, n))
        costs[name]["cpu"].append((time.process_time() - cpu) / max(1, n))
        return out

    for start in range(0, sample, 50):
        rows = [new_row(t) for t in titles[start:start + 50]]
        rows = timed("read/filter", len(rows), lambda: stages.resolve(
            rows, fetcher=fetcher, store=store, worker="bench-stages", identity=identity))
        rows = [r for r in rows if r["outcome"] == PENDING]
        for b in range(0, len(rows), 8):
            chunk = rows[b:b + 8]
            timed("download", len(chunk), lambda: stages.download(chunk, client.get))
            timed("decode", len(chunk), lambda: stages.decode(chunk, model_side(linker), geometry))
        for b in range(0, len(rows), 32):
            chunk = rows[b:b + 32]
            timed("link", len(chunk), lambda: stages.link(chunk, ready, finish))
        if start // 50 % 2 == 0:  # one transaction per block (what the pipeline does)
            timed("write", len(rows), lambda: stages.record(rows, store, counters))
        else:  # one per file, as before, for the ratio (alternate blocks: fresh files each)
            timed("write per file", len(rows), lambda: [stages.record([r], store, counters) for r in rows])
    client.close()
    store.close()
    return {k: {m: per_file(v) for m, v in d.items()} for k, d in costs.items()}


def daemon_run(settings: Any, titles: List[str]) -> Dict[str, float]:
    """The daemon's path: queue the files, then fetch+link rounds until nothing is left."""
    from wikivel_bot import pipeline
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.generators import uploads_of
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.backfill.pipeline import ready_linker
    from wikivel_bot.labels import default_label_set
    ready = ready_linker(settings, default_label_set(""))
    store = open_store(settings)
    site = open_site(settings.site)
    started = time.perf_counter()
    for start in range(0, len(titles), 500):
        store.enqueue(list(uploads_of(site, titles[start:start + 500])))
    linked = 0
    with ThumbnailClient.from_settings(settings.fetch, CONTACT) as client:
        fetcher = Fetcher.from_settings(site, settings, client)
        while True:
            fetched = pipeline.fetch_pending(store, fetcher, 50, "bench-daemon")
            done = pipeline.link_pending(store, client, ready.link,
                                         settings.linker.batch_size, "bench-daemon")
            linked += done.linked
            if fetched.claimed == 0 and done.claimed == 0:
                break
    seconds = time.perf_counter() - started
    store.close()
    return {"seconds": seconds, "linked": linked, "rate": linked / seconds}


def backfill_run(settings: Any, title_file: Path) -> Dict[str, Any]:
    import ray

    from wikivel_bot.backfill.pipeline import run_backfill
    from wikivel_bot.backfill.sources import Sources

    stamps: List[float] = []
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    ray_up = time.perf_counter() - started
    result = run_backfill(settings, Sources(titles_files=(str(title_file),)), progress=False,
                          on_rows=lambda rows: stamps.extend(time.perf_counter() for r in rows if r["outcome"] == "linked"))
    seconds = time.perf_counter() - started
    ray.shutdown()
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
    return {"seconds": seconds, "ray_start": ray_up, "linked": result.counters.linked,
            "rate": result.counters.linked / seconds, "steady": steady, "media": result.media,
            "first": stamps[0] - started if stamps else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--sample", type=int, default=200, help="files for the per-stage costs")
    parser.add_argument("--model", default="tiny", help="tiny (test config) or an open_clip model name")
    parser.add_argument("--stages-only", action="store_true", help="only the per-stage costs (e.g. for ViT-B-32)")
    args = parser.parse_args()
    model = str(tiny_model_file()) if args.model == "tiny" else args.model
    work = Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    with TestWiki.start() as wiki:
        made = time.perf_counter()
        titles = []
        for i in range(args.files):
            titles.append(wiki.add_upload(f"Backfill bench {i:05d}.jpg", jpeg(i), width=640, height=480).title)
        print(f"# {args.files} uploads added in {time.perf_counter() - made:.1f} s", file=sys.stderr)
        title_file = work / "titles.txt"
        title_file.write_text("\n".join(titles) + "\n")
        costs = stage_costs(settings_for(wiki, work, "stages", model), titles[:args.sample], args.sample)
        print(f"# stage costs: {costs}", file=sys.stderr)
        if args.stages_only:
            print(f"CPU: {cpu_model()} ({os.cpu_count()} cores; flags: {' '.join(cpu_flags()) or 'none'}); "
                  f"model {args.model}, random weights, CPU; {args.sample} files")
            for name, cost in costs.items():
                print(f"| {name} | {cost['wall'] * 1000:.2f} | {cost['cpu'] * 1000:.2f} |")
            return
        daemon = daemon_run(settings_for(wiki, work, "daemon", model), titles)
        print(f"# daemon: {daemon}", file=sys.stderr)
        backfill = backfill_run(settings_for(wiki, work, "backfill", model), title_file)
        print(f"# backfill: {backfill}", file=sys.stderr)
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores; flags: {' '.join(cpu_flags()) or 'none of avx2/avx512/amx'}); "
          f"Python {platform.python_version()}; model {args.model} with random weights on CPU; SQLite; "
          f"{args.files} synthetic 640x480 JPEGs, 330 px thumbnails from the local test wiki")
    print()
    print("| path | files linked | wall s | files/s |")
    print("| --- | --- | --- | --- |")
    print(f"| daemon link path (enqueue + fetch_pending + link_pending, one process) | {daemon['linked']} | "
          f"{daemon['seconds']:.1f} | {daemon['rate']:.1f} |")
    print(f"| backfill, local Ray 2 CPUs (incl. {backfill['ray_start']:.1f} s Ray start, first file at "
          f"{backfill['first']:.1f} s) | {backfill['linked']} | {backfill['seconds']:.1f} | {backfill['rate']:.1f} |")
    print(f"| backfill, steady state (first to last linked file) | | | {backfill['steady']:.1f} |")
    print()
    print(f"Ratio backfill / daemon (end to end): {backfill['rate'] / daemon['rate']:.2f}; "
          f"steady state / daemon: {backfill['steady'] / daemon['rate']:.2f}")
    print()
    print("| stage (alone, no Ray) | wall ms/file | CPU ms/file |")
    print("| --- | --- | --- |")
    for name, cost in costs.items():
        print(f"| {name} | {cost['wall'] * 1000:.2f} | {cost['cpu'] * 1000:.2f} |")
    m = backfill["media"]
    print()
    print(f"Backfill media: {m.get('downloads')} downloads, {m.get('bytes', 0) / 1e6:.1f} MB, at most "
          f"{m.get('max_in_flight')} in flight, {m.get('pauses')} pause(s).")


if __name__ == "__main__":
    main()
