"""What every command gets from the global options: Settings, and the things built from them.

This (with ``daemon/scheduler.py``) is the only place that builds Settings and the database engine;
everything is built lazily so ``--help`` and quick commands stay fast.
"""

from __future__ import annotations

import dataclasses
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
            if self.overrides:  # `config show` names the command line as these keys' source
                # (and the registry leaves a linker key set there as given: with_running_model)
                from wikivel_bot.learning.registry import COMMAND_LINE

                given = {f"{section}.{key}" for section, key in self.overrides}
                kept = tuple(o for o in settings.origins if o[0] not in given)
                settings = dataclasses.replace(
                    settings, origins=kept + tuple((k, COMMAND_LINE) for k in sorted(given)))
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

    def safety_check(self) -> Any:
        """The safety rules as configured now, as one check over the label set's items
        (``core.safety.item_check``): the review and the exports leave out queued pairs whose
        item they withhold. Local only (no Wikidata): an unloadable label set checks nothing,
        and the writer, which reads Wikidata, is the last guard."""
        from wikivel_bot.core.safety import item_check, rules_from
        from wikivel_bot.errors import WikivelError

        try:
            label_set = self.label_set()
        except WikivelError:
            label_set = None
        return item_check(rules_from(self.settings.safety), label_set)

    def ready_linker(self, progress: bool = True, *, settings: Optional[Settings] = None, label_set: Any = None,
                     top_k: Optional[int] = None, evidence_cache: Any = None, given: Any = ()) -> Any:
        """The configured linker with its label index attached, its ranking and safety rules,
        and where it resolves the files' own evidence (``evidence.enabled``): a
        ``linker.factory.ReadyLinker`` (torch is imported here); link with its ``link``.

        The index is built once per (linker, weights, label set) and cached under
        ``linker.cache_dir``; later calls and other processes reuse it. Item images (P18)
        are fetched once into ``linker.cache_dir/item-images/`` when the linker or its
        verifier reads them; the site is opened only if one must be fetched.

        :param settings: instead of this context's (``suggest`` overrides linker keys).
        :param label_set: instead of ``linker.labels_dir``'s.
        :param top_k: overrides ``linker.top_k``.
        :param evidence_cache: the ``Store`` where the command has a queue database (evidence
            look-ups are kept in its ``evidence_cache``); None keeps them in memory.
        :param given: linker keys the command set by its own flags (``suggest``); like the
            global overrides (named in the settings' origins), the models directory's running
            checkpoint does not replace them (``learning.registry.with_running_model``).
        """
        from wikivel_bot.commons.providers import evidence_source
        from wikivel_bot.commons.providers import item_image_source
        from wikivel_bot.linker import build_ready_linker

        settings = settings or self.settings
        return build_ready_linker(settings, label_set if label_set is not None else self.label_set(),
                                  item_images=item_image_source(settings, self.site, progress=progress),
                                  evidence=evidence_source(settings, self.site, evidence_cache),
                                  top_k=top_k, progress=progress, given=given)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
