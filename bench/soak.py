"""Soak test: replay uploads into a running daemon and watch lag, throughput and memory.

    .venv/bin/python bench/soak.py [--uploads 10000] [--rate 10] [--sample-s 10] [--evidence on|off|both]

A local test wiki (tests/testwiki) runs in this process; the daemon (`wikivel-bot run
--dry-run`, tiny open_clip model with random weights on CPU, starter label set, SQLite
queue) runs as a subprocess exactly as an operator would start it. Uploads are added to the
wiki at ``--rate`` per second (Commons averages about 0.3/s). Every ``--sample-s`` seconds
the script records the daemon's resident memory (VmRSS), files linked so far and the
backlog (uploaded but not yet linked). Printed at the end as a Markdown table plus a
summary: throughput, lag, and resident memory at 25/50/75/100 % of the files processed —
memory must not grow with the number of files.

Every upload carries what Commons uploads carry (docs/evidence.md): categories linked to items
(the sitelink on the topic, a category item with P301, an unlinked one named by P373), an
unlinked category shared by the 20 uploads of one "batch" (Commons' long tail, each asked once
by P373 search) and, on every third, a description link, so the daemon's link stage resolves
evidence as it would on Commons (``evidence.enabled``, the default). ``--evidence both`` runs
the soak twice on fresh wikis and queues — evidence off, then on — and prints the ratio of
their rates (the daemon must keep its rate within 10 % with evidence on).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run from the repository root, not bench/: bench/queue.py would shadow the stdlib `queue`.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import Dict, List  # noqa: E402

from sqlalchemy import func, select  # noqa: E402

from tests.linker_support import tiny_model_file  # noqa: E402
from tests.testwiki import TestWiki  # noqa: E402
from tests.testwiki.control import default_wikitext  # noqa: E402
from tests.testwiki.pwb import write_config  # noqa: E402
from wikivel_bot.queue import migrate  # noqa: E402
from wikivel_bot.queue.engine import create_engine_for  # noqa: E402
from wikivel_bot.queue.tables import files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COLOURS = ["#c0392b", "#27ae60", "#2980b9", "#f1c40f", "#8e44ad", "#e67e22", "#1abc9c", "#7f8c8d"]
# Categories of the test wiki's fixtures linked to items (tests/testwiki/fixture_evidence.py):
# a sitelink on the topic, a category item with P301, an unlinked category named by P373.
LINKED = ["Eiffel Tower", "Paris", "Rijksmuseum", "Westerkerk (Amsterdam)", "House cat", "Dog"]
LINKS = ["[[w:en:Eiffel Tower]]", "{{w|Paris}}", "[[d:Q243]]"]


def soak_wikitext(name: str, i: int) -> str:
    """The description page of upload ``i``: the default page with a description link (every
    third), two linked categories and the batch's unlinked one."""
    text = default_wikitext(name, "Alice Uploader", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if i % 3 == 0:
        text = text.replace("|description={{en|1=", f"|description={{{{en|1={LINKS[i % len(LINKS)]} ", 1)
    cats = [LINKED[i % len(LINKED)], LINKED[(i + 1) % len(LINKED)], f"Soak street {i // 20}"]
    return text + "".join(f"[[Category:{c}]]\n" for c in cats)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def linked_count(engine) -> int:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).where(files.c.state.in_(["linked", "unavailable", "ineligible"]))).scalar())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=10.0, help="uploads per second")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--drain-timeout-s", type=float, default=600.0)
    parser.add_argument("--evidence", choices=("on", "off", "both"), default="on",
                        help="evidence.enabled for the daemon; both: off, then on, and the ratio of the rates")
    args = parser.parse_args()
    runs = {"off": [False], "on": [True], "both": [False, True]}[args.evidence]
    rates = {}
    for evidence in runs:
        samples = soak(args, evidence)
        rates[evidence] = report(args, samples, evidence)
    if len(rates) == 2:
        print(f"\nrate with evidence / without: {rates[True]:.2f} / {rates[False]:.2f} files/s "
              f"= {rates[True] / rates[False]:.3f}")


