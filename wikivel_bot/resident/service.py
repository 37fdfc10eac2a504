"""The resident suggestion service: one ready linker kept in memory, answering any file.

``suggest`` pays for a new process every time (torch's import, the model, the label index:
seconds); a reviewer on a file page waits for an answer in a fraction of a second. So the web
process keeps one ready linker (built by the one factory, ``linker.build_ready_linker``, and
rebuilt when a promotion changes the running model: the caller passes the daemon's
``FollowingLinker``) and answers through :meth:`ResidentSuggester.suggest`:

* **Batching.** One worker thread owns the linker and the wiki connection (pywikibot's site
  is not shared between threads). A request the cache or the queue answers is answered at
  once; one that needs the model waits at most ``window_s`` for others to join it, then the
  whole group is read from the wiki in one API request and linked as one batch: 16 reviewers
  at once cost one model call, not sixteen (whether that is faster depends on the hardware:
  docs/benchmarks.md).
* **Bounded.** At most ``max_waiting`` requests wait; one more gets :class:`Busy` with the
  seconds to wait (the API answers 503 with ``Retry-After``), never an unbounded backlog.
* **Cached** per (page id, file revision, linker version): a file seen at the same revision by
  the same set-up is answered without reading its image or running the model; an edit of the
  file or a promotion changes the key. The file's revision is read on every request (one
  light API request for the whole group), so an answer is never older than the file.
* **Queued files** (``queued``): a file the running linker already queued is answered by the
  caller from the queue, with the pairs' review state; the service only says so.

Each file's answer is :func:`wikivel_bot.resident.answer.file_entry`, the JSON of
``suggest --json``: the same candidates, scores, evidence and safety outcome.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from wikivel_bot.errors import WikivelError
from wikivel_bot.resident.answer import document, file_entry

log = logging.getLogger(__name__)


class Busy(Exception):
    """The waiting line is full: try again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the suggestion service is busy: try again in {retry_after} s")
        self.retry_after = retry_after


@dataclass(frozen=True)
class Answer:
    """One request's answer.

    :param doc: ``suggest --json``'s document for this one file (``files`` has its entry).
    :param status: 200; 400 a source that names no file; 404 a file that cannot be read;
        502 the wiki did not answer.
    :param cached: answered from the cache (no image read, no model run).
    :param queued: the running linker queued this file: the caller answers from the queue.
    :param page_id: the file's page id (0 when it could not be read).
    """

    doc: Dict[str, Any]
    status: int = 200
    cached: bool = False
    queued: bool = False
    page_id: int = 0
    version: str = ""

    @property
    def entry(self) -> Dict[str, Any]:
        files = self.doc.get("files") or [{}]
        return dict(files[0])


@dataclass
class _Request:
    source: str
    done: threading.Event = field(default_factory=threading.Event)
    answer: Optional[Answer] = None
    probed: bool = False  # checked against the queue and the cache already


