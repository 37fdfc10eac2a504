"""The backfill on Ray Data: the stages of ``stages`` wired into one streaming pipeline.

::

    titles ─read_text / listed─> resolve (1 task at a time: API query, queue, claim, eligibility)
           ─> download (tasks, one DownloadBudget for the cluster)
           ─> decode + resize/crop to the model's input (CPU tasks)
           ─> link: normalise, encode, search, rank (actor pool: one GPU per actor, or CPU)
           ─> driver: queue writes (one transaction per block), Parquet

Ray Data streams blocks between the stages, so downloads, decoding and the model overlap.
The driver consumes the last stage and writes each block through the store in one transaction,
which keeps the queue's single point of truth where the run is steered from. With no address
Ray starts on this machine; with one, the run joins that cluster (every node needs the
package, and the queue must be a database every node can reach: PostgreSQL or MariaDB).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from wikivel_bot.backfill import raylogs, stages
from wikivel_bot.backfill.imagedump import dump_rows, layout_of
from wikivel_bot.backfill.rows import COLUMNS, BackfillCounters, new_row
from wikivel_bot.backfill.sizing import size_actors
from wikivel_bot.backfill.sources import Sources, depicted_page_ids, has_title
from wikivel_bot.config import Settings
from wikivel_bot.errors import ConfigError, LinkerError, UsageError

log = logging.getLogger(__name__)
IO_CPU = 0.1
DECODE_CPU = 0.25
# Variables a worker needs to find pywikibot's config and this package.
PASSED_ENV = ("PYWIKIBOT_DIR", "PYWIKIBOT_NO_USER_CONFIG", "PYTHONPATH")


@dataclass
class BackfillResult:
    """What a run did: the counters, the download budget's report, wall time, shards."""

    counters: BackfillCounters
    media: Dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    shards: List[str] = field(default_factory=list)
    actors: int = 0
    gpus: int = 0
    # One line per source that listed nothing (an empty category, a range without uploads).
    notes: List[str] = field(default_factory=list)

    def lines(self) -> List[str]:
        out = self.notes + self.counters.lines()
        m = self.media
        if m:
            out.append(f"media: {m.get('downloads', 0)} downloads, {m.get('bytes', 0) / 1e6:.2f} MB, "
                       f"at most {m.get('max_in_flight', 0)} at once, paused {m.get('pauses', 0)} time(s) "
                       f"({m.get('paused_s', 0.0):.1f} s) on the server's request")
        rate = self.counters.read / self.seconds if self.seconds else 0.0
        out.append(f"{self.seconds:.1f} s, {rate:.1f} files/s; {self.actors} linker actor(s)"
                   f"{f' on {self.gpus} GPU(s)' if self.gpus else ' on CPU'}")
        if self.shards:
            out.append(f"{len(self.shards)} Parquet shard(s) written")
        return out


def worker_name(settings: Settings) -> str:
    """The claim holder's name of a run: ``backfill:<run_name>`` (the column holds 64)."""
    return f"backfill:{settings.backfill.run_name}"


def open_store(settings: Settings) -> Any:
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store

    store = Store(create_engine_for(settings.db.url), claim_lease_s=settings.db.claim_lease_s)
    return store


