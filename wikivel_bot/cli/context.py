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

    def store(self, check_schema: bool = True, pool_size: int = 0) -> Any:
        """The queue store on the configured database (``wikivel_bot.queue.store.Store``).

        :param check_schema: the database must exist and be at the newest migration; a
            missing SQLite file is then an error rather than created (only ``db`` commands
            create one), so a command run in the wrong folder leaves nothing behind.
        :param pool_size: database connections to keep (``create_engine_for``; 0: default);
            only the first call builds the store.
        """
        if self._store is None:
            from wikivel_bot.queue.engine import create_engine_for
            from wikivel_bot.queue.store import Store

            engine = create_engine_for(self.settings.db.url, echo=self.settings.db.echo,
                                       create=not check_schema, pool_size=pool_size)
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

    def item_labels(self, qids: Any = None) -> Any:
        """qid -> label for reading QIDs: labels stored with the queue's candidates, then the
        label set's; local only, and an unloadable label set only means fewer labels."""
        from wikivel_bot.errors import WikivelError
        from wikivel_bot.queue.item_labels import stored_labels
        from wikivel_bot.review.item_labels import label_lookup

        try:
            label_set = self.label_set()
        except WikivelError:
            label_set = None
        known = stored_labels(self.store(), qids) if qids is not None else {}
        return label_lookup(known, label_set)

    def linker(self, progress: bool = True) -> Any:
        """The configured linker with its label index attached (torch is imported here).

        The index is built once per (linker, weights, label set) and cached under
        ``linker.cache_dir``; later calls and other processes reuse it.
        """
        from wikivel_bot.linker import create_linker

        settings = self.settings.linker
        linker = create_linker(settings.name, settings, item_image_loader=self.item_images(settings.name, progress),
                               cascade=self.settings.cascade)
        linker.attach(self.label_set(), settings.cache_dir, progress=progress)
        return linker

    def item_images(self, linker_name: str, progress: bool = True) -> Any:
        """For a linker that reads item images (fusion): the P18 thumbnails, fetched once into
        ``linker.cache_dir/item-images/`` (``commons.item_images``); None for the others."""
        from wikivel_bot.linker.spec import get_spec

        if not get_spec(linker_name).uses_item_images:
            return None
        from wikivel_bot.commons.item_images import item_image_cache

        # The site is opened only if an image must be fetched (cached ones work offline).
        return item_image_cache(self.settings, self.site, progress=progress)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
