"""The resident suggestion service (``GET /api/suggest``): latency, batching, memory.

    .venv/bin/python bench/web_suggest.py [--model ViT-B-32] [--precision auto] [--files 24]
                                          [--rounds 3] [--callers 1,4,16] [--window-ms 20]

(``bench/web.py`` measures the review queue's API; this one the linker behind the page.)

A local test wiki (tests/testwiki) runs in this process and serves the files, their pages
(categories, links: the evidence) and thumbnails over real HTTP; the service is built as
``wikivel-bot web`` builds it (``cli.resident.build_suggester``: the one factory, the starter
label set, evidence on, ``--model`` with **random weights**, so the suggestions are
meaningless; only time and memory are measured) and served by waitress in this process;
callers are client threads over HTTP.

* first seen: each of ``--files`` files asked once, one at a time (the service reads the
  file, its thumbnail and its evidence from the test wiki, and links it); median and p90;
* cached: the same files again (the file's revision is still read on every request);
* throughput: with the cache off, ``--callers`` concurrent callers each asking ``--rounds``
  times for every file (distinct files at a time), with the batching window and with
  batching off (``max_batch`` 1: one model call per request, the "one at a time" service);
* memory: the process's resident set (VmRSS) and its peak (VmHWM) after building and at the end.

Prints Markdown for docs/benchmarks.md with the command, the CPU and its flags.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import Any, Dict, List, Tuple  # noqa: E402

import requests  # noqa: E402

CONTACT = "https://commons.example/wiki/User:Wikivel_operator"


def cpu_line() -> str:
    """The CPU's model name and the flags the precision check reads (/proc/cpuinfo)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    has = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    cores = sum(1 for line in lines if line.startswith("processor"))
    return f"{model}, {cores} CPUs; flags: {', '.join(has) if has else 'none of avx2/avx512/amx'}"


def memory() -> Dict[str, float]:
    """VmRSS and VmHWM of this process in MiB."""
    found: Dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def serve(app: Any) -> Tuple[str, Any]:
    from wikivel_bot.web.serve import make_server

    server: Any = make_server(app, "127.0.0.1", 0, 24)
    threading.Thread(target=server.run, daemon=True).start()
    return f"http://127.0.0.1:{server.effective_port}", server


def ask(session: requests.Session, base: str, title: str, strict: bool = True) -> float:
    """Seconds for one answer; -1 for a file the wiki cannot give (when not ``strict``)."""
    started = time.perf_counter()
    answer = session.get(base + "/api/suggest", params={"file": title}, timeout=600)
    took = time.perf_counter() - started
    if answer.status_code != 200:
        if not strict and answer.status_code == 404:
            return -1.0  # the test wiki's deliberately broken files
        raise SystemExit(f"{title}: {answer.status_code} {answer.text[:200]}")
    return took


