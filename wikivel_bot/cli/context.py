"""What every command gets from the global options: Settings, and the things built from them.

This (with ``daemon.py``) is the only place that builds Settings and the database engine;
everything is built lazily so ``--help`` and quick commands stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from wikivel_bot.config import Settings, load_settings


@dataclass
class CliContext:
    """Global options as given, plus lazily built Settings and store."""

    config_path: Optional[Path] = None
    # Overrides from global flags: {(section, key): value}.
    overrides: Dict[tuple, Any] = field(default_factory=dict)
    verbose: int = 0
    _settings: Optional[Settings] = None
    _store: Any = None
    _site: Any = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            settings = load_settings(self.config_path)
            for (section, key), value in self.overrides.items():
                settings = settings.replace(section, **{key: value})
            self._settings = settings
        return self._settings

    def store(self, check_schema: bool = True) -> Any:
        """The queue store on the configured database (``wikivel_bot.queue.store.Store``)."""
        if self._store is None:
            from wikivel_bot.queue.engine import create_engine_for
            from wikivel_bot.queue.store import Store

            engine = create_engine_for(self.settings.db.url, echo=self.settings.db.echo)
            self._store = Store(engine, claim_lease_s=self.settings.db.claim_lease_s)
            if check_schema:
                self._store.check_schema()
        return self._store

    def site(self) -> Any:
        """The pywikibot site from ``settings.site`` (pywikibot is imported here, lazily)."""
        if self._site is None:
            from wikivel_bot.commons.site import open_site

            self._site = open_site(self.settings.site)
        return self._site

    def label_set(self) -> Any:
        """The label set of ``linker.labels_dir``, or the starter set shipped with the package."""
        from wikivel_bot.labels import default_label_set

        return default_label_set(self.settings.linker.labels_dir)

    def linker(self, progress: bool = True) -> Any:
        """The configured linker with its label index attached (torch is imported here).

        The index is built once per (linker, weights, label set) and cached under
        ``linker.cache_dir``; later calls and other processes reuse it.
        """
        from wikivel_bot.linker import create_linker

        settings = self.settings.linker
        linker = create_linker(settings.name, settings, cascade=self.settings.cascade)
        linker.attach(self.label_set(), settings.cache_dir, progress=progress)
        return linker

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
