"""What the resident suggestion service asks the queue (``wikivel_bot.resident``): which
linker versions a file's queued pairs came from, and where a file stands.

A file the running linker already queued is answered from the queue, with its pairs' review
state, instead of being linked again; a file queued by another version (an older model, other
rules) is linked afresh. Reads only.
"""

from __future__ import annotations

from typing import Optional, Set

from sqlalchemy import select

from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import FileState


def queued_versions(store: Store, page_id: int) -> Set[str]:
    """The linker versions of the pairs queued for the file with this page id (empty: none)."""
    with store.reading() as conn:
        rows = conn.execute(
            select(candidates.c.linker_version).distinct()
            .select_from(candidates.join(files, candidates.c.file_id == files.c.id))
            .where(files.c.page_id == page_id)
        ).scalars()
        return {str(v or "") for v in rows}


def file_state(store: Store, page_id: int) -> Optional[FileState]:
    """The queued file's state, None when it is not queued."""
    with store.reading() as conn:
        found = conn.execute(select(files.c.state).where(files.c.page_id == page_id)).scalar()
    return FileState(found) if found is not None else None