def run_backfill(
    settings: Settings, sources: Sources, *, address: str = "", num_cpus: Optional[int] = None,
    progress: bool = True, on_rows: Optional[Callable[[List[Dict[str, Any]]], None]] = None,
    ray_logs: bool = False,
) -> BackfillResult:
    """Backfill ``sources`` into the queue of ``settings.db`` with the configured linker.

    :param address: a Ray cluster to join ("" = start Ray on this machine).
    :param num_cpus: CPUs of a local Ray (default: all).
    :param progress: Ray Data's progress bars.
    :param on_rows: called with each batch of rows after it was written (tests, monitoring).
    :param ray_logs: let Ray's own log lines (workers' output, its C++ core's errors) reach
        the terminal; off, a failure still ends the run with one line (``raylogs.stage_failure``).
    :raises UsageError: no sources, a missing file, a category that does not exist.
    :raises WikivelError: the wiki, the database or the linker failed at start; a stage failed.
    """
    import ray

    sources.check()
    sources.check_contents()
    layouts = {path: layout_of(path) for path in sources.image_dumps}  # a wrong file fails here
    check_settings(settings)
    if num_cpus is not None and not address and settings.linker.device == "cpu":
        size_actors(num_cpus, 0, settings.backfill.actors)  # refused before the model loads
    started = time.monotonic()
    counters = BackfillCounters()
    result = BackfillResult(counters)
    # The wiki's listings first, before the model loads: a category that does not exist
    # fails at once, and a run with nothing to read says so and starts neither Ray nor a model.
    listed = _listed(settings, sources, result.notes)
    if not (listed or sources.titles_files or sources.image_dumps):
        result.seconds = time.monotonic() - started
        return result
    store = open_store(settings)
    owns_ray = False
    try:
        store.check_schema()
        worker = worker_name(settings)
        from wikivel_bot.queue.backfill import held_by

        # A run killed under this name left these claimed: take them back now, not in a lease.
        store.release_files(held_by(store, worker))
        identity, side, steps = _linker_identity(settings)
        depicted = depicted_page_ids(sources.mediainfo_dump) if sources.mediainfo_dump else set()
        owns_ray = _start_ray(address, num_cpus, ray_logs)
        from ray.data import DataContext

        DataContext.get_current().enable_progress_bars = progress
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        actors, actor_cpus = size_actors(float(resources.get("CPU", 1)), gpus, settings.backfill.actors)
        result.actors, result.gpus = actors, gpus
        toolforge = settings.backfill.toolforge
        # The budget only counts and waits: it holds no CPU the stages need (one CPU in all).
        budget = ray.remote(_budget_class()).options(max_concurrency=1000, num_cpus=0).remote(
            settings.backfill.toolforge_connections if toolforge else settings.backfill.max_connections,
            0.0 if toolforge else settings.backfill.max_mbps,
        )
        dataset = _titles(ray, sources, listed, layouts)
        if dataset is not None:
            dataset = _stages(dataset, settings, worker, identity, (side, steps), depicted, budget,
                              (actors, actor_cpus), gpus)
            shard_prefix = f"{settings.backfill.run_name}-{int(time.time())}"
            try:
                with raylogs.quiet_run(ray_logs):
                    # Blocks as they leave the model (batch_size=None): each is written at once.
                    for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                        rows = stages.record(batch.to_pylist(), store, counters)
                        if settings.backfill.parquet_dir:
                            shard = stages.write_shard(rows, settings.backfill.parquet_dir, shard_prefix)
                            if shard is not None:
                                result.shards.append(str(shard))
                        if on_rows is not None:
                            on_rows(rows)
            except ray.exceptions.RayError as exc:
                raise raylogs.stage_failure(exc, counters.read) from None
        result.media = ray.get(budget.report.remote())
    finally:
        result.seconds = time.monotonic() - started
        store.close()
        if owns_ray:
            ray.shutdown()
    return result


def check_settings(settings: Settings) -> None:
    """ConfigError naming the key for backfill settings that cannot work."""
    b = settings.backfill
    for key, value, low in (("max_connections", b.max_connections, 1), ("toolforge_connections", b.toolforge_connections, 1),
                            ("batch_size", b.batch_size, 1), ("actors", b.actors, 0)):
        if value < low:
            raise ConfigError(f"backfill.{key} must be at least {low}, not {value}")
    if b.batch_size > 50:
        raise ConfigError(f"backfill.batch_size must be at most 50 (files per API request), not {b.batch_size}")
    if b.max_mbps <= 0 and not b.toolforge:
        raise ConfigError(f"backfill.max_mbps must be above 0 outside Toolforge, not {b.max_mbps}")
    if not b.run_name.strip() or len(b.run_name) > 55:
        raise ConfigError(f"backfill.run_name must be 1 to 55 characters, not {b.run_name!r}")


