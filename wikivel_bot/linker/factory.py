"""The one factory: a linker variant's name and settings in, a ready :class:`Linker` out.

As in open_clip's ``factory.py``, this is the only module that imports the implementations
(``clip``, ``baselines``, the ``cascade`` sub-room); they import only the spec below them
(:mod:`wikivel_bot.linker.spec`), never this module, so the linker room has no import circle.
The implementations are imported when a linker of their kind is built, so building a baseline
(or importing this module) does not import torch.
"""

from __future__ import annotations

from typing import Optional

from wikivel_bot.config import CascadeSettings, LinkerSettings
from wikivel_bot.linker.base import ItemImageLoader, Linker
from wikivel_bot.linker.spec import LinkerSpec, get_spec


def create_linker(
    name: Optional[str] = None,
    settings: Optional[LinkerSettings] = None,
    *,
    item_image_loader: Optional[ItemImageLoader] = None,
    cascade: Optional[CascadeSettings] = None,
) -> Linker:
    """Build a linker by registry name; call ``attach(label_set, cache_dir)`` before searching.

    :param name: a name from :func:`~wikivel_bot.linker.spec.list_linkers`; None means ``settings.name``.
    :param settings: model, weights (tag, local file or ``random``), checkpoint, device,
        threads and batch size; defaults when None.
    :param item_image_loader: where the fusion linker gets item images (P18); without one
        its item side is text only (the index manifest says so).
    :param cascade: the cascade linker's settings (candidates K...); defaults when None.
    :returns: with ``settings.verifier`` set, the linker wrapped in a
        :class:`~wikivel_bot.linker.cascade.verifier.VerifiedLinker` (its suggestions carry a probability).
    :raises UsageError: unknown name.
    :raises LinkerError: weights missing or unreachable, a bad checkpoint or verifier, a bad device.
    """
    settings = settings or LinkerSettings()
    linker = _create(get_spec(name or settings.name), settings, item_image_loader, cascade)
    if not settings.verifier:
        return linker
    from wikivel_bot.linker.cascade.verifier import VerifiedLinker, load_verifier

    verifier = load_verifier(settings.verifier, settings, inner=linker, item_image_loader=item_image_loader)
    return VerifiedLinker(linker, verifier)


def _create(spec: LinkerSpec, settings: LinkerSettings, item_image_loader: Optional[ItemImageLoader],
            cascade: Optional[CascadeSettings]) -> Linker:
    if spec.kind == "baseline":
        from wikivel_bot.linker.baselines import FrequencyLinker

        return FrequencyLinker(spec, settings)
    if spec.kind == "cascade":
        from wikivel_bot.linker.cascade.linker import build_cascade_linker

        return build_cascade_linker(spec, settings, cascade, item_image_loader=item_image_loader)
    from wikivel_bot.linker.clip import build_clip_linker

    return build_clip_linker(spec, settings, item_image_loader=item_image_loader)
