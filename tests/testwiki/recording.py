"""Recording of every request and every edit, for exact assertions in tests."""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

WRITE_ACTIONS = frozenset({
    'wbsetclaim', 'wbcreateclaim', 'wbeditentity', 'wbremoveclaims',
    'wbsetclaimvalue', 'wbsetlabel', 'wbsetdescription', 'wbsetaliases',
    'wbsetreference', 'wbremovereferences', 'wbsetqualifier',
    'wbremovequalifiers', 'edit', 'upload', 'delete', 'move', 'protect',
    'purge', 'rollback', 'undelete', 'wbmergeitems',
})


@dataclass
class RecordedRequest:
    """One HTTP request as the server saw it."""

    method: str
    path: str
    params: dict[str, str]
    status: int = 200
    error: str | None = None          # API error code, if any
    host: str = ''
    user_agent: str = ''
    at: float = field(default_factory=time.time)

    @property
    def action(self) -> str | None:
        """The API ``action`` parameter (None for non-API paths)."""
        return self.params.get('action')

    @property
    def is_write(self) -> bool:
        """Whether this was a write API request (successful or not)."""
        return self.action in WRITE_ACTIONS


@dataclass
class RecordedEdit:
    """One successful write, as stored."""

    entity: str
    action: str
    claim: dict[str, Any] | None
    summary: str
    tags: list[str]
    bot: bool
    baserevid: int | None
    new_revid: int
    old_revid: int
    user: str
    title: str
    removed: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None
    # made against a stale baserevid and patched onto the latest revision
    conflict_patched: bool = False
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


class Recorder:
    """Thread-safe append-only logs of requests and edits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.edits: list[RecordedEdit] = []

    def add_request(self, req: RecordedRequest) -> None:
        """Append a request record."""
        with self._lock:
            self.requests.append(req)

    def add_edit(self, edit: RecordedEdit) -> None:
        """Append an edit record."""
        with self._lock:
            self.edits.append(edit)

    def api_requests(self, action: str | None = None) -> list[RecordedRequest]:
        """API requests, optionally only those with *action*."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith('api.php')
                    and (action is None or r.action == action)]

    def write_requests(self) -> list[RecordedRequest]:
        """All write API requests (including refused ones)."""
        with self._lock:
            return [r for r in self.requests if r.is_write]

    def write_count(self) -> int:
        """Number of write API requests received."""
        return len(self.write_requests())

    def clear(self) -> None:
        """Forget everything recorded so far."""
        with self._lock:
            self.requests.clear()
            self.edits.clear()