def _stages(dataset: Any, settings: Settings, worker: str, identity: Any, model_input: Any,
            depicted: Any, budget: Any, actors: Tuple[int, float], gpus: int) -> Any:
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    connections = (settings.backfill.toolforge_connections if settings.backfill.toolforge
                   else settings.backfill.max_connections)
    # CPU shares: the I/O stages mostly wait, so they take little of a CPU and never starve
    # the model (whose actors hold a whole CPU, or a GPU); Ray places them by these numbers.
    dataset = dataset.map_batches(
        resolve_batch, batch_size=max(1, min(settings.backfill.batch_size, 50)), batch_format="pyarrow",
        fn_kwargs={"settings": settings, "worker": worker, "identity": identity, "depicted": depicted},
        compute=TaskPoolStrategy(size=1), num_cpus=IO_CPU,
    )
    # Later stages take each block as it comes (batch_size=None): a batch size there would
    # make Ray Data wait for that many rows, so one slow download would hold up the files
    # behind it. Blocks are one API batch (at most backfill.batch_size files) each, and
    # link_files batches for the model itself (linker.batch_size).
    dataset = dataset.map_batches(
        download_batch, batch_size=None, batch_format="pyarrow",
        fn_kwargs={"settings": settings, "budget": budget, "connections": connections,
                   "run": f"{worker}@{uuid.uuid4().hex}"},
        compute=TaskPoolStrategy(size=max(1, connections)), num_cpus=IO_CPU,
    )
    side, steps = model_input
    dataset = dataset.map_batches(decode_batch, batch_size=None, batch_format="pyarrow",
                                  fn_kwargs={"side": side, "geometry": steps.geometry if steps else None},
                                  num_cpus=DECODE_CPU)
    return dataset.map_batches(
        LinkStage, batch_size=None, batch_format="pyarrow",
        fn_constructor_kwargs={"settings": settings, "fingerprint": steps.fingerprint if steps else ""},
        compute=ActorPoolStrategy(size=actors[0]),
        num_gpus=1 if gpus else 0, num_cpus=actors[1],
    )


def _listed(settings: Settings, sources: Sources, notes: List[str]) -> List[str]:
    """The titles the wiki lists for ``sources`` (none without a category or time range)."""
    if not (sources.category or sources.since or sources.until):
        return []
    from wikivel_bot.commons.site import open_site

    return list(sources.listed(open_site(settings.site), notes))


def _titles(ray: Any, sources: Sources, listed: List[str], layouts: Dict[str, Any]) -> Any:
    """One dataset of ``{"text": title}`` rows from every source."""
    parts = []
    by_compression: Dict[str, List[str]] = {}
    for path in sources.titles_files:
        kind = "gzip" if str(path).endswith(".gz") else "bz2" if str(path).endswith(".bz2") else ""
        by_compression.setdefault(kind, []).append(os.path.abspath(path))
    for kind, paths in sorted(by_compression.items()):
        args = {"arrow_open_stream_args": {"compression": kind}} if kind else {}
        parts.append(ray.data.read_text(paths, num_cpus=IO_CPU, **args))
    if layouts:
        # One task per dump (a .gz cannot be split); it streams blocks of titles as it reads.
        parts.append(ray.data.from_items([{"path": os.path.abspath(p)} for p in layouts]).map_batches(
            read_image_dump, batch_size=1, fn_kwargs={"layouts": {os.path.abspath(p): v for p, v in layouts.items()}},
            num_cpus=DECODE_CPU))
    if listed:
        parts.append(ray.data.from_items([{"text": t} for t in listed]))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else parts[0].union(*parts[1:])


def _linker_identity(settings: Settings) -> Any:
    """(linker, version, label-set hash), the model's input side and its preprocessing steps
    (``link.model_input_steps``: the decode tasks run its geometry, the actors its finish);
    builds (or loads from the cache) the label index once here, so the actors only load it."""
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker.link import model_input_steps, model_side

    label_set = default_label_set(settings.linker.labels_dir)
    # The daemon's builder: the version in the identity names the whole set-up (item
    # images, cascade, verifier, ranking and safety rules), as on the daemon's rows.
    linker = ready_linker(settings, label_set).linker
    description = linker.description
    identity = (description.name, description.version, label_set.content_hash)
    return identity, model_side(linker), model_input_steps(linker)


def ready_linker(settings: Settings, label_set: Any) -> Any:
    """``build_ready_linker`` as the daemon calls it, for the driver and every actor; the site
    is opened (in that process) only if an item image is not in the cache yet, or at the
    first batch's evidence. Each actor keeps its evidence look-ups in memory (an actor may run
    on a node without the queue database)."""
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.commons.providers import item_image_source
    from wikivel_bot.linker import build_ready_linker

    return build_ready_linker(settings, label_set, item_images=item_image_source(settings),
                              evidence=evidence_source(settings))


