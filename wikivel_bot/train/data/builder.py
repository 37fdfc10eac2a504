"""``wikivel-bot dataset build``: the Wiki-VEL dataset from the public dumps (paper §3).

1. The MediaInfo dump gives every file's depicts (P180) items (read with the label-set
   builder's reader, ``labels.build.read_mediainfo``); files without any are not wanted.
2. The pages dump is streamed; File pages that are wanted and end in .jpg, .jpeg, .png or
   .svg (any case) are parsed: description and categories, the non-descriptive categories
   filtered out (``categories.py``).
3. ``dataset.write_dataset`` shuffles, samples and splits 80/10/10 (``splits/*.txt``), then
   maps the items through the label set's frequency filter (dropping files left without an
   item) and removes P18 images from the test split.

The paper counts f on the training split (§3.2), so the label set depends on the split: run
``dataset build`` once without a label set (``label_set=None``: it writes ``splits/`` only),
``labels build --count-files OUT/splits/train.txt``, then ``dataset build`` with that set.
The same dumps and seed give the same split, and the card says whether the set was counted
on it (``labels.counted_on_train_split``).

With ``published`` (the directory of the published dataset's ``commons_images``), the
split of each file is the one the published dataset gives it, so results can be compared
with models trained on it; files it does not hold are left out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from wikivel_bot.labels.build import read_mediainfo, source_entry
from wikivel_bot.train.data.categories import CategoryFilter, load_filter
from wikivel_bot.train.data.dataset import (
    DEFAULT_FRACTIONS,
    SPLITS,
    SPLITS_DIR,
    BuildCounts,
    FileRecord,
    assign_splits,
    write_dataset,
    write_splits,
)
from wikivel_bot.train.data.pages import (
    FILE_NAMESPACE,
    Page,
    has_image_extension,
    iter_pages,
    parsed_file_pages,
)


@dataclass(frozen=True)
class BuildOptions:
    """What ``dataset build`` was asked for.

    :param seed: shuffle seed.
    :param fractions: train, validation, test shares.
    :param max_files: sample size after the shuffle (paper: 1,000,000); None keeps all.
    :param languages: description language fallback.
    :param workers: parsing processes.
    :param decompressor: ``auto``, ``parallel`` or ``stdlib``.
    :param category_filters: a file of extra category patterns.
    :param published: the published dataset's ``commons_images`` directory (its splits).
    :param progress: progress bars.
    :param force: replace an existing dataset.
    """

    seed: int = 0
    fractions: Sequence[float] = DEFAULT_FRACTIONS
    max_files: Optional[int] = None
    languages: Sequence[str] = ("en",)
    workers: int = 1
    decompressor: str = "auto"
    category_filters: Optional[Path] = None
    published: Optional[Path] = None
    progress: bool = False
    force: bool = False


def build_dataset(
    mediainfo_dump: Path,
    pages_dump: Path,
    label_set: Optional[Any],
    out_dir: Path,
    options: BuildOptions = BuildOptions(),
    labels_path: str = "",
) -> Dict[str, Any]:
    """Read both dumps and write the dataset (manifest and card) to ``out_dir``.

    :param mediainfo_dump: ``commons-YYYYMMDD-mediainfo.json.bz2``.
    :param pages_dump: ``commonswiki-YYYYMMDD-pages-articles.xml.bz2``.
    :param label_set: the label set (ground truth is mapped through its filter); None writes
        only ``splits/`` (step one of the paper's order, see the module docstring).
    :param out_dir: the dataset directory.
    :param options: see :class:`BuildOptions`.
    :param labels_path: the label set's directory, recorded in the card.
    :returns: the card.
    :raises DumpError: a truncated or corrupt dump.
    :raises UsageError: ``out_dir`` holds a dataset (without ``force``), bad fractions.
    """
    started = time.perf_counter()
    (pages, qids, _ranks), report = read_mediainfo(
        Path(mediainfo_dump), workers=options.workers, decompressor=options.decompressor, progress=options.progress
    )
    depicts = _depicts_by_page(pages, qids)
    counts = BuildCounts()
    counts.extra.update(mediainfo_entities=report.entities, mediainfo_malformed_lines=report.malformed,
                        files_with_depicts=len(depicts))
    category_filter = load_filter(options.category_filters)
    published = _published_splits(options.published) if options.published else None
    records = list(_records(pages_dump, depicts, label_set, category_filter, options, counts, published))
    counts.extra["categories"] = category_filter.counts()
    sources = [source_entry(Path(mediainfo_dump), "mediainfo-dump"), source_entry(Path(pages_dump), "pages-dump")]
    counts.extra["seconds"] = round(time.perf_counter() - started, 1)
    if published is not None:
        counts.extra["splits_from"] = str(options.published)
    if label_set is None:
        return _splits_only(records, out_dir, options, counts, published)
    return write_dataset(records, label_set, out_dir, seed=options.seed, fractions=options.fractions,
                         max_files=None if published is not None else options.max_files, labels_path=labels_path,
                         sources=sources, counts=counts, force=options.force, assigned=published)


def _depicts_by_page(pages: np.ndarray, qids: np.ndarray) -> Dict[int, List[str]]:
    # Stable: a file's items keep the order of its statements.
    order = np.argsort(pages, kind="stable")
    out: Dict[int, List[str]] = {}
    for page, qid in zip(pages[order].tolist(), qids[order].tolist()):
        out.setdefault(page, []).append(f"Q{qid}")
    return out


def _records(pages_dump: Path, depicts: Dict[int, List[str]], label_set: Optional[Any], category_filter: CategoryFilter,
             options: BuildOptions, counts: BuildCounts,
             published: Optional[Dict[int, str]]) -> Iterator[FileRecord]:
    seen = {"file_pages": 0, "not_image_extension": 0, "no_depicts": 0, "not_in_published": 0}

    def wanted(page: Page) -> bool:
        if page.ns != FILE_NAMESPACE:
            return False
        seen["file_pages"] += 1
        if page.page_id not in depicts:
            seen["no_depicts"] += 1
            return False
        if not has_image_extension(page.title):
            seen["not_image_extension"] += 1
            return False
        if published is not None and page.page_id not in published:
            seen["not_in_published"] += 1
            return False
        # No frequency filter here: the split comes first (§3.2), the filter after it.
        return True

    pages = iter_pages(Path(pages_dump), threads=options.workers, decompressor=options.decompressor)
    found = set()
    for parsed in parsed_file_pages(_progress(pages, options.progress), wanted, languages=options.languages,
                                    workers=options.workers):
        found.add(parsed.page_id)
        items = tuple(depicts[parsed.page_id])
        yield FileRecord(parsed.page_id, parsed.title, items, items, parsed.description,
                         category_filter.keep(parsed.categories))
    counts.extra.update(seen)
    # Depicted files the pages dump does not hold (deleted since, or another dump date).
    counts.extra["depicted_without_page"] = (len(depicts) - len(found) - seen["not_image_extension"]
                                             - seen["not_in_published"])


def _splits_only(records: List[FileRecord], out_dir: Path, options: BuildOptions, counts: BuildCounts,
                 published: Optional[Dict[int, str]]) -> Dict[str, Any]:
    """Step one: the split, before any label set exists (its f is counted on train.txt)."""
    kept, order, codes = assign_splits(records, counts, seed=options.seed, fractions=options.fractions,
                                       max_files=None if published is not None else options.max_files,
                                       assigned=published)
    pages = write_splits(Path(out_dir), kept, order, codes)
    return {"splits_only": True, "splits": {name: len(ids) for name, ids in pages.items()},
            "splits_dir": str(Path(out_dir) / SPLITS_DIR), "filtering": counts.as_dict()}


def _progress(pages: Iterator[Page], show: bool) -> Iterator[Page]:
    from tqdm import tqdm

    return iter(tqdm(pages, desc="pages dump", unit="page", disable=not show, mininterval=1.0))


def _published_splits(directory: Path) -> Dict[int, str]:
    """{page id: split} from the published dataset's ``<split>/*.tar`` shards."""
    from wikivel_bot.train.data.shards import tar_members

    out: Dict[int, str] = {}
    for split in SPLITS:
        for tar in sorted((Path(directory) / split).glob("*.tar")):
            for name, _, _ in tar_members(tar):
                key = name.rsplit("/", 1)[-1].split(".", 1)[0]
                if key.isdigit():
                    out[int(key)] = split
    return out
