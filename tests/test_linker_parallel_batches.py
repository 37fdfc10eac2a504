"""parallel_batches: several batches linked at once on CPU, one torch thread each, with the
same outcomes in the same order as one batch at a time."""

from __future__ import annotations

import os
import threading

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from tests.linker_support import animals_label_set, image_bytes, tiny_settings  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.link import Linked, LinkFailed, link_files  # noqa: E402
from wikivel_bot.linker.backbone.parallel_batches import run_units, units, worker_count  # noqa: E402
from wikivel_bot.linker.cascade.verifier import VerifiedLinker  # noqa: E402
from wikivel_bot.types import MediaFile  # noqa: E402

LABELS = animals_label_set()
RULES = RankingRules(top_k=8, ancestor_margin=0.05)


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    linker = create_linker("zero-shot", tiny_settings(batch_size=3))
    linker.attach(LABELS, str(tmp_path_factory.mktemp("cache")))
    return linker


@pytest.mark.parametrize("n, batch, workers", [(0, 4, 2), (1, 4, 2), (3, 32, 2), (32, 32, 2), (70, 32, 2),
                                               (256, 32, 2), (10, 3, 4), (7, 1, 3)])
def test_units_cover_every_item_once_evenly_and_in_multiples_of_the_workers(n, batch, workers):
    ranges = units(n, batch, workers)
    covered = [i for start, stop in ranges for i in range(start, stop)]
    assert covered == list(range(n))
    sizes = [stop - start for start, stop in ranges]
    assert all(0 < s <= batch for s in sizes)
    if sizes:
        assert max(sizes) - min(sizes) <= 1  # no small last batch for one worker to wait on
    if n >= workers:  # a multiple of the workers, unless that would split below one item
        assert len(ranges) % workers == 0 or set(sizes) == {1}


def test_70_items_in_batches_of_32_on_two_workers_are_four_even_units():
    assert units(70, 32, 2) == [(0, 18), (18, 36), (36, 53), (53, 70)]


def test_worker_count_is_capped_by_the_cpus_and_the_items():
    assert worker_count(8, 1) == 1
    assert worker_count(2, 5) == min(2, os.cpu_count() or 1)
    assert worker_count(64, 100) == (os.cpu_count() or 1)


def test_each_unit_runs_once_on_a_one_thread_worker_and_the_callers_threads_come_back():
    before = torch.get_num_threads()
    seen, lock = [], threading.Lock()

    def work(start: int, stop: int) -> None:
        with lock:
            seen.append((start, stop, torch.get_num_threads(), threading.current_thread().name))

    ranges = units(20, 3, 2)
    run_units(ranges, 2, work)
    assert sorted((a, b) for a, b, _, _ in seen) == ranges
    assert {threads for _, _, threads, _ in seen} == {1}
    assert all(name.startswith("wikivel-link") for *_, name in seen)
    assert torch.get_num_threads() == before


def test_a_failing_unit_is_raised_and_no_new_unit_is_taken_after_it():
    before = torch.get_num_threads()
    ran = []

    def work(start: int, stop: int) -> None:
        ran.append(start)
        if start == 2:
            raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        run_units([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], 1, work)
    assert ran == [0, 1, 2]  # one worker: the units after the failure were never taken
    assert torch.get_num_threads() == before


def _files():
    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40), (90, 90, 90), (10, 180, 170), (250, 250, 250)]
    files = [(MediaFile(page_id=i + 1, title=f"File:Colour {i}.jpg"), image_bytes(color=c)) for i, c in enumerate(colours)]
    files.insert(3, (MediaFile(page_id=99, title="File:Broken.jpg"), b"not an image"))
    return files


def test_concurrent_batches_give_the_outcomes_of_one_batch_at_a_time_in_input_order(linker):
    files = _files()
    one = link_files(linker, files, rules=RULES, workers=1)
    both = link_files(linker, files, rules=RULES, workers=2)
    assert [o.media.page_id for o in both] == [f[0].page_id for f in files]
    assert [type(o) for o in both] == [type(o) for o in one]
    assert isinstance(both[3], LinkFailed) and "not an image" in both[3].reason
    for a, b in zip(one, both):
        if isinstance(a, Linked):
            assert [c.qid for c in a.candidates] == [c.qid for c in b.candidates]
            assert [c.score for c in a.candidates] == pytest.approx([c.score for c in b.candidates], abs=1e-5)


def test_link_files_runs_concurrent_batches_on_workers_by_default(linker, monkeypatch):
    from wikivel_bot.linker import link as link_module

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: batches run one at a time")
    calls = []
    real = link_module.run_units

    def spy(ranges, workers, work):
        calls.append((ranges, workers))
        return real(ranges, workers, work)

    monkeypatch.setattr(link_module, "run_units", spy)
    monkeypatch.setattr(type(linker), "concurrent_batches", lambda self: 2)
    outcomes = link_files(linker, _files(), rules=RULES)
    assert len(outcomes) == 8 and calls == [(units(8, 3, 2), 2)]
    calls.clear()
    link_files(linker, _files()[:1], rules=RULES)  # one file: the whole machine for one batch
    link_files(linker, _files(), rules=RULES, workers=1)  # asked for one at a time
    assert calls == []


def test_clip_linkers_offer_a_batch_per_torch_thread_and_a_verifier_one(linker):
    assert linker.concurrent_batches() == torch.get_num_threads()
    assert VerifiedLinker(linker, verifier=object()).concurrent_batches() == 1
