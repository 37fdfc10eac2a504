"""Label-set build throughput and memory on synthetic dumps shaped like the real ones.

    .venv/bin/python bench/labels.py [--entities 200000] [--files 200000] [--repeat 3]
        [--workers 1,2] [--formats plain,gz,bz2] [--dir /tmp/wikivel-bench] [--big-set 2300000]

Synthetic data (generated once into --dir, reused while the parameters are the same):

* a Wikidata dump of --entities items: sizes lognormal around a few KB (mean ~5 KB,
  long tail to ~100 KB) from labels, descriptions and aliases in 5-150 languages, 5-60 claims
  with qualifiers and references, and sitelinks; 3% classes (P279 between them), the rest
  instances (P31), 25% of them scholarly articles as in the real dump;
* a MediaInfo dump of --files files, 30% with 1-4 P180 statements (Zipf over a fixed pool
  of 20,000 items, so the kept data stays the same when --entities grows), a few deprecated;
* each compressed as gzip and as multi-stream bzip2 (compressed in parallel to save time;
  readers handle both like the single-stream dumps).

Measured, medians of --repeat runs, each build in a fresh process:

* parse: the Wikidata block parser alone over the plain dump in memory, one core (CPU s);
* build: ``build_from_dumps`` end to end (read both dumps, spill, select, assemble, write),
  wall time and CPU time (all processes), Wikidata entities/s of the Wikidata pass in total
  and per worker, Wikidata entities per CPU-second of the whole build (robust when other
  work shares the machine), peak RSS (VmHWM) of the main process (the kept data) and of the
  largest worker; peak RSS is also measured on a dump of half the entities, to show memory
  follows the kept data, not the input;
* hierarchy lookups: ``is_ancestor`` scalar calls/s and ``hops_many`` pairs/s;
* load: opening a synthetic --big-set item label set (the paper's unfiltered size is 2.3 M)
  and the first lookups.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds queue.py, which would shadow the standard library's queue module (used by
# concurrent.futures): put the repository root first instead of this folder.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import bz2  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from typing import Any, Dict, List  # noqa: E402

import numpy as np  # noqa: E402
import orjson  # noqa: E402

LANGS = ["en", "de", "fr", "es", "it", "nl", "ru", "ja", "zh", "pt", "pl", "sv", "uk", "ar", "fa", "ca", "cs",
         "he", "hu", "ko", "fi", "id", "ro", "tr", "vi", "da", "no", "el", "bg", "sr", "sk", "eo", "lt", "et",
         "sl", "hr", "eu", "gl", "hy", "ka", "ms", "be", "kk", "uz", "az", "ta", "hi", "bn", "th", "mul"]
LANGS += [f"x{i}" for i in range(100)]
WORDS = ("river church painting village mountain station bridge school museum street house castle tower "
         "lake island park garden forest building railway temple monument hospital market harbour "
         "cathedral palace farm mill fountain cemetery square theatre library university stadium").split()
PROPS = [f"P{p}" for p in (17, 131, 625, 569, 570, 106, 27, 21, 19, 20, 735, 734, 1476, 577, 50, 1433,
                           356, 698, 932, 214, 227, 244, 213, 268, 646, 2671, 373, 910, 1566, 1082)]
SCHOLARLY = 13442814
POOL = 20000  # depicted items are drawn from the first POOL QIDs


def _statement(rng: np.random.Generator, entity: str, prop: str, value: Any, n: int) -> Dict[str, Any]:
    snak = {"snaktype": "value", "property": prop, "hash": f"{rng.integers(1 << 62):040x}", "datavalue": value,
            "datatype": "wikibase-item"}
    st: Dict[str, Any] = {"mainsnak": snak, "type": "statement", "id": f"{entity}${n:08x}-1111-2222-3333-444444444444",
                          "rank": "normal"}
    if rng.random() < 0.6:
        st["references"] = [{"hash": f"{rng.integers(1 << 62):040x}", "snaks": {"P248": [
            {"snaktype": "value", "property": "P248", "datavalue": _item(int(rng.integers(1, 1 << 26))),
             "datatype": "wikibase-item"}], "P813": [{"snaktype": "value", "property": "P813", "datavalue": {
                 "value": {"time": "+2023-11-07T00:00:00Z", "timezone": 0, "before": 0, "after": 0, "precision": 11,
                           "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}, "type": "time"},
                 "datatype": "time"}]}, "snaks-order": ["P248", "P813"]}]
    if rng.random() < 0.3:
        st["qualifiers"] = {"P580": [{"snaktype": "value", "property": "P580", "hash": "0" * 40, "datavalue": {
            "value": {"time": "+1900-01-01T00:00:00Z", "timezone": 0, "before": 0, "after": 0, "precision": 9,
                      "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}, "type": "time"}, "datatype": "time"}]}
        st["qualifiers-order"] = ["P580"]
    return st


def _item(qid: int) -> Dict[str, Any]:
    return {"value": {"entity-type": "item", "numeric-id": qid, "id": f"Q{qid}"}, "type": "wikibase-entityid"}


def make_entity(rng: np.random.Generator, qid: int, n_entities: int) -> bytes:
    entity = f"Q{qid}"
    size = float(np.clip(rng.lognormal(-0.45, 0.9), 0.2, 25.0))
    n_langs = int(np.clip(8 * size, 3, len(LANGS)))
    langs = LANGS[:n_langs]
    words = rng.choice(WORDS, size=4 * n_langs + 8)
    labels = {lang: {"language": lang, "value": f"{words[i]} {qid}"} for i, lang in enumerate(langs)}
    descriptions = {lang: {"language": lang, "value": f"{words[i + 1]} in {words[i + 2]} {words[i + 3]}"}
                    for i, lang in enumerate(langs[: max(1, n_langs // 2)])}
    aliases = {lang: [{"language": lang, "value": f"{words[i]} {words[i + 4]}"}] for i, lang in enumerate(langs[:n_langs // 4])}
    claims: Dict[str, List[Any]] = {}
    n_classes = max(10, n_entities * 3 // 100)
    n = 0
    if qid <= n_classes:
        for parent in rng.integers(1, n_classes + 1, size=int(rng.integers(1, 3))):
            if parent != qid:
                n += 1
                claims.setdefault("P279", []).append(_statement(rng, entity, "P279", _item(int(parent)), n))
    else:
        target = SCHOLARLY if rng.random() < 0.25 else int(rng.integers(1, n_classes + 1))
        n += 1
        claims["P31"] = [_statement(rng, entity, "P31", _item(target), n)]
    if rng.random() < 0.3:
        n += 1
        claims["P18"] = [_statement(rng, entity, "P18", {"value": f"{words[0]} {qid}.jpg", "type": "string"}, n)]
    for prop in PROPS[: int(np.clip(6 * size, 3, len(PROPS)))]:
        n += 1
        claims[prop] = [_statement(rng, entity, prop, _item(int(rng.integers(1, 1 << 26))), n)]
    sitelinks = {f"{lang}wiki": {"site": f"{lang}wiki", "title": labels[lang]["value"], "badges": []}
                 for lang in langs[: n_langs // 3]}
    doc = {"type": "item", "id": entity, "labels": labels, "descriptions": descriptions, "aliases": aliases,
           "claims": claims, "sitelinks": sitelinks, "lastrevid": 2000000000 + qid}
    return orjson.dumps(doc)


def _wikidata_part(args: Any) -> bytes:
    start, stop, n_entities = args
    rng = np.random.default_rng(start)
    return b"".join(make_entity(rng, qid, n_entities) + b",\n" for qid in range(start, stop))


def _mediainfo_part(args: Any) -> bytes:
    start, stop = args
    rng = np.random.default_rng(10_000_000 + start)
    out = []
    for page in range(start, stop):
        statements: Any = []
        if rng.random() < 0.3:
            items = np.minimum(rng.zipf(1.3, size=int(rng.integers(1, 5))), POOL)
            statements = {"P180": [{"mainsnak": {"snaktype": "value", "property": "P180", "hash": "0" * 40,
                                                 "datavalue": _item(int(q))}, "type": "statement",
                                    "id": f"M{page}$x{k}", "rank": "deprecated" if rng.random() < 0.01 else "normal"}
                                   for k, q in enumerate(items)]}
        out.append(orjson.dumps({"type": "mediainfo", "id": f"M{page}", "labels": {"en": {
            "language": "en", "value": f"File {page}"}}, "descriptions": {}, "statements": statements,
            "lastrevid": page}) + b",\n")
    return b"".join(out)


def _compress(args: Any) -> bytes:
    kind, data = args
    return bz2.compress(data, 9) if kind == "bz2" else data


def generate(directory: Path, entities: int, files: int) -> Dict[str, Path]:
    """Write the synthetic dumps (plain, .gz, .bz2); skipped when already there."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"wikidata": directory / f"wikidata-{entities}.json", "mediainfo": directory / f"mediainfo-{files}.json"}
    if all(Path(f"{p}.bz2").exists() for p in paths.values()):
        return paths
    step = 5000
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        for key, parts in (("wikidata", [(s, min(s + step, entities + 1), entities) for s in range(1, entities + 1, step)]),
                           ("mediainfo", [(s, min(s + step, files + 1)) for s in range(1, files + 1, step)])):
            worker = _wikidata_part if key == "wikidata" else _mediainfo_part
            chunks = list(pool.map(worker, parts))
            # The last line has no comma; then the closing bracket.
            chunks[-1] = chunks[-1][:-2] + b"\n"
            data = b"[\n" + b"".join(chunks) + b"]\n"
            paths[key].write_bytes(data)
            with gzip.open(f"{paths[key]}.gz", "wb", compresslevel=6) as handle:
                handle.write(data)
            # Multi-stream bzip2 (like lbzip2/pbzip2 write): 16 MB streams compressed in parallel.
            pieces = [data[i : i + (16 << 20)] for i in range(0, len(data), 16 << 20)]
            Path(f"{paths[key]}.bz2").write_bytes(b"".join(pool.map(_compress, [("bz2", p) for p in pieces])))
            del data, chunks
    return paths