def soak(args: argparse.Namespace, evidence: bool) -> List[Dict[str, float]]:
    """One soak run (the module docstring) with ``evidence.enabled = evidence``; its samples."""
    work = Path(tempfile.mkdtemp(prefix="wikivel-soak-"))
    url = f"sqlite:///{work / 'queue.sqlite'}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    samples: List[Dict[str, float]] = []
    with TestWiki.start() as wiki:
        fixture_files = len({e.logpage for e in wiki.store.upload_events() if e.logpage})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKIVEL_", "PYWIKIBOT_"))}
        env.update({
            "PYWIKIBOT_DIR": str(write_config(work / "pywikibot", wiki)),
            "PYTHONPATH": str(ROOT),
            "WIKIVEL_DB_URL": url,
            "WIKIVEL_LINKER_MODEL": str(tiny_model_file()),
            "WIKIVEL_LINKER_PRETRAINED": "",
            "WIKIVEL_LINKER_WEIGHTS": "random",
            "WIKIVEL_LINKER_DEVICE": "cpu",
            "WIKIVEL_LINKER_THREADS": "1",
            "WIKIVEL_LINKER_CACHE_DIR": str(work / "cache"),
            "WIKIVEL_POLL_INTERVAL_S": "2",
            "WIKIVEL_DAEMON_LINK_INTERVAL_S": "1",
            "WIKIVEL_SITE_OPERATOR_CONTACT": "User:Soak",
            "WIKIVEL_EVIDENCE_ENABLED": "true" if evidence else "false",
        })
        log = (work / "daemon.log").open("w")
        daemon = subprocess.Popen([sys.executable, "-m", "wikivel_bot", "run", "--dry-run"], env=env,
                                  cwd=work, stdout=log, stderr=subprocess.STDOUT)
        uploaded = {"n": 0}

        def replay() -> None:
            start = time.monotonic()
            for i in range(args.uploads):
                delay = start + i / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                name = f"Soak {i:06d}.png"
                wiki.add_upload(name, width=400 + i % 7 * 20, height=300 + i % 5 * 20,
                                color=COLOURS[i % len(COLOURS)], wikitext=soak_wikitext(name, i))
                uploaded["n"] = i + 1

        while linked_count(engine) < fixture_files - 12:  # wait until the daemon is up and linking
            if daemon.poll() is not None:
                raise SystemExit(f"daemon exited: see {work / 'daemon.log'}")
            time.sleep(1)
        base = linked_count(engine)
        wiki.recorder.clear()  # from here on, the evidence look-ups are the replayed files'
        replayer = threading.Thread(target=replay, daemon=True)
        t0 = time.monotonic()
        replayer.start()
        deadline = None
        while True:
            time.sleep(args.sample_s)
            done = linked_count(engine) - base
            samples.append({"t": time.monotonic() - t0, "uploaded": uploaded["n"], "processed": done,
                            "backlog": uploaded["n"] - done, "rss_mb": rss_mb(daemon.pid)})
            s = samples[-1]
            print(f"t={s['t']:6.0f}s uploaded={s['uploaded']:6d} processed={s['processed']:6d} "
                  f"backlog={s['backlog']:5d} rss={s['rss_mb']:.0f} MB", flush=True)
            if uploaded["n"] >= args.uploads and deadline is None:
                deadline = time.monotonic() + args.drain_timeout_s
            if done >= args.uploads or (deadline is not None and time.monotonic() > deadline):
                break
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)
        samples[-1]["evidence_requests"] = len(evidence_requests(wiki))
    return samples


def evidence_requests(wiki: TestWiki) -> list:
    """The API requests only the evidence resolver sends in a dry run: category pages' items
    (pageprops), Wikidata entities and statement searches (nothing else reads items here)."""
    return [r for r in wiki.recorder.api_requests()
            if r.params.get("ppprop") == "wikibase_item" or r.params.get("action") == "wbgetentities"
            or r.params.get("list") == "search"]


def report(args: argparse.Namespace, samples: List[Dict[str, float]], evidence: bool) -> float:
    """Print one run's summary; its rate (files processed per second)."""
    last = samples[-1]
    print(f"\n# bench/soak.py --uploads {args.uploads} --rate {args.rate}, evidence {'on' if evidence else 'off'}, "
          f"on {platform.node()} ({os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}); "
          "tiny model, random weights, CPU, SQLite")
    print(f"processed {last['processed']:.0f}/{args.uploads} in {last['t']:.0f} s "
          f"= {last['processed'] / last['t']:.1f} files/s (offered {args.rate}/s)")
    print(f"evidence requests: {last['evidence_requests']:.0f} = "
          f"{100 * last['evidence_requests'] / max(1, last['processed']):.1f} per 100 files")
    print(f"backlog: median {statistics.median(s['backlog'] for s in samples):.0f}, "
          f"max {max(s['backlog'] for s in samples):.0f} files "
          f"(= {max(s['backlog'] for s in samples) / args.rate:.0f} s of uploads)")
    print("| processed | resident memory (MB) |\n| --- | --- |")
    for share in (0.25, 0.5, 0.75, 1.0):
        target = share * last["processed"]
        sample = next(s for s in samples if s["processed"] >= target)
        print(f"| {sample['processed']:.0f} ({share:.0%}) | {sample['rss_mb']:.0f} |")
    return last["processed"] / last["t"]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