def _start_ray(address: str, num_cpus: Optional[int], ray_logs: bool = False) -> bool:
    """Start (or join) Ray unless this process is connected already; True when we did.

    :param ray_logs: forward the workers' output and show Ray's error-level lines; without
        it the terminal shows the run's own lines only (a failure still ends it with one).
    """
    import ray

    if ray.is_initialized():
        return False
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    kwargs: Dict[str, Any] = {"include_dashboard": False, "runtime_env": {"env_vars": env},
                              **raylogs.init_options(ray_logs)}
    try:
        with raylogs.quiet_start(ray_logs):
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=num_cpus, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise UsageError(f"cannot start or join Ray{f' at {address}' if address else ''}: {exc}") from None
    return True


def _budget_class() -> Any:
    from wikivel_bot.backfill.limiter import DownloadBudget

    return DownloadBudget


def _to_table(rows: List[Dict[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS.items()])
    return pa.Table.from_pylist(rows, schema=schema)


# -- the stages as Ray runs them --------------------------------------------------------------


_RESOLVERS: Dict[str, Any] = {}


def resolve_batch(batch: Any, settings: Settings, worker: str, identity: Any, depicted: Any) -> Any:
    """read → filter (Ray task; one at a time, as API etiquette asks). The site, fetcher
    and store live as long as the worker process, which Ray reuses across batches."""
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site

    key = f"{settings.site!r}|{settings.db.url}"
    ports = _RESOLVERS.get(key)
    if ports is None:
        site = open_site(settings.site)
        fetcher = Fetcher(site, settings.fetch, settings.poll, tuple(settings.site.languages), None)
        ports = _RESOLVERS[key] = (fetcher, open_store(settings))
    column = "title" if "title" in batch.column_names else "text"
    # A title list's blank and # comment lines are no files: dropped here, never counted.
    rows = [new_row(str(t)) for t in batch.column(column).to_pylist() if has_title(str(t))]
    return _to_table(stages.resolve(rows, fetcher=ports[0], store=ports[1], worker=worker,
                                    identity=tuple(identity), depicted=depicted))


def read_image_dump(batch: Dict[str, Any], layouts: Dict[str, Any]) -> Iterator[Dict[str, List[str]]]:
    """The image table dump's rows (Ray task; a generator, so blocks stream out as read)."""
    for path in batch["path"]:
        yield from dump_rows(str(path), layouts[str(path)])


_CLIENTS: Dict[str, Callable[[str], bytes]] = {}


def download_batch(batch: Any, settings: Settings, budget: Any, connections: int, run: str) -> Any:
    """Thumbnails (Ray task): the daemon's ThumbnailClient, under the cluster's budget.

    :param run: names this run's budget; a worker process keeps one client per run.
    """
    from wikivel_bot.backfill.limiter import budget_sleep, budgeted_get
    from wikivel_bot.commons.thumbnails import ThumbnailClient

    key = run
    get = _CLIENTS.get(key)
    if get is None:
        client = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact,
                                               max_connections=connections, sleep=budget_sleep(budget))
        get = _CLIENTS[key] = budgeted_get(budget, client)
    # Threads up to the budget's slots: the budget, not the task count, bounds the downloads.
    return _to_table(stages.download(batch.to_pylist(), get, parallel=connections))


def decode_batch(batch: Any, side: Optional[int], geometry: Any) -> Any:
    """Decode, resize and crop to the model's input (Ray task, CPU)."""
    return _to_table(stages.decode(batch.to_pylist(), side, geometry))


class LinkStage:
    """normalise → encode → search → rank (actor pool; the model and label index load once
    per actor). The decode tasks resized and cropped with the driver's preprocessing; this
    actor finishes with its own, after checking the two are the same (``fingerprint``)."""

    def __init__(self, settings: Settings, fingerprint: str = "") -> None:
        from wikivel_bot.labels import default_label_set
        from wikivel_bot.linker.link import model_input_steps

        # Built as the driver built its own: the item images come from the same on-disk cache.
        self.ready = ready_linker(settings, default_label_set(settings.linker.labels_dir))
        self.linker = self.ready.linker
        steps = model_input_steps(self.linker)
        if (steps.fingerprint if steps else "") != fingerprint:
            # A node with another open_clip/torchvision would feed the model other pixels.
            raise LinkerError("the model's preprocessing on this node differs from the driver's "
                              "(another open_clip or torchvision version?)")
        self.finish = steps.finish if steps else None

    def __call__(self, batch: Any) -> Any:
        return _to_table(stages.link(batch.to_pylist(), self.ready, self.finish))
