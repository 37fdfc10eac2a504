"""What each trainable linker variant computes from the cached embeddings.

The heads are the linker's own (``linker.heads.build_heads``), so what is trained is exactly
what ``create_linker(name, checkpoint=...)`` rebuilds; only the inputs differ: cached,
frozen CLIP embeddings here, freshly encoded ones in the linker.

=========  ===========================================  =========================================
variant    file side (query)                            item side (entity)
=========  ===========================================  =========================================
naive-mlp  image_head(image)                            text_head(text of "{label}, {description}")
naive-te   image_head(image)                            text_head(trainable text tower(text))
fusion     query_head([image, file text])               entity_head([item text, item image])
=========  ===========================================  =========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from wikivel_bot.errors import UsageError
from wikivel_bot.linker.heads import build_heads
from wikivel_bot.linker.spec import LinkerSpec

# Items encoded per forward pass when naive-te re-encodes the whole label set.
TE_ITEM_BATCH = 512


@dataclass
class FrozenInputs:
    """Cached embeddings a variant reads, as tensors on the training device.

    :param images: (files, d) image embeddings of every manifest row.
    :param item_texts: (items, d) item-text embeddings in label-set order.
    :param file_texts: (files, d) file-text embeddings (fusion), with ``file_text_present``.
    :param item_images: (items, d) P18 image embeddings (fusion), with ``item_image_present``.
    """

    images: torch.Tensor
    item_texts: torch.Tensor
    file_texts: Optional[torch.Tensor] = None
    file_text_present: Optional[torch.Tensor] = None
    item_images: Optional[torch.Tensor] = None
    item_image_present: Optional[torch.Tensor] = None


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A cached float16 array as a tensor on ``device`` (kept float16: half the memory)."""
    # A copy: the cache is a read-only memory map, and torch wants writable memory.
    return torch.from_numpy(np.array(array)).to(device)


class Variant(nn.Module):
    """A trainable variant: its heads (and, for naive-te, the text tower).

    :param spec: the linker spec (architecture, head options, item text template).
    :param dim: embedding size.
    :param inputs: the cached embeddings.
    :param backbone: the open_clip backbone (naive-te trains its text tower).
    :param item_texts: rendered item texts in label-set order (naive-te only).
    """

    def __init__(self, spec: LinkerSpec, dim: int, inputs: FrozenInputs, backbone: Any = None,
                 item_texts: Optional[Sequence[str]] = None) -> None:
        super().__init__()
        if spec.architecture not in ("naive", "fusion") or not spec.has_head:
            raise UsageError(f"linker {spec.name} has nothing to train (architecture {spec.architecture})")
        heads = build_heads(spec.architecture, dim, spec.head)
        assert heads is not None
        self.spec = spec
        # NaiveHeads or FusionHeads; Any so their sub-heads type-check.
        self.heads: Any = heads
        self.inputs = inputs
        self.train_text = "text_encoder" in spec.trainable
        self.backbone = backbone
        self.item_text_list = list(item_texts or [])
        if self.train_text:
            if backbone is None or not self.item_text_list:
                raise UsageError(f"linker {spec.name} trains the text encoder: it needs the backbone and item texts")
            from wikivel_bot.linker.backbone.text_tower import text_tower_parameters

            for parameter in text_tower_parameters(backbone.model):
                parameter.requires_grad_(True)

    # -- parameters ---------------------------------------------------------------------
    def parameter_groups(self, lr: float, text_lr: float, weight_decay: float) -> List[Dict[str, Any]]:
        """AdamW groups: the heads at ``lr``, the text tower (naive-te) at ``text_lr``."""
        groups = [{"params": list(self.heads.parameters()), "lr": lr, "weight_decay": weight_decay}]
        if self.train_text:
            from wikivel_bot.linker.backbone.text_tower import text_tower_parameters

            groups.append({"params": text_tower_parameters(self.backbone.model), "lr": text_lr,
                           "weight_decay": weight_decay})
        return groups

    def text_encoder_state(self) -> Optional[Dict[str, torch.Tensor]]:
        """The text tower's weights for the checkpoint (naive-te), else None."""
        if not self.train_text:
            return None
        from wikivel_bot.linker.backbone.text_tower import text_tower_state

        return text_tower_state(self.backbone.model)

    def extra_state(self) -> Dict[str, torch.Tensor]:
        """Everything trainable as one state dict (heads, and text tower for naive-te)."""
        state = {f"heads.{k}": v for k, v in self.heads.state_dict().items()}
        for k, v in (self.text_encoder_state() or {}).items():
            state[f"text.{k}"] = v
        return state

    def load_extra_state(self, state: Dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`extra_state` (resuming)."""
        self.heads.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("heads.")})
        text = {k[5:]: v for k, v in state.items() if k.startswith("text.")}
        if text:
            from wikivel_bot.linker.backbone.text_tower import load_text_tower_state

            load_text_tower_state(self.backbone.model, text)

    # -- forward ------------------------------------------------------------------------
    def encode_rows(self, files: torch.Tensor, items: torch.Tensor) -> Any:
        """(file side, item side) of a batch of rows, L2-normalised, with gradients."""
        return self.encode_files(files), self.encode_items(items)

    def encode_files(self, files: torch.Tensor) -> torch.Tensor:
        """File-side embeddings of manifest rows ``files`` (normalised)."""
        image = self.inputs.images[files].float()
        if self.spec.architecture == "naive":
            return F.normalize(self.heads.image_head(image), dim=-1)
        assert self.inputs.file_texts is not None and self.inputs.file_text_present is not None
        text = self.inputs.file_texts[files].float()
        present = torch.stack([torch.ones_like(self.inputs.file_text_present[files]),
                               self.inputs.file_text_present[files]], dim=1)
        return F.normalize(self.heads.query_head(torch.stack([image, text], dim=1), present), dim=-1)

    def encode_items(self, items: torch.Tensor) -> torch.Tensor:
        """Item-side embeddings of label-set positions ``items`` (normalised)."""
        if self.spec.architecture == "fusion":
            assert self.inputs.item_images is not None and self.inputs.item_image_present is not None
            text = self.inputs.item_texts[items].float()
            image = self.inputs.item_images[items].float()
            present = torch.stack([torch.ones_like(self.inputs.item_image_present[items]),
                                   self.inputs.item_image_present[items]], dim=1)
            return F.normalize(self.heads.entity_head(torch.stack([text, image], dim=1), present), dim=-1)
        if self.train_text:
            text = self._encode_texts([self.item_text_list[i] for i in items.tolist()])
        else:
            text = self.inputs.item_texts[items].float()
        return F.normalize(self.heads.text_head(text), dim=-1)

    def _encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        from wikivel_bot.linker.backbone.text_tower import encode_tokens

        tokens = self.backbone.tokenizer(list(texts))
        with self.backbone.autocast():
            features = encode_tokens(self.backbone, tokens, self.backbone.model)
        return F.normalize(features.float(), dim=-1)

    @torch.no_grad()
    def all_items(self, n_items: int) -> torch.Tensor:
        """Item-side embeddings of the whole label set (for ranking), in eval mode."""
        device = self.inputs.images.device
        out = []
        step = TE_ITEM_BATCH if self.train_text else 65_536
        for start in range(0, n_items, step):
            index = torch.arange(start, min(start + step, n_items), device=device)
            out.append(self.encode_items(index))
        return torch.cat(out) if out else torch.zeros((0, self.inputs.images.shape[1]), device=device)