def throughput(base: str, titles: List[str], callers: int, rounds: int) -> float:
    """Requests per second of ``callers`` threads, each asking for every file ``rounds`` times
    (caller i starts at file i, so the files asked at once differ)."""
    barrier = threading.Barrier(callers + 1)
    done: List[int] = []

    def run(i: int) -> None:
        session = requests.Session()
        barrier.wait()
        for r in range(rounds):
            for n in range(len(titles)):
                ask(session, base, titles[(i + n + r) % len(titles)])
        done.append(rounds * len(titles))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(callers)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--callers", default="1,4,16")
    parser.add_argument("--window-ms", type=float, default=20.0)
    args = parser.parse_args()

    from tests.testwiki import TestWiki
    from tests.testwiki.fixture_files import FILES
    from tests.testwiki.pwb import write_config
    from wikivel_bot.cli.context import CliContext
    from wikivel_bot.cli.resident import build_suggester
    from wikivel_bot.config import LinkerSettings, Settings, SiteSettings, WebSettings
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store
    from wikivel_bot.web.app import create_app
    from wikivel_bot.web.secrets_file import WebSecrets

    tmp = Path(tempfile.mkdtemp(prefix="wikivel-web-suggest-"))
    names = ["File:" + spec["name"].replace("_", " ") for spec in FILES]
    candidates = [t for t in names if t.lower().endswith((".jpg", ".jpeg", ".png"))]
    before = memory()
    loads = [os.getloadavg()[0]]
    with TestWiki.start() as wiki:
        # pywikibot reads its configuration when first imported: in the service's first read.
        os.environ["PYWIKIBOT_DIR"] = str(write_config(tmp / "pywikibot", wiki))
        engine = create_engine_for(f"sqlite:///{tmp / 'queue.db'}")
        migrate.upgrade(engine)
        store = Store(engine)

        def build(batch: int, window_ms: float, cache: int) -> Tuple[Any, str, Any]:
            settings = Settings(
                site=SiteSettings(api_url=wiki.api_url, operator_contact=CONTACT, languages=("en",)),
                linker=LinkerSettings(model=args.model, pretrained="", weights="random", device="cpu",
                                      precision=args.precision, batch_size=batch, cache_dir=str(tmp / "cache")),
                web=WebSettings(suggest=True, suggest_window_ms=window_ms, suggest_cache_files=cache,
                                suggest_per_minute=100000, suggest_queue=256))
            suggester = build_suggester(CliContext(_settings=settings), store, announce=False)
            assert suggester is not None
            app = create_app(settings, store, secrets=WebSecrets(session_secret="s" * 40), items=None,
                             suggester=suggester)
            base, server = serve(app)
            return suggester, base, server

        started = time.perf_counter()
        suggester, base, server = build(16, args.window_ms, 4096)
        build_s = time.perf_counter() - started
        built = memory()
        session = requests.Session()
        ask(session, base, candidates[0], strict=False)  # warm: the first batch allocates buffers
        first, titles = [], []
        for title in candidates[1:]:
            took = ask(session, base, title, strict=False)
            if took >= 0:
                first.append(took)
                titles.append(title)
            if len(titles) == args.files:
                break
        cached = [ask(session, base, t) for t in titles]
        version = suggester.version
        precision = getattr(suggester.linker.ready.linker.description, "precision", "")
        steps = {k: v / max(1, len(titles) + 1) for k, v in suggester.seconds.items()}
        server.close()
        suggester.close()
        end = memory()  # one service built and used: what the web process holds
        loads.append(os.getloadavg()[0])
        del suggester, server
        gc.collect()
        rows = []
        # The files' evidence is in the queue's cache now (as for a busy tool): both services
        # below find it there, so they differ only in how requests meet the model.
        for label, batch, window in (("one at a time", 1, 0.0), ("batched", 16, args.window_ms)):
            suggester, base, server = build(batch, window, 0)
            ask(requests.Session(), base, titles[0])
            for callers in [int(c) for c in args.callers.split(",")]:
                loads.append(os.getloadavg()[0])
                batches0, files0 = suggester.batches, suggester.linked_files
                seconds0 = dict(suggester.seconds)
                rate = throughput(base, titles, callers, args.rounds)
                calls = max(1, suggester.batches - batches0)
                per_batch = (suggester.linked_files - files0) / calls
                link_s = (suggester.seconds["link"] - seconds0["link"]) / calls
                rows.append((label, callers, rate, per_batch, link_s))
            server.close()
            suggester.close()
            del suggester, server
            gc.collect()
    command = "bench/web_suggest.py " + " ".join(sys.argv[1:])
    print(f"Command: `.venv/bin/python {command.strip()}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"CPU: {cpu_line()}; Python {platform.python_version()}")
    print(f"Linker: {version} (precision {precision}; RANDOM WEIGHTS: suggestions meaningless, time and memory only)")
    print(f"Built in {build_s:.1f} s (label index included; reused when cached)")
    print(f"Load average (1 min) at the start and at each step: {', '.join(f'{x:.1f}' for x in loads)} "
          f"(on {os.cpu_count()} CPUs: other work shares this machine)")
    print()
    print("| measure | median | p90 | n |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| first seen (read, thumbnail, evidence, link) | {statistics.median(first):.3f} s | "
          f"{percentile(first, 0.9):.3f} s | {len(first)} |")
    print(f"| cached (revision read, no model) | {statistics.median(cached):.3f} s | "
          f"{percentile(cached, 0.9):.3f} s | {len(cached)} |")
    print()
    print("First seen, seconds per request by step (mean): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    print()
    print("| service | concurrent callers | requests/s | files per model call | seconds per model call |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, callers, rate, per_batch, link_s in rows:
        print(f"| {label} | {callers} | {rate:.1f} | {per_batch:.1f} | {link_s:.3f} |")
    print()
    print(f"Memory (MiB) of the one service: before it {before['VmRSS']:.0f}; built {built['VmRSS']:.0f}; "
          f"after its {2 * len(titles) + 1} answers {end['VmRSS']:.0f} resident, peak {end['VmHWM']:.0f} (this "
          f"process also runs the test wiki and the callers)")


if __name__ == "__main__":
    main()