class ResidentSuggester:
    """Suggestions for any file, from a linker kept in memory (see the module's docstring).

    :param linker: what links: an object with ``ready`` (a ``ReadyLinker``) and, to follow
        promotions, ``refresh()`` (``daemon.promotions.FollowingLinker``), asked before each batch.
    :param label_set: the label set the linker attached (for the answer's ``label_set``).
    :param read: source texts -> ``[(text, MediaFile or SourceFailed)]`` without image bytes
        (``commons.sources.read_named`` on the service's site).
    :param image: (text, MediaFile) -> thumbnail bytes or SourceFailed (``commons.sources.image_of``).
    :param safety: the answer's ``safety`` block (the CLI's ``safety_doc``, as ``suggest --json``).
    :param queued: page id -> the linker versions of its queued pairs (None: never asked).
    :param probe: source texts -> ``{text: (page id, revision)}`` in one light request
        (``resident.revisions.probe_revisions``): a file the cache holds at that revision, or
        the queue has, is answered without the full read. None: every file is read in full.
    :param enqueue: saves a linked outcome to the queue as the daemon would (its file and its
        candidates): :meth:`queue_file`, so a reviewer can decide on a file the bot had not
        queued yet. None: files are queued only by the daemon.
    :param window_s: how long a request waits for others to join its batch.
    :param max_waiting: requests that may wait; one more is refused with :class:`Busy`.
    :param max_batch: files linked in one model call.
    :param cache_size: answers kept (least recently used go first).
    """

    def __init__(self, linker: Any, label_set: Any, *, read: Callable[[List[str]], List[Tuple[str, Any]]],
                 image: Callable[[str, Any], Any], safety: Optional[Dict[str, Any]] = None,
                 queued: Optional[Callable[[int], Set[str]]] = None,
                 probe: Optional[Callable[[List[str]], Dict[str, Tuple[int, int]]]] = None,
                 enqueue: Optional[Callable[[Any], None]] = None, window_s: float = 0.02,
                 max_waiting: int = 64, max_batch: int = 16, cache_size: int = 2048) -> None:
        self.linker = linker
        self.label_set = label_set
        self._read, self._image, self._safety, self._queued, self._probe = read, image, safety, queued, probe
        self._enqueue = enqueue
        self.window_s, self.max_batch, self.cache_size = window_s, max(1, max_batch), cache_size
        self._waiting: "queue.Queue[Optional[_Request]]" = queue.Queue(maxsize=max(1, max_waiting))
        self._cache: "OrderedDict[Tuple[int, int, str], Tuple[Dict[str, Any], Any]]" = OrderedDict()
        # The linked outcomes last answered, by (page id, linker version): what queue_file saves.
        self._recent: "OrderedDict[Tuple[int, str], Any]" = OrderedDict()
        self._lock = threading.Lock()
        # Seconds per file of recent batches: what a refused caller is told to wait for.
        self._per_file_s = 0.1
        self.batches = 0  # batches linked (tests and the benchmark read how requests were grouped)
        self.linked_files = 0
        self.full_reads = 0  # sources read in full (file page, categories, references)
        # Seconds spent per step, summed (the benchmark's breakdown of a request's cost).
        self.seconds: Dict[str, float] = {"probe": 0.0, "read": 0.0, "image": 0.0, "link": 0.0}
        self._worker = threading.Thread(target=self._run, name="resident-suggester", daemon=True)
        self._worker.start()

    # -- callers' side -----------------------------------------------------------------------

    @property
    def version(self) -> str:
        """The running linker's version (its set-up hash included)."""
        return str(self.linker.ready.linker.description.version)

    def suggest(self, source: str, timeout_s: float = 120.0) -> Answer:
        """The answer for one file (a ``File:`` title, an M-id or a Commons URL).

        :raises Busy: the waiting line is full, or no answer came within ``timeout_s``.
        """
        request = _Request(source.strip())
        try:
            self._waiting.put_nowait(request)
        except queue.Full:
            raise Busy(self.retry_after()) from None
        if not request.done.wait(timeout_s) or request.answer is None:
            raise Busy(self.retry_after())
        return request.answer

    def queue_file(self, source: str) -> Answer:
        """Put the file's current suggestions into the review queue, as the daemon would have
        (the file, its candidates with the running linker's version, what was withheld), so a
        reviewer can decide on them; a file already queued by the running linker is left as it
        is. The answer is then the queued one (``queued``).

        :raises Busy: as :meth:`suggest`. :raises WikivelError: the queue refused the move
            (the daemon is working on the file now).
        """
        answer = self.suggest(source)
        if answer.status != 200 or answer.queued or self._enqueue is None:
            return answer
        with self._lock:
            outcome = self._recent.get((answer.page_id, answer.version))
        if outcome is None:  # pragma: no cover - answered just now, so remembered
            return _error(source, "the suggestion is gone from the service's memory: ask again", 409)
        self._enqueue(outcome)
        return Answer(answer.doc, queued=True, page_id=answer.page_id, version=answer.version)

    def retry_after(self) -> int:
        """Whole seconds until the line now waiting is likely served (at least 1)."""
        return max(1, math.ceil(self._waiting.qsize() * self._per_file_s))

    def close(self) -> None:
        """Stop the worker after the requests already waiting (each still gets its answer)."""
        self._waiting.put(None)
        self._worker.join(timeout=60)

    # -- the worker ----------------------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._waiting.get()
            if first is None:
                return
            batch, stop = self._take([first], wait=False)
            # What the queue or the cache knows is answered at once: only files to be linked
            # wait out the window for others to share their model call.
            batch = self._answer_known(batch)
            if not batch:
                continue
            if not stop:
                batch, stop = self._take(batch, wait=True)
            started = time.monotonic()
            try:
                self._serve(batch)
            except Exception as exc:  # noqa: BLE001 - every caller must get an answer
                log.exception("resident suggester: a batch failed")
                for request in batch:
                    if request.answer is None:
                        request.answer = _error(request.source, f"the suggestion failed ({type(exc).__name__})", 500)
            finally:
                for request in batch:
                    request.done.set()
            self._per_file_s = 0.5 * self._per_file_s + 0.5 * (time.monotonic() - started) / len(batch)

    def _take(self, batch: List[_Request], wait: bool) -> Tuple[List[_Request], bool]:
        """``batch`` with the requests waiting now (``wait``: and those that come within the
        window), up to ``max_batch``; and whether the service was told to stop."""
        deadline = time.monotonic() + (self.window_s if wait else 0.0)
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                nxt = self._waiting.get(timeout=left) if left > 0 else self._waiting.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                return batch, True
            batch.append(nxt)
        return batch, False

    def _current(self) -> Tuple[Any, str]:
        """The ready linker that answers now, and its version (a promotion is followed here)."""
        refresh = getattr(self.linker, "refresh", None)
        if refresh is not None:
            refresh()  # a promoted model answers from this batch on, as in the daemon
        ready = self.linker.ready
        return ready, str(ready.linker.description.version)

    def _answer_known(self, batch: List[_Request]) -> List[_Request]:
        """Answer the requests the queue or the cache knows (:meth:`_known`); the rest."""
        if self._probe is None:
            return batch
        answers: Dict[str, Answer] = {}
        try:
            ready, version = self._current()
            self._known(ready, version, list(dict.fromkeys(r.source for r in batch)), answers)
        except Exception:  # noqa: BLE001 - the full path answers them, with its own errors
            log.exception("resident suggester: the revision check failed")
            answers = {}
        rest = []
        for request in batch:
            request.probed = True
            if request.source in answers:
                request.answer = answers[request.source]
                request.done.set()
            else:
                rest.append(request)
        return rest

    def _serve(self, batch: List[_Request]) -> None:
        ready, version = self._current()
        answers: Dict[str, Answer] = {}
        # Requests that joined during the window have not been checked against the cache yet.
        self._known(ready, version, list(dict.fromkeys(r.source for r in batch if not r.probed)), answers)
        texts = [t for t in dict.fromkeys(r.source for r in batch) if t not in answers]
        try:
            self.full_reads += len(texts)
            with self._timed("read"):
                read = dict(self._read(texts)) if texts else {}
        except WikivelError as exc:
            for text in texts:
                answers[text] = _error(text, " ".join(str(exc).split()), 502)
            texts = []
        misses: List[Tuple[str, Any, bytes]] = []
        for text in texts:
            media = read.get(text)
            if media is None or not hasattr(media, "page_id"):
                reason = getattr(media, "reason", f"{text}: no answer from the wiki")
                answers[text] = _error(text, reason, 400 if getattr(media, "usage", False) else 404)
                continue
            if self._queued is not None and version in self._queued(media.page_id):
                # The queue is the truth for what the running linker queued (and its review state).
                answers[text] = Answer({"files": [{"title": media.title, "ok": True}]}, queued=True,
                                       page_id=media.page_id, version=version)
                continue
            key = (media.page_id, media.revid, version)
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    self._remember(hit[1], version)
            if hit is not None:
                answers[text] = self._answer(ready, [hit[0]], media.page_id, version, cached=True)
            else:
                with self._timed("image"):
                    data = self._image(text, media)
                if isinstance(data, (bytes, bytearray)):
                    misses.append((text, media, bytes(data)))
                else:
                    answers[text] = _error(text, getattr(data, "reason", str(data)), 404)
        if misses:
            unique: Dict[int, Tuple[Any, bytes]] = {}
            for _, media, data in misses:
                unique.setdefault(media.page_id, (media, data))
            try:
                with self._timed("link"):
                    outcomes = ready.link(list(unique.values()))
            except WikivelError as exc:  # the evidence could not be resolved: nothing linked
                for text, _, _ in misses:
                    answers[text] = _error(text, " ".join(str(exc).split()), 502)
            else:
                self.batches += 1
                self.linked_files += len(outcomes)
                by_page = {o.media.page_id: (file_entry(o), o) for o in outcomes}
                for text, media, _ in misses:
                    entry, outcome = by_page[media.page_id]
                    if entry.get("ok"):
                        with self._lock:
                            self._cache[(media.page_id, media.revid, version)] = (entry, outcome)
                            while len(self._cache) > self.cache_size:
                                self._cache.popitem(last=False)
                            self._remember(outcome, version)
                    answers[text] = self._answer(ready, [entry], media.page_id, version)
        for request in batch:
            request.answer = answers[request.source]

    def _known(self, ready: Any, version: str, texts: List[str], answers: Dict[str, Answer]) -> List[str]:
        """Answer the sources whose revision the probe read and the queue or the cache has;
        the others (returned) are read in full."""
        if self._probe is None or not texts:
            return texts
        try:
            with self._timed("probe"):
                probed = self._probe(texts)
        except WikivelError:
            return texts  # the full read says what is wrong
        rest = []
        for text in texts:
            if text not in probed:
                rest.append(text)
                continue
            page_id, revid = probed[text]
            if self._queued is not None and version in self._queued(page_id):
                answers[text] = Answer({"files": [{"title": text, "ok": True}]}, queued=True, page_id=page_id,
                                       version=version)
                continue
            with self._lock:
                hit = self._cache.get((page_id, revid, version))
                if hit is not None:
                    self._cache.move_to_end((page_id, revid, version))
                    self._remember(hit[1], version)
            if hit is None:
                rest.append(text)
            else:
                answers[text] = self._answer(ready, [hit[0]], page_id, version, cached=True)
        return rest

    def _remember(self, outcome: Any, version: str) -> None:
        """Keep a linked outcome for :meth:`queue_file` (the caller holds the lock)."""
        key = (outcome.media.page_id, version)
        self._recent[key] = outcome
        self._recent.move_to_end(key)
        while len(self._recent) > max(256, self.cache_size):
            self._recent.popitem(last=False)

    @contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[step] += time.monotonic() - started

    def _answer(self, ready: Any, entries: List[Dict[str, Any]], page_id: int, version: str,
                cached: bool = False) -> Answer:
        doc = document(ready.linker.description, self.label_set, ready.index, entries)
        if self._safety is not None:
            doc["safety"] = self._safety
        return Answer(doc, 200 if entries[0].get("ok") else 404, cached=cached, page_id=page_id, version=version)


def _error(source: str, reason: str, status: int) -> Answer:
    """A source that gives no answer: one line saying why (the JSON error of the API)."""
    return Answer({"files": [{"title": source, "ok": False, "reason": reason}]}, status)