def _hwm_mb(pid: str = "self") -> float:
    # VmHWM: this process's peak resident memory. (getrusage's ru_maxrss would do, but Linux
    # carries the parent's peak over exec into it.)
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children() -> List[str]:
    pids: List[str] = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids += handle.read().split()
        except OSError:
            pass
    return pids


def child_build(wikidata: str, mediainfo: str, workers: int, out: str, decompressor: str) -> None:
    import threading

    from wikivel_bot.labels.build import build_from_dumps

    worker_peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        # Worker processes are spawned per dump pass; their VmHWM only grows, so the last
        # sample of each is its peak.
        while not done.wait(0.05):
            for pid in _children():
                worker_peak[0] = max(worker_peak[0], _hwm_mb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    cpu_before = os.times()
    result = build_from_dumps(Path(out), wikidata_dump=Path(wikidata), mediainfo_dump=Path(mediainfo),
                              min_freq=10, workers=workers, decompressor=decompressor, overwrite=True)
    wall = time.perf_counter() - started
    cpu = os.times()
    cpu_s = sum(getattr(cpu, f) - getattr(cpu_before, f) for f in ("user", "system", "children_user", "children_system"))
    done.set()
    sampler.join()
    wikidata_report = next(r for r in result.reports if r.kind == "wikidata")
    print(json.dumps({
        "wall_s": wall,
        "cpu_s": cpu_s,
        "wikidata_s": wikidata_report.seconds,
        "entities": wikidata_report.entities,
        "backend": wikidata_report.backend,
        "items": len(result.label_set),
        "rss_main_mb": _hwm_mb(),
        "rss_worker_mb": worker_peak[0],
    }))


def run_child(*args: Any) -> Dict[str, Any]:
    output = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def bench_parse(path: Path, repeat: int) -> Dict[str, float]:
    from wikivel_bot.labels.dump_reader import iter_blocks
    from wikivel_bot.labels.blocks import WikidataOptions, parse_wikidata_block
    from wikivel_bot.labels.lists import default_p31_blocklist

    blocks = list(iter_blocks(path))
    options = WikidataOptions(p31_blocklist=default_p31_blocklist())
    rates = []
    entities = 0
    for _ in range(repeat):
        started = time.process_time()
        entities = sum(parse_wikidata_block(b.first_line, b.data, options).stats.entities for b in blocks)
        rates.append(entities / (time.process_time() - started))
    size = sum(len(b.data) for b in blocks)
    return {"entities_per_cpu_s": statistics.median(rates), "entities": entities, "mean_kb": size / entities / 1024}


def bench_lookups(out: Path) -> Dict[str, float]:
    from wikivel_bot.labels import load_label_set

    labels = load_label_set(out)
    qids = list(labels.qids)
    rng = np.random.default_rng(0)
    a = [qids[i] for i in rng.integers(0, len(qids), 200_000)]
    d = [qids[i] for i in rng.integers(0, len(qids), 200_000)]
    labels.is_ancestor(a[0], d[0])  # build the index once
    started = time.perf_counter()
    for x, y in zip(a, d):
        labels.is_ancestor(x, y)
    scalar = len(a) / (time.perf_counter() - started)
    nodes_a = rng.integers(0, labels.hierarchy.n_nodes, 5_000_000)
    nodes_d = rng.integers(0, labels.hierarchy.n_nodes, 5_000_000)
    labels.hierarchy.hops_many(nodes_a[:10], nodes_d[:10])
    started = time.perf_counter()
    labels.hierarchy.hops_many(nodes_a, nodes_d)
    vector = nodes_a.size / (time.perf_counter() - started)
    return {"is_ancestor_per_s": scalar, "hops_many_pairs_per_s": vector}


def bench_big_set(directory: Path, n_items: int) -> Dict[str, float]:
    """Assemble a synthetic n-item set (random 3-level hierarchy), write it, time the load."""
    import pyarrow as pa

    from wikivel_bot.labels.assemble import Collected, assemble
    from wikivel_bot.labels.artifact import write_artifact
    from wikivel_bot.labels.entities import TEXT_SCHEMA

    out = directory / f"big-{n_items}"
    if not (out / "manifest.json").exists():
        rng = np.random.default_rng(1)
        qids = np.arange(1, n_items + 1, dtype=np.int64)
        n_classes = n_items // 50
        parents = rng.integers(1, n_classes + 1, size=n_items)
        keep = parents != qids
        edges = np.stack([qids[keep], parents[keep]], axis=1)
        labels = [f"item {q}" for q in qids.tolist()]
        texts = pa.table({"qid": qids, "label": labels, "label_lang": ["en"] * n_items,
                          "description": [f"description of item {q}" for q in qids.tolist()],
                          "description_lang": ["en"] * n_items, "image": [""] * n_items,
                          "aliases": pa.array([[]] * n_items, pa.list_(pa.string())),
                          "blocked_by": np.zeros(n_items, dtype=np.int64),
                          "texts": pa.array([[]] * n_items, TEXT_SCHEMA.field("texts").type)}, schema=TEXT_SCHEMA)
        collected = Collected(texts=texts, edges=edges, inputs=qids, direct=rng.integers(1, 50, n_items))
        write_artifact(assemble(collected, min_freq=0, languages=("en",)).data, out, overwrite=True)
    script = (
        "import time, json; t=time.perf_counter();"
        "from wikivel_bot.labels import load_label_set; s=load_label_set(%r); t1=time.perf_counter();"
        "s.index_of('Q12345'); s.ancestors('Q12345'); t2=time.perf_counter(); s.labels; t3=time.perf_counter();"
        "print(json.dumps({'items': len(s), 'open_s': t1-t, 'first_lookup_s': t2-t1, 'labels_list_s': t3-t2}))"
    ) % str(out)
    result = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return json.loads(result)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_build(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--formats", default="plain,gz,bz2")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/wikivel-bench"))
    parser.add_argument("--big-set", type=int, default=2_300_000)
    args = parser.parse_args()

    started = time.perf_counter()
    paths = generate(args.dir, args.entities, args.files)
    half = generate(args.dir, args.entities // 2, args.files)
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; data ready in {time.perf_counter() - started:.0f} s")
    sizes = {k: {s: os.path.getsize(f"{p}{s}") / 1e6 for s in ("", ".gz", ".bz2")} for k, p in paths.items()}
    print(f"# sizes (MB): {json.dumps(sizes)}")

    parse = bench_parse(paths["wikidata"], args.repeat)
    print(f"parse only, 1 core: {parse['entities_per_cpu_s']:,.0f} entities/CPU-s "
          f"(mean entity {parse['mean_kb']:.1f} KB, {parse['entities']:,} entities)")
    suffix = {"plain": "", "gz": ".gz", "bz2": ".bz2"}
    print("| input | workers | decompressor | build wall s | build CPU s | Wikidata pass s | entities/s | per worker "
          "| entities/CPU-s | peak RSS main MB | peak RSS worker MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    out = args.dir / "set"
    for fmt in args.formats.split(","):
        for workers in [int(w) for w in args.workers.split(",")]:
            runs = [run_child(f"{paths['wikidata']}{suffix[fmt]}", f"{paths['mediainfo']}{suffix[fmt]}", workers, out,
                              "auto") for _ in range(args.repeat)]
            wall = statistics.median(r["wall_s"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            wd = statistics.median(r["wikidata_s"] for r in runs)
            rate = runs[0]["entities"] / wd
            print(f"| {fmt} | {workers} | {runs[0]['backend']} | {wall:.1f} | {cpu:.1f} | {wd:.1f} | {rate:,.0f} | "
                  f"{rate / workers:,.0f} | {runs[0]['entities'] / cpu:,.0f} | "
                  f"{statistics.median(r['rss_main_mb'] for r in runs):.0f} | "
                  f"{statistics.median(r['rss_worker_mb'] for r in runs):.0f} |", flush=True)
    small = run_child(f"{half['wikidata']}.gz", f"{half['mediainfo']}.gz", 2, args.dir / "set-half", "auto")
    large = run_child(f"{paths['wikidata']}.gz", f"{paths['mediainfo']}.gz", 2, args.dir / "set-full", "auto")
    print(f"memory vs input (gz, 2 workers): {args.entities // 2:,} entities -> main {small['rss_main_mb']:.0f} MB, "
          f"worker {small['rss_worker_mb']:.0f} MB ({small['items']} items kept); {args.entities:,} entities -> "
          f"main {large['rss_main_mb']:.0f} MB, worker {large['rss_worker_mb']:.0f} MB ({large['items']} items kept)")
    lookups = bench_lookups(out)
    print(f"lookups on the built set: is_ancestor {lookups['is_ancestor_per_s']:,.0f}/s (scalar), "
          f"hops_many {lookups['hops_many_pairs_per_s']:,.0f} pairs/s")
    if args.big_set:
        big = bench_big_set(args.dir, args.big_set)
        print(f"load a {big['items']:,}-item set: open {big['open_s']:.2f} s, first lookup "
              f"{big['first_lookup_s']:.2f} s, labels list {big['labels_list_s']:.2f} s")


if __name__ == "__main__":
    main()
