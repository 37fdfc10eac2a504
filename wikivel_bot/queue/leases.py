"""Leases held by processes that no longer exist, freed at once instead of after the lease.

Workers are named ``<stage>:<host>:<pid>`` (``cli.poll.worker_name``, the daemon). When a
writer is killed (kill -9, OOM, a power cut) its claims would sit until their lease expires,
while ``write`` reports "0 claimed". A new worker on the same host can tell for sure that such
a process is gone, and gives its claims back. Claims of other hosts are left to their lease:
from here we cannot know whether that process still runs.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, Iterable, List, Optional


def local_pid(worker: str, host: Optional[str] = None) -> Optional[int]:
    """The pid in a ``stage:host:pid`` worker name when ``host`` is this machine, else None."""
    parts = worker.rsplit(":", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    if parts[1] != (host or socket.gethostname()):
        return None
    return int(parts[2])


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 probes without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is just not ours
    return True


def dead_local_workers(workers: Iterable[str]) -> List[str]:
    """The workers among ``workers`` that ran on this host and whose process is gone."""
    dead = []
    for worker in dict.fromkeys(workers):
        pid = local_pid(worker)
        if pid is not None and pid != os.getpid() and not process_alive(pid):
            dead.append(worker)
    return dead


def free_dead_local_claims(store: Any) -> Dict[str, int]:
    """Release every claim of a dead local worker; {worker: rows freed}."""
    freed = {}
    for worker in dead_local_workers(c["worker"] for c in store.claims()):
        freed[worker] = store.release_claims_of(worker)
    return freed
