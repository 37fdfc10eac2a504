"""Human review of the queue's suggestions: terminal sessions, exports, offline decisions, audit.

Modules, one concept each:

* :mod:`~wikivel_bot.review.session` — :class:`ReviewSession`: walk the queue, decide, undo.
* :mod:`~wikivel_bot.review.terminal` — render a session and drive it with single keys.
* :mod:`~wikivel_bot.review.keys` — keys from a terminal (cbreak mode) or lines from a pipe.
* :mod:`~wikivel_bot.review.actions` — decisions without the terminal; reviewer and file lookup.
* :mod:`~wikivel_bot.review.export` — CSV, JSON Lines, QuickStatements, wikitext page.
* :mod:`~wikivel_bot.review.importer` — apply the ``decision`` column of an exported CSV.
* :mod:`~wikivel_bot.review.audit` — the audit trail as a table or JSON.

The pure rules (filters, decision words, URLs, escaping) live in
``wikivel_bot.core.review_rules``; the read queries in ``wikivel_bot.queue.reviews``. Nothing
here imports torch or pywikibot, so ``wikivel-bot review`` starts fast.
"""

from wikivel_bot.review.actions import Decided, decide, resolve_page_id, resolve_reviewer
from wikivel_bot.review.export import FORMATS, ExportStats, export_states, write_export
from wikivel_bot.review.importer import ImportReport, import_decisions, import_decisions_file
from wikivel_bot.review.session import ReviewSession, SessionCounts

__all__ = [
    "Decided", "decide", "resolve_page_id", "resolve_reviewer",
    "FORMATS", "ExportStats", "export_states", "write_export",
    "ImportReport", "import_decisions", "import_decisions_file",
    "ReviewSession", "SessionCounts",
]
