"""What a ready linker calls when it first needs the wiki: its item images and its evidence
resolver (``linker.factory.build_ready_linker`` takes both as providers).

Apart from ``commons/item_images.py`` and ``commons/evidence.py`` so that building a linker
does not import pywikibot: ``suggest`` on local images (no categories, no references, a
linker without item images) never opens a wiki, and its warm start stays free of the heavy
imports (tests/test_linker_tower.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional

if TYPE_CHECKING:
    from wikivel_bot.commons.evidence import EvidenceCache, EvidenceResolver
    from wikivel_bot.commons.item_images import ItemImageCache


def evidence_source(settings: Any, site: Optional[Callable[[], Any]] = None, cache: Optional["EvidenceCache"] = None
                    ) -> Optional[Callable[[], "EvidenceResolver"]]:
    """Where ``linker.factory.build_ready_linker`` gets its resolver: built at the first batch
    (the site and the Wikidata client are opened then, not before), then kept.

    :param settings: the bot's ``Settings`` (``evidence``, ``site``).
    :param site: a function returning the Commons site; None opens ``settings.site`` in this
        process when first needed (a backfill actor).
    :param cache: the ``Store`` (its ``evidence_cache`` table) where there is a queue
        database; None keeps answers in memory for this process.
    :returns: None when ``evidence.enabled`` is false (suggestions from the image alone).
    """
    if not settings.evidence.enabled:
        return None
    built: List["EvidenceResolver"] = []

    def resolver() -> "EvidenceResolver":
        if not built:
            from wikivel_bot.commons.evidence import EvidenceResolver
            from wikivel_bot.commons.site import open_items, open_repo, open_site

            commons = site() if site is not None else open_site(settings.site)
            wikidata = open_items(settings.site, open_repo(settings.site, commons))
            built.append(EvidenceResolver.from_settings(commons, wikidata, settings.evidence, cache))
        return built[0]

    return resolver


def item_image_source(settings: Any, site: Any = None, progress: bool = False) -> Callable[[], "ItemImageCache"]:
    """Where ``linker.factory.build_ready_linker`` gets item images: the cache of
    :func:`item_image_cache`, built only if the linker (or its verifier) reads item images.

    :param settings: the bot's ``Settings``.
    :param site: the Commons site, or a function returning it; None opens ``settings.site``
        when an image must first be fetched (a backfill actor, which reads the driver's cache).
    :param progress: a progress bar over downloads.
    """
    def opened() -> Any:
        from wikivel_bot.commons.site import open_site

        return open_site(settings.site)

    def cache() -> "ItemImageCache":
        from wikivel_bot.commons.item_images import item_image_cache

        return item_image_cache(settings, opened if site is None else site, progress)

    return cache
