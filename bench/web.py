"""Web review latency: ``GET /api/queue`` and ``POST /api/decisions`` under 20 reviewers.

    .venv/bin/python bench/web.py [--candidates 1000000] [--per-file 5] [--reviewers 20]
                                  [--rounds 50] [--backends sqlite,postgresql]

For each backend: a scratch queue is filled with ``--candidates`` proposed pairs
(``--per-file`` per file, items drawn from 2,000 QIDs), the real app (``create_app``) is
served by waitress (``web.threads`` = 8) in a separate process, and ``--reviewers`` client
threads, each with its own logged-in session, start together (a barrier) and each do
``--rounds`` of: ``GET /api/queue?after=<position>&limit=24`` (one page of 24 files with
their pairs, what the grid asks for), then ``POST /api/decisions`` on the first pair of the
first file (approve / reject / skip in turn), moving on from that file. Latency is measured
at the client, per request. Reviewers start at different points of the queue, as people
working through it do, so no 409s are expected (any non-200 is counted and printed).

Besides latency each row gives the CPU time per request (GET and POST together) of the
server process and of the PostgreSQL backends serving the scratch database, read from
/proc, and the load average at its end: on a shared machine latency includes waiting for a
CPU, CPU time per request far less so. The clients run on the same machine and use CPU too.
The server's pool holds ``--threads`` connections, as ``wikivel-bot web`` does.

Sessions are signed with the server's secret, as after an OAuth login (the login itself is
not timed). The item look-up (labels in the reviewer's language from Wikidata) is off: it is
a cached remote call, not a queue cost, and this machine has no network.

Server URLs come from WIKIVEL_TEST_POSTGRES_URL (default: the local service); each run
works in a scratch database it creates and drops (``bench/scratch_db.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import secrets  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from datetime import datetime, timedelta  # noqa: E402
from typing import Dict, List, Tuple  # noqa: E402

import requests  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from bench.scratch_db import Scratch  # noqa: E402
from wikivel_bot.queue import migrate  # noqa: E402
from wikivel_bot.queue.engine import create_engine_for  # noqa: E402
from wikivel_bot.queue.tables import candidates, files  # noqa: E402

T0 = datetime(2026, 1, 1)
CHUNK = 5000
SECRET = secrets.token_hex(32)
ACTIONS = ("approve", "reject", "skip")


# -- the queue -------------------------------------------------------------------------


def fill(url: str, n_candidates: int, per_file: int) -> Tuple[int, float]:
    """Linked files with proposed pairs, inserted in bulk; returns (files, seconds)."""
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    rng = random.Random(7)
    n_files = n_candidates // per_file
    start = time.perf_counter()
    now = T0
    for first in range(1, n_files + 1, CHUNK):
        ids = range(first, min(first + CHUNK, n_files + 1))
        file_rows = [{
            "id": i, "page_id": 1_000_000 + i, "title": f"File:Bench {i}.jpg", "uploaded_at": T0 + timedelta(seconds=i),
            "uploader": "Bench", "log_id": i, "mime": "image/jpeg", "state": "linked", "attempts": 0,
            "media": {"thumb_url": f"https://upload.wikimedia.org/thumb/{i}/330px-x.jpg",
                      "description": f"Benchmark file {i}", "categories": [f"Bench category {i % 97}"],
                      "depicts": [], "revid": i, "protected": False, "bots_allowed": True},
            "discovered_at": now, "updated_at": now,
        } for i in ids]
        cand_rows = []
        for i in ids:
            for rank, q in enumerate(rng.sample(range(1, 2001), per_file), start=1):
                cand_rows.append({
                    "file_id": i, "qid": f"Q{q}", "score": round(0.95 - rank * 0.1, 3), "rank": rank,
                    "linker": "zero-shot", "linker_version": "bench", "labelset_hash": "h" * 16,
                    "evidence": {"label": f"item {q}", "description": f"description of item {q}", "notes": []},
                    "state": "proposed", "prominent": 0, "attempts": 0, "created_at": now, "updated_at": now,
                })
        with engine.begin() as conn:
            conn.execute(insert(files), file_rows)
            conn.execute(insert(candidates), cand_rows)
    # Planner statistics, as autovacuum (PostgreSQL) or a periodic ANALYZE would leave them
    # on a queue this size: without them PostgreSQL guesses a few rows per table.
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    return n_files, time.perf_counter() - start


# -- the server (a separate process, as in production) -----------------------------------


def serve(url: str, port_file: str, secret: str, threads: int) -> None:
    from wikivel_bot.config import Settings, WebSettings
    from wikivel_bot.queue.store import Store
    from wikivel_bot.web.app import create_app
    from wikivel_bot.web.secrets_file import WebSecrets
    from wikivel_bot.web.serve import make_server

    settings = Settings(web=WebSettings(decisions_per_minute=10**6, threads=threads))
    app = create_app(settings, Store(create_engine_for(url, pool_size=threads)), secrets=WebSecrets(session_secret=secret), items=None)
    server = make_server(app, "127.0.0.1", 0, threads)
    Path(port_file).write_text(str(server.effective_port))  # type: ignore[attr-defined]
    server.run()  # type: ignore[attr-defined]


def start_server(url: str, workdir: Path, threads: int) -> Tuple[subprocess.Popen, str]:
    port_file = workdir / f"port-{uuid.uuid4().hex[:6]}"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", url, "--port-file", str(port_file),
                             "--secret", SECRET, "--threads", str(threads)],
                            env={**os.environ, "PYTHONPATH": sys.path[0]})
    deadline = time.monotonic() + 120
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the bench server did not start")
        time.sleep(0.1)
    base = f"http://127.0.0.1:{port_file.read_text()}"
    return proc, base


# -- the reviewers ---------------------------------------------------------------------


def session_cookie(name: str, csrf: str) -> str:
    """A session as the app signs it after an OAuth login of ``name``."""
    from flask import Flask
    from flask.sessions import SecureCookieSessionInterface

    app = Flask(__name__)
    app.secret_key = SECRET
    signer = SecureCookieSessionInterface().get_signing_serializer(app)
    assert signer is not None
    return signer.dumps({"user": {"name": name, "id": "1", "groups": ["autoconfirmed"], "blocked": False},
                         "csrf": csrf})


def reviewer(base: str, index: int, start_after: int, rounds: int, think: float, barrier: threading.Barrier,
             out: Dict[str, List[float]], failures: List[str]) -> None:
    http = requests.Session()
    csrf = secrets.token_urlsafe(16)
    http.cookies.set("wikivel_session", session_cookie(f"Bench reviewer {index}", csrf), domain="127.0.0.1")
    http.headers["X-CSRF-Token"] = csrf
    http.get(base + "/healthz", timeout=60)  # connection warm-up, not timed (and cheap: no counts)
    after = start_after
    gets: List[float] = []
    posts: List[float] = []
    barrier.wait()
    # Staggered, so reviewers with think time do not act in lockstep.
    time.sleep(think * index / 20)
    for n in range(rounds):
        if think:
            time.sleep(think)
        t0 = time.perf_counter()
        page = http.get(base + "/api/queue", params={"after": after, "limit": 24}, timeout=60)
        gets.append(time.perf_counter() - t0)
        if page.status_code != 200:
            failures.append(f"GET {page.status_code}")
            continue
        first = page.json()["files"][0]
        pair = {"file": first["file"], "item": first["candidates"][0]["item"], "action": ACTIONS[n % 3]}
        t0 = time.perf_counter()
        answer = http.post(base + "/api/decisions", json=pair, timeout=60)
        posts.append(time.perf_counter() - t0)
        if answer.status_code != 200:
            failures.append(f"POST {answer.status_code}")
        after = first["file_id"]
    out.setdefault("get", []).extend(gets)
    out.setdefault("post", []).extend(posts)


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def one_backend(backend: str, args: argparse.Namespace, workdir: Path) -> List[Dict[str, object]]:
    scratch = Scratch(backend, workdir, prefix="webbench")
    proc = None
    try:
        n_files, fill_s = fill(scratch.url, args.candidates, args.per_file)
        proc, base = start_server(scratch.url, workdir, args.threads)
        rows = []
        # A single reviewer, back to back: what one request costs without queueing.
        runs = [(1, 0.0)] if args.solo else []
        runs += [(args.reviewers, float(t)) for t in args.think.split(",")]
        for n, (reviewers, think) in enumerate(runs):
            # Each run starts further into the queue: its files are still undecided.
            processes = Processes(proc.pid, scratch.name)
            rows.append(load(base, args, n_files, think, offset=n * args.rounds * 2, reviewers=reviewers))
            rows[-1].update(processes.used(int(rows[-1]["requests"])))  # type: ignore[call-overload]
            rows[-1].update(backend=backend, files=n_files, fill_s=fill_s)
        return rows
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        scratch.drop()


class Processes:
    """CPU time the server and its database use during a run, from /proc (Linux).

    Latency on a loaded machine includes waiting for a CPU; CPU time per request is the
    work itself, which other processes disturb far less. The database's share is its
    backends serving the scratch database (PostgreSQL names the database in each backend's
    process title; SQLite runs inside the server process), autovacuum left out.
    """

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, server_pid: int, database: str) -> None:
        self.server_pid, self.database = server_pid, database
        self.start = self._sample()

    def _cpu(self, pid: int) -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / self.TICK  # utime + stime

    def _sample(self) -> Dict[str, Dict[int, float]]:
        backends = {}
        if self.database:
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    title = (entry / "cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                # Client backends only: autovacuum tidies up after the bulk fill, not a request.
                if title.startswith("postgres:") and f" {self.database} " in title and "autovacuum" not in title:
                    backends[int(entry.name)] = self._cpu(int(entry.name))
        return {"app": {self.server_pid: self._cpu(self.server_pid)}, "db": backends}

    def used(self, requests: int) -> Dict[str, float]:
        """CPU ms per request of the server process and of the database since the start."""
        end = self._sample()
        out = {}
        for part in ("app", "db"):
            spent = sum(t - self.start[part].get(pid, 0.0) for pid, t in end[part].items())
            out[f"{part}_cpu_ms"] = spent * 1000 / max(requests, 1)
        return out


def load(base: str, args: argparse.Namespace, n_files: int, think: float, offset: int, reviewers: int
         ) -> Dict[str, object]:
    """One run of the reviewers against the server; latencies in ms."""
    out: Dict[str, List[float]] = {}
    failures: List[str] = []
    barrier = threading.Barrier(reviewers)
    spacing = n_files // reviewers
    workers = [threading.Thread(target=reviewer, args=(base, i, offset + i * spacing, args.rounds, think, barrier,
                                                       out, failures))
               for i in range(reviewers)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - start
    row: Dict[str, object] = {"think": think, "reviewers": reviewers, "wall_s": wall,
                              "failures": len(failures), "failure_kinds": sorted(set(failures))}
    for kind in ("get", "post"):
        values = out.get(kind, [])
        row[kind] = {"n": len(values), "p50": statistics.median(values) * 1000,
                     "p95": percentile(values, 95) * 1000, "p99": percentile(values, 99) * 1000,
                     "max": max(values) * 1000}
    requests_done = len(out.get("get", [])) + len(out.get("post", []))
    row["requests"] = requests_done
    row["req_per_s"] = requests_done / wall
    row["load"] = os.getloadavg()[0]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=1_000_000)
    parser.add_argument("--per-file", type=int, default=5)
    parser.add_argument("--reviewers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--think", default="1,0",
                        help="Seconds each reviewer waits before each GET+POST round; a list runs each "
                             "(0 = back-to-back requests: the server's saturation point).")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--solo", action=argparse.BooleanOptionalAction, default=True,
                        help="First a single reviewer back to back (the cost of one request, no queueing).")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port-file", help=argparse.SUPPRESS)
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port_file, args.secret, args.threads)
        return
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"# {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    print(f"# {args.candidates:,} candidates ({args.per_file}/file), {args.reviewers} reviewers x "
          f"{args.rounds} rounds, waitress threads {args.threads}")
    print("| backend | reviewers | think s | request | n | p50 ms | p95 ms | p99 ms | max ms | req/s "
          "| app CPU ms/req | db CPU ms/req | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="wikivel-web-bench-") as tmp:
        for backend in args.backends.split(","):
            for row in one_backend(backend.strip(), args, Path(tmp)):
                for kind, label in (("get", "GET /api/queue (24 files)"), ("post", "POST /api/decisions")):
                    s = row[kind]
                    assert isinstance(s, dict)
                    print(f"| {backend} | {row['reviewers']} | {row['think']:g} | {label} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} "
                          f"| {s['p99']:.1f} | {s['max']:.1f} | {row['req_per_s']:.0f} | {row['app_cpu_ms']:.1f} "
                          f"| {'in app' if backend == 'sqlite' else format(row['db_cpu_ms'], '.1f')} | {row['load']:.1f} |")
                print(f"# {backend}: {row['files']:,} files filled in {row['fill_s']:.0f} s; "
                      f"non-200: {row['failures']} {row['failure_kinds']}; load {os.getloadavg()[0]:.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
