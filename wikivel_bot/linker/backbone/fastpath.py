"""Putting a loaded backbone into its inference precision (see ``precision.py`` for the choice).

* ``fp32``: unchanged, the reference.
* ``bf16`` on CPU: the weights themselves become bf16 (not autocast: autocast re-casts every
  weight on every call, which on CPU costs about what it saves); inputs are cast to bf16 by
  the encoders and outputs come back as fp32, L2-normalised, like every other path.
* ``int8`` on CPU: dynamic quantization of the ``nn.Linear`` layers (weights int8 once,
  activations quantized per batch). Attention's packed input projection is not an
  ``nn.Linear`` and stays fp32.
* CUDA: bf16 autocast as before (``Backbone.autocast``); the weights stay fp32.

Reparameterizable backbones (MobileCLIP's FastViT / MobileOne blocks) are fused into their
inference form first, whatever the precision: same function, fewer convolutions. The text
tower runs sequence-first (:func:`sequence_first_text`): same function, without a copy of
every attention weight per text. A ViT image tower's last block computes the class token
only (``pooled.class_token_only``): same function up to rounding, about 7 % less work. At
bf16 the MLP weights are packed once into oneDNN's layout (``packed.py``: same products), and
both towers' attention runs on packed projections with fused attention.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Dict

import torch

from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.backbone.encoders import Backbone
from wikivel_bot.linker.backbone.packed import pack_attention, pack_mlp_linears
from wikivel_bot.linker.backbone.pooled import class_token_only
from wikivel_bot.linker.backbone.precision import PrecisionChoice

log = logging.getLogger(__name__)

# Per-forward batch sizes on CPU by precision (a table, so each precision gets its own).
# One sweep with ViT-B-32 on 2 shared cores (8/16/64 images per batch): fp32 18 images/s at
# 16 against 3 at 8 and 15 at 64; bf16 37 at 16 and 32 at 64 (within the noise of each
# other), so bf16 takes 32 for its larger GEMM tiles and twice the texts per batch; int8
# follows fp32. These are the values bench/linker.py ran with for docs/benchmarks.md.
CPU_IMAGE_BATCH: Dict[str, int] = {"fp32": 16, "bf16": 32, "int8": 16}
CPU_TEXT_BATCH: Dict[str, int] = {"fp32": 256, "bf16": 512, "int8": 256}
REPARAMETERIZED = "_wikivel_reparameterized"


def apply_precision(backbone: Backbone, choice: PrecisionChoice) -> Backbone:
    """Convert ``backbone.model`` in place for ``choice`` and record it on the backbone.

    :param backbone: a backbone from ``load_backbone`` (fp32 weights, eval mode).
    :param choice: the resolved precision.
    :returns: the same backbone, for chaining.
    :raises LinkerError: the model cannot be converted (e.g. no quantized engine here).
    """
    reparameterize(backbone)
    sequence_first_text(backbone)
    backbone.precision = choice.precision
    backbone.precision_reason = choice.reason
    if backbone.on_cuda or choice.precision == "fp32":
        backbone.input_dtype = torch.float32
        class_token_only(backbone.model)
        return backbone
    if choice.precision == "bf16":
        backbone.model = backbone.model.to(torch.bfloat16)
        backbone.input_dtype = torch.bfloat16
    elif choice.precision == "int8":
        backbone.model = quantize_int8(backbone.model)
        backbone.input_dtype = torch.float32
    backbone.image_batch = CPU_IMAGE_BATCH.get(choice.precision, 0)
    backbone.text_batch = CPU_TEXT_BATCH.get(choice.precision, 0)
    class_token_only(backbone.model)  # after quantize_int8, which returns a new model
    if choice.precision == "bf16":
        # oneDNN's weight layout once, not per forward pass (after class_token_only: its
        # block reads the attention weights itself and keeps the plain ones).
        pack_mlp_linears(backbone.model)
        pack_attention(backbone.model)
    return backbone


def quantize_int8(model: Any) -> Any:
    """Dynamic int8 quantization of the linear layers (a new module; ``model`` is untouched).

    :raises LinkerError: torch has no quantized engine on this machine.
    """
    select_quantized_engine()
    with warnings.catch_warnings():
        # torch.ao.quantization warns that it will move to torchao; it is still the API that
        # ships with torch, so the warning is noise for our users.
        warnings.simplefilter("ignore")
        # One scale per output channel (row) of each weight rather than one per matrix
        # (precision.INT8_WEIGHTS): a row of small weights keeps its resolution. Measured on
        # ViT-B-32 with random weights (`linkers --check-precision --items 300`): min cosine
        # to fp32 of the item texts 0.99845 -> 0.99887.
        quantized = torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)
    for module in quantized.modules():
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            # open_clip's Transformer.get_cast_dtype reads ``c_fc.weight.dtype``, which a
            # quantized Linear lacks (weight() is a method); this is the attribute it checks
            # first for int8 layers (bitsandbytes sets it the same way).
            setattr(module, "int8_original_dtype", torch.float32)
    return quantized


def select_quantized_engine() -> None:
    """Use the best quantized CPU engine torch has (int8 weights are packed for it).

    :raises LinkerError: this torch build has none.
    """
    engines = torch.backends.quantized.supported_engines
    engine = next((e for e in ("x86", "fbgemm", "onednn", "qnnpack") if e in engines), None)
    if engine is None:
        raise LinkerError("linker.precision int8: this torch build has no quantized CPU engine; use fp32 or bf16")
    torch.backends.quantized.engine = engine


def sequence_first_text(backbone: Backbone) -> None:
    """Run open_clip's text transformer in (length, batch, width) layout.

    Its causal mask is a float mask, so ``nn.MultiheadAttention`` always takes torch's slow
    path, which transposes batch-first input to sequence-first; ``F.linear`` on that
    non-contiguous view falls back to a batched matmul that copies the packed input
    projection once per text (three quarters of the text tower's CPU time at bf16 with ViT-B-32:
    37 → 8 ms per 32-token text in one measurement). Sequence-first from the start, the
    projections are plain matrix products. Same function (bit-identical at fp32); the image
    tower keeps batch-first, where the mask-free attention takes the fused fast path.
    """
    transformer: Any = getattr(backbone.model, "transformer", None)
    blocks = list(getattr(transformer, "resblocks", None) or [])
    if not blocks or not getattr(transformer, "batch_first", False):
        return
    if not all(isinstance(getattr(b, "attn", None), torch.nn.MultiheadAttention) for b in blocks):
        return  # custom attention blocks (they require batch-first)
    transformer.batch_first = False
    for block in blocks:
        block.attn.batch_first = False


def reparameterize(backbone: Backbone) -> None:
    """Fuse train-time branches (MobileOne/FastViT) for inference, when the model has any."""
    visual: Any = getattr(backbone.model, "visual", None)
    trunk: Any = getattr(visual, "trunk", None)
    # Once only: a second pass would look for the branches the first one removed.
    if trunk is None or getattr(trunk, REPARAMETERIZED, False):
        return
    if not any(hasattr(m, "reparameterize") for m in trunk.modules()):
        return
    try:
        from timm.utils.model import reparameterize_model
    except ImportError:  # pragma: no cover - open_clip's timm models need timm anyway
        return
    visual.trunk = reparameterize_model(trunk, inplace=True)
    setattr(visual.trunk, REPARAMETERIZED, True)
    log.debug("reparameterized %s for inference", backbone.model_name)
