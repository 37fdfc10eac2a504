"""Hierarchy-aware frequency filtering (paper §3.2) and the removal of non-depictable items.

Counts. ``direct[i]`` is the number of files whose P180 statements name item i (a file counts
once per item). ``accumulated[i]`` adds the direct counts of every item that has i as an
ancestor within 3 hops, each such item once however many paths lead to i: "human" (Q5) is
rarely depicted as such, but reaches the threshold through the people who are.

Selection with threshold f >= 1: an item is **kept** when it is eligible (in the Wikidata
dump, has a label, not removed as non-depictable), is itself depicted at least once (§3.1:
"Items that are never annotated as depicted across the entire Commons dump are discarded
completely") and its accumulated count reaches f. So an abstract ancestor that no file ever
depicts directly ("entity") is neither a candidate nor a replacement, however many
descendants it accumulates; "human" is, because some files do depict it directly. A
depicted item that is not kept is **replaced** by its kept ancestors at the smallest hop
distance that has any (so a rare cat becomes "house cat", not "animal"), or **dropped** when
no ancestor within 3 hops is kept. Non-depictable items are dropped, never replaced: their
ancestors ("Wikimedia category", "scholarly article") say nothing about a picture, and
their depicts statements do not count towards any ancestor. The blocklisted classes
themselves are never kept either.

With f <= 0 the set is the paper's unfiltered one: every eligible depicted item, no hops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from wikivel_bot.labels.hierarchy import Hierarchy

STATUS_KEPT = 0
STATUS_REPLACED = 1  # depicted, not kept, replaced by kept ancestors
STATUS_DROPPED = 2  # depicted, not kept, nothing to replace it with
STATUS_ANCESTOR = 3  # not depicted and not kept: known only as somebody's ancestor
STATUS_NAMES = ("kept", "replaced", "dropped", "ancestor only")

REASON_NONE = 0
REASON_BELOW = 1
REASON_NON_DEPICTABLE = 2
REASON_BLOCKLIST = 3
REASON_NOT_IN_DUMP = 4
REASON_NO_LABEL = 5
REASON_NAMES = (
    "",
    "below the frequency threshold",
    "not depictable (instance of a blocklisted class)",
    "on the operator's blocklist",
    "not in the Wikidata dump (deleted or redirected)",
    "no label in the configured languages",
)
# Reasons after which the hierarchy may still offer a replacement.
_REPLACEABLE = (REASON_BELOW, REASON_NO_LABEL)


def eligibility(
    known: np.ndarray,
    has_label: np.ndarray,
    blocked_by: np.ndarray,
    on_blocklist: np.ndarray,
    on_allowlist: np.ndarray,
) -> np.ndarray:
    """Reason code per node why it can never be kept (REASON_NONE = eligible).

    :param known: the node's entity was read (dump or API).
    :param has_label: it has a label in the configured languages.
    :param blocked_by: first blocklisted P31 class (0 = none).
    :param on_blocklist: the operator blocked the item.
    :param on_allowlist: the operator allowed it despite its P31 class.
    """
    reason = np.full(known.shape, REASON_NONE, dtype=np.int8)
    reason[~has_label] = REASON_NO_LABEL
    reason[(blocked_by > 0) & ~on_allowlist] = REASON_NON_DEPICTABLE
    reason[on_blocklist] = REASON_BLOCKLIST
    reason[~known] = REASON_NOT_IN_DUMP
    return reason


def accumulate(hierarchy: Hierarchy, direct: np.ndarray, passed_up: Optional[np.ndarray] = None) -> np.ndarray:
    """Accumulated counts: a node's direct count plus those of its descendants within 3 hops.

    :param passed_up: the part of each node's count its ancestors receive (default: all of
        it); removed items pass nothing up, as if their statements had never been made.
    """
    owners, ancestors, _hops = hierarchy.pair_arrays()
    weights = (direct if passed_up is None else passed_up)[owners]
    nonzero = weights > 0
    added = np.bincount(ancestors[nonzero], weights=weights[nonzero], minlength=direct.shape[0])
    # float64 sums are exact far beyond any real count (2**53).
    return direct + np.rint(added).astype(np.int64)


@dataclass
class Selection:
    """Per-node outcome of the filtering; replacements as CSR over nodes."""

    kept: np.ndarray  # bool
    status: np.ndarray  # int8, STATUS_*
    reason: np.ndarray  # int8, REASON_*
    accumulated: np.ndarray  # int64
    replaced_offsets: np.ndarray  # int64 [n+1]
    replaced_by: np.ndarray  # int64 node numbers


def select(
    hierarchy: Hierarchy,
    direct: np.ndarray,
    reason: np.ndarray,
    is_input: np.ndarray,
    min_freq: int,
) -> Selection:
    """Decide, per node, kept / replaced / dropped (see the module docstring).

    :param hierarchy: the closure over the nodes.
    :param direct: direct depicts counts per node.
    :param reason: from :func:`eligibility`.
    :param is_input: the node was depicted (or listed by the user): it needs an outcome. With
        f >= 1 only inputs can be kept (or replace another item): the depicted-at-least-once
        rule of §3.1.
    :param min_freq: the threshold f.
    """
    n = hierarchy.n_nodes
    removed = np.isin(reason, (REASON_NON_DEPICTABLE, REASON_BLOCKLIST))
    accumulated = accumulate(hierarchy, direct, np.where(removed, 0, direct))
    eligible = reason == REASON_NONE
    if min_freq <= 0:
        kept = eligible & is_input
    else:
        kept = eligible & is_input & (accumulated >= min_freq)
    reason = reason.copy()
    reason[eligible & ~kept] = REASON_BELOW
    reason[kept] = REASON_NONE
    candidates = is_input & ~kept & np.isin(reason, _REPLACEABLE)
    offsets, replaced_by = _nearest_kept(hierarchy, candidates, kept)
    status = np.full(n, STATUS_ANCESTOR, dtype=np.int8)
    status[is_input] = STATUS_DROPPED
    status[is_input & (np.diff(offsets) > 0)] = STATUS_REPLACED
    status[kept] = STATUS_KEPT
    return Selection(kept, status, reason, accumulated, offsets, replaced_by)


def _nearest_kept(hierarchy: Hierarchy, candidates: np.ndarray, kept: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    n = hierarchy.n_nodes
    owners, ancestors, hops = hierarchy.pair_arrays()
    mask = candidates[owners] & kept[ancestors]
    owners, ancestors, hops = owners[mask], ancestors[mask], hops[mask]
    nearest = np.full(n, np.iinfo(np.int8).max, dtype=np.int8)
    np.minimum.at(nearest, owners, hops)
    best = hops == nearest[owners]
    owners, ancestors = owners[best], ancestors[best]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners, minlength=n), out=offsets[1:])
    return offsets, ancestors


@dataclass
class FileRemap:
    """The files' depicts after filtering: one row per (file, kept item)."""

    page_ids: np.ndarray  # int64
    nodes: np.ndarray  # int64, kept node numbers
    ranks: np.ndarray  # int8
    source_nodes: np.ndarray  # int64, the depicted node it came from
    files_in: int
    files_out: int

    @property
    def files_dropped(self) -> int:
        return self.files_in - self.files_out


