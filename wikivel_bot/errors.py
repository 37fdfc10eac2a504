"""The exception tree of wikivel-bot.

Library code raises only these; ``wikivel_bot.cli`` turns them into one clear line and an
exit code, so a user mistake never ends in a traceback::

    WikivelError                    base of everything we raise on purpose
    ├── ConfigError                 bad settings file, unknown key, wrong type
    ├── UsageError                  bad input on the command line or in a file given to us
    ├── StoreError                  the queue database
    │   ├── DatabaseUnavailable     cannot connect / wrong URL / driver missing
    │   ├── SchemaOutdated          the database is not at the migration head
    │   ├── IllegalTransition       a state change the queue's rules forbid
    │   ├── LeaseLost               a worker no longer holds the row it claimed
    │   └── NotFound                no such file / candidate / batch in the queue
    ├── LabelSetError               a label set that is missing, corrupt or mismatched
    │   └── DumpError               a dump that cannot be read (truncated archive, ...)
    ├── LinkerError                 model, weights, checkpoint or label index problems
    └── WikiError                   talking to Commons / Wikidata failed
        ├── WikiUnreachable         no connection to the wiki at all (the message says what to do)
        └── FileUnavailable         the file vanished, is not an image, or is corrupt
"""

from __future__ import annotations


class WikivelError(Exception):
    """Base class of every error wikivel-bot raises on purpose.

    ``exit_code`` is what the CLI exits with when this error reaches it.
    """

    exit_code = 1


class ConfigError(WikivelError):
    """The settings file or a ``WIKIVEL_*`` variable is wrong (the message names the key)."""

    exit_code = 2


class UsageError(WikivelError):
    """Bad input given by the user: an argument, a file to import, a title."""

    exit_code = 2


class StoreError(WikivelError):
    """Something went wrong in the queue database."""


class DatabaseUnavailable(StoreError):
    """The database cannot be reached or its URL/driver is wrong."""

    exit_code = 3


class SchemaOutdated(StoreError):
    """The database schema is not at the newest migration; run ``wikivel-bot db upgrade``."""

    exit_code = 3


class IllegalTransition(StoreError):
    """A row was asked to move to a state its current state does not allow."""


class DecisionConflict(IllegalTransition):
    """A decision on a pair that is no longer as the reviewer saw it, or that another
    reviewer decided (only an operator may override): nothing was changed. Says where the
    pair stands now, so the reviewer is told who decided what."""

    def __init__(self, message: str, state: str = "", reviewer: str = "", prominent: bool = False) -> None:
        super().__init__(message)
        self.state = state
        self.reviewer = reviewer
        self.prominent = prominent


class LeaseLost(StoreError):
    """The worker's claim on a row expired and another worker took it over (or a human
    changed the row): the first worker must neither edit nor record anything for it."""


class NotFound(StoreError):
    """A file, candidate or batch that the caller named is not in the queue."""


class LabelSetError(WikivelError):
    """A label set is missing, corrupt, or does not match what it is used with."""


class DumpError(LabelSetError):
    """A dump file cannot be read to the end (the message says how far it got)."""


class LinkerError(WikivelError):
    """The linker cannot be built: weights, checkpoint, device or label index."""


class WikiError(WikivelError):
    """A request to Commons or Wikidata failed in a way the caller must handle."""


class WikiUnreachable(WikiError):
    """No connection to the wiki could be made (name not resolved, connection refused, timed
    out): the machine cannot reach it, so retrying will not help. Kept apart from other wiki
    errors so the message can name the host and the way out (another wiki, or the offline
    recipe) instead of urllib3's pool internals."""


class FileUnavailable(WikiError):
    """A file cannot be used: deleted, not an image, corrupt, too large."""
