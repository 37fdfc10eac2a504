"""How a CLIP linker gets its backbone: the exported image tower where one serves, else
the full open_clip model (cached, with a checkpoint's text tower in), in the precision
resolved for this machine; and the backbone block checkpoints record.

Split from ``clip.py`` (the linkers themselves); the cascade and training load through here too.
"""

from __future__ import annotations

from typing import Optional, Tuple

from wikivel_bot.config import LinkerSettings
from wikivel_bot.linker import checkpoint as ckpt
from wikivel_bot.linker.backbone import precision
from wikivel_bot.linker.backbone.encoders import Backbone, load_backbone, model_name, register_model_file, resolve_device
from wikivel_bot.linker.backbone.fastpath import apply_precision
from wikivel_bot.linker.backbone.text_tower import load_text_tower_state
from wikivel_bot.linker.backbone.tower import IMAGE_ONLY_QUERIES, export_tower, tower_key
from wikivel_bot.linker.backbone.weights import resolve_weights, weights_identity
from wikivel_bot.linker.spec import LinkerSpec


def full_backbone(
    spec: LinkerSpec, settings: LinkerSettings, choice: precision.PrecisionChoice,
    checkpoint: Optional[ckpt.Checkpoint], key: Optional[dict],
) -> Backbone:
    """The open_clip backbone, inference-ready: the checkpoint's text tower (if any) in, then
    the precision applied; its image tower exported for later starts when ``key`` is set."""
    if checkpoint is not None and checkpoint.text_encoder:
        # The checkpoint replaces the text tower before the precision applies: no cache.
        backbone = load_backbone(settings.model, settings.pretrained, settings.weights, settings.device, settings.threads)
        ckpt.check_backbone(checkpoint, spec, backbone_info(backbone))  # before its weights go in
        load_text_tower_state(backbone.model, dict(checkpoint.text_encoder))
        # After the checkpoint's text tower is in: the precision applies to the final weights.
        apply_precision(backbone, choice)
    else:
        backbone = _inference_backbone(settings, choice)
    export_tower(backbone, key, settings.cache_dir)
    return backbone


def _inference_backbone(settings: LinkerSettings, choice: precision.PrecisionChoice) -> Backbone:
    """The (cached, reparameterized) backbone with ``choice`` applied."""
    from wikivel_bot.linker.backbone.warmstart import load_cached_backbone

    backbone = load_cached_backbone(settings.model, settings.pretrained, settings.weights, settings.device,
                                    settings.threads, settings.cache_dir, choice.precision)
    return apply_precision(backbone, choice)


def load_inference_backbone(settings: LinkerSettings, allowed: Tuple[str, ...] = precision.PRECISIONS[1:],
                            why: str = "") -> Backbone:
    """The full backbone in ``linker.precision`` as resolved for this machine (what a clip
    linker of these settings runs in), for linkers that need the text tower too (the cascade,
    the verifier).

    :param allowed: precisions the caller's model can take; another resolved one becomes fp32.
    :param why: the reason shown when it does (e.g. the pair model's calibration).
    :raises LinkerError: weights, device problems; :raises UsageError: a bad precision setting.
    """
    choice = choose_precision(settings, precision.validate(settings.precision))
    if choice.precision not in allowed:
        choice = precision.PrecisionChoice("fp32", choice.requested, f"{choice.precision} not used: {why}")
    return _inference_backbone(settings, choice)


def image_tower_key(spec: LinkerSpec, settings: LinkerSettings, choice: precision.PrecisionChoice) -> Optional[dict]:
    """The exported image tower's key where this linker can use one (queries are images
    only, CPU, a cache directory), else None."""
    if spec.architecture not in IMAGE_ONLY_QUERIES or not settings.cache_dir:
        return None
    if resolve_device(settings.device).type != "cpu":
        return None
    return tower_key(settings.model, settings.pretrained, settings.weights, choice.precision)


def choose_precision(settings: LinkerSettings, requested: str) -> precision.PrecisionChoice:
    """Resolve ``linker.precision`` before loading (the weights cache is per precision)."""
    device = resolve_device(settings.device).type
    name = model_name(settings.model)
    # Without open_clip where the settings tell (``resolve_weights`` would import it).
    identity = weights_identity(name, settings.pretrained, settings.weights)
    if identity is None:
        identity = resolve_weights(register_model_file(settings.model), settings.pretrained, settings.weights).identity
    verdicts = precision.read_verdicts(settings.cache_dir, precision.check_key(name, identity, device))
    return precision.choose(requested, device, verdicts=verdicts)


def backbone_info(backbone: Backbone) -> dict:
    """The backbone block for checkpoints (see ``checkpoint.backbone_info``)."""
    return ckpt.backbone_info(
        backbone.model_name, backbone.pretrained, backbone.random_weights, backbone.weights,
        backbone.config_digest, backbone.embed_dim,
    )