def remap_files(page_ids: np.ndarray, nodes: np.ndarray, ranks: np.ndarray, selection: Selection) -> FileRemap:
    """Apply the selection to every file: kept items stay, others become their replacements.

    A file none of whose items survives is dropped (paper §3.2); ``files_dropped`` counts them.
    """
    kept = selection.kept
    offsets, targets = selection.replaced_offsets, selection.replaced_by
    files_in = int(np.unique(page_ids).size)
    known = nodes >= 0
    page_ids, nodes, ranks = page_ids[known], nodes[known], ranks[known]
    # Each row maps to itself when kept, else to the slice of its replacements.
    is_kept = kept[nodes]
    degree = np.where(is_kept, 1, offsets[nodes + 1] - offsets[nodes])
    total = int(degree.sum())
    first = np.cumsum(degree) - degree
    within = np.arange(total, dtype=np.int64) - np.repeat(first, degree)
    rows = np.repeat(np.arange(nodes.size), degree)
    row_kept = is_kept[rows]
    # Kept rows have no replacement slice: read a dummy position for them.
    position = np.where(row_kept, 0, np.repeat(offsets[nodes], degree) + within)
    replaced = targets[position] if targets.size else np.zeros(total, dtype=np.int64)
    new_nodes = np.where(row_kept, nodes[rows], replaced)
    out_pages, out_ranks, out_sources = page_ids[rows], ranks[rows], nodes[rows]
    # One row per (file, item): the highest rank wins, then the smallest source.
    order = np.lexsort((out_sources, -out_ranks.astype(np.int16), new_nodes, out_pages))
    out_pages, new_nodes = out_pages[order], new_nodes[order]
    out_ranks, out_sources = out_ranks[order], out_sources[order]
    first_of_pair = np.ones(out_pages.size, dtype=bool)
    first_of_pair[1:] = (out_pages[1:] != out_pages[:-1]) | (new_nodes[1:] != new_nodes[:-1])
    out_pages, new_nodes = out_pages[first_of_pair], new_nodes[first_of_pair]
    return FileRemap(
        page_ids=out_pages,
        nodes=new_nodes,
        ranks=out_ranks[first_of_pair],
        source_nodes=out_sources[first_of_pair],
        files_in=files_in,
        files_out=int(np.unique(out_pages).size),
    )
