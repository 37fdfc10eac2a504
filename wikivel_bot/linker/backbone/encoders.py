"""The CLIP backbone from open_clip: building it, and encoding images in batches.

On CUDA the encoders run under bf16 (fp16 where bf16 is missing) autocast with large batches
and pinned host memory; on CPU in the backbone's precision (fp32 by default; bf16 weights or
int8 linear layers after ``fastpath.apply_precision``) with the configured thread count. Every
path returns fp32, L2-normalised embeddings so the heads and the index see the same thing.

open_clip is imported where a model or tokenizer is built, not with this module: a start
that runs the exported image tower (``tower.py``) never needs it. The text side (tokens,
label-index texts, the text tower's weights) is in ``text_tower.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.backbone.weights import RANDOM_SEED, WeightsSource, resolve_weights

log = logging.getLogger(__name__)

# Texts encoded per batch when building a label index (short texts, so large batches); used
# by text_tower.encode_texts, kept here beside the Backbone whose ``text_batch`` defaults to it.
TEXT_BATCH_CPU = 256
TEXT_BATCH_CUDA = 1024
# Images per batch on CUDA when Settings ask for fewer (a GPU idles on CPU-sized batches).
IMAGE_BATCH_CUDA = 256


@dataclass
class Backbone:
    """A loaded open_clip model with its preprocessing and tokenizer.

    :param model: the ``open_clip`` CLIP model, in eval mode, on ``device``.
    :param preprocess: the inference transform (PIL image -> tensor).
    :param tokenizer: open_clip tokenizer (pads to ``context_length``).
    :param model_name: open_clip architecture name.
    :param pretrained: the tag the weights claim to be ('' for random weights).
    :param weights: :class:`WeightsSource` identity (tag, file fingerprint, or random).
    :param random_weights: no trained weights were loaded.
    :param device: torch device.
    :param embed_dim: size of the joint embedding space.
    :param config_digest: hash of the open_clip model config (a changed custom config must
        not reuse an old label index).
    :param precision: ``fp32``, ``bf16`` or ``int8`` (set by ``fastpath.apply_precision``).
    :param precision_reason: why that precision (for outputs).
    :param input_dtype: dtype the image batches are cast to before the forward pass.
    :param image_batch: images per forward pass on CPU (0 = the caller's batch size).
    :param text_batch: texts per forward pass on CPU (0 = :data:`TEXT_BATCH_CPU`).
    """

    model: Any
    preprocess: Any
    tokenizer: Any
    model_name: str
    pretrained: str
    weights: str
    random_weights: bool
    device: torch.device
    embed_dim: int
    config_digest: str
    precision: str = "fp32"
    precision_reason: str = "default"
    input_dtype: torch.dtype = torch.float32
    image_batch: int = 0
    text_batch: int = 0
    # (preprocess, its input_steps), worked out once: prepare_image runs for every image.
    steps_cache: Optional[Tuple[Any, Any]] = field(default=None, repr=False, compare=False)

    @property
    def on_cuda(self) -> bool:
        return self.device.type == "cuda"

    def autocast(self) -> Any:
        """bf16/fp16 autocast on CUDA; a no-op on CPU (fp32 is the reference there)."""
        if not self.on_cuda:
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)

    @property
    def image_size(self) -> int:
        size = self.model.visual.image_size
        return int(size[0] if isinstance(size, (tuple, list)) else size)

    def encode_image(self, batch: torch.Tensor) -> torch.Tensor:
        """Unnormalised image features of a prepared batch (the exported tower overrides this)."""
        return self.model.encode_image(batch)


def resolve_device(name: str) -> torch.device:
    """``auto`` = CUDA when present, else CPU; anything else must be a usable torch device.

    :raises LinkerError: an unknown device name, or CUDA asked for where there is none.
    """
    if name in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise LinkerError(f"unknown device {name!r} (use auto, cpu, cuda or cuda:N)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise LinkerError(f"device {name!r} asked for, but CUDA is not available here (use --device cpu)")
    return device


def model_name(model: str) -> str:
    """The architecture name of ``model``: itself, or the stem of a model config JSON path."""
    path = Path(model)
    return path.stem if model.endswith(".json") and path.is_file() else model


def config_digest(config: Any) -> str:
    """Short hash of an open_clip model config (``Backbone.config_digest``)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def file_stem(name: str) -> str:
    """``name`` with every character unsafe in a file name replaced (cache file names)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def register_model_file(model: str) -> str:
    """Allow ``model`` to be a path to an open_clip model config JSON; returns its name."""
    name = model_name(model)
    if name != model:
        import open_clip

        open_clip.add_model_config(Path(model))
    return name


def load_backbone(
    model: str, pretrained: str = "", weights: str = "", device: str = "auto", threads: int = 0
) -> Backbone:
    """Build the open_clip model, its transform and tokenizer.

    :param model: architecture name (``ViT-B-32``) or a path to a model config JSON.
    :param pretrained: pretrained tag; ignored when ``weights`` is set.
    :param weights: '' (use the tag), a local checkpoint path, or ``random``.
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``...
    :param threads: CPU threads for torch (0 = leave torch's default).
    :raises LinkerError: unknown architecture, missing weights (with instructions), bad device.
    """
    import open_clip

    model = register_model_file(model)
    config = open_clip.get_model_config(model)
    if config is None:
        raise LinkerError(f"unknown open_clip model {model!r} (see open_clip.list_models())")
    torch_device = resolve_device(device)
    if threads > 0 and torch_device.type == "cpu":
        torch.set_num_threads(threads)
    source = resolve_weights(model, pretrained, weights)
    net, preprocess = _create(model, source)
    net = net.to(torch_device).eval()
    for parameter in net.parameters():
        parameter.requires_grad_(False)
    return Backbone(
        model=net,
        preprocess=preprocess,
        tokenizer=LazyTokenizer(model),
        model_name=model,
        pretrained="" if source.random else pretrained,
        weights=source.identity,
        random_weights=source.random,
        device=torch_device,
        embed_dim=int(config["embed_dim"]),
        config_digest=config_digest(config),
    )


class LazyTokenizer:
    """open_clip's tokenizer for ``model``, built on first use (linking images with a cached
    index never tokenizes anything, and building the BPE tables costs a noticeable start-up)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._tokenizer: Any = None

    def _get(self) -> Any:
        if self._tokenizer is None:
            import open_clip

            self._tokenizer = open_clip.get_tokenizer(self.model)
        return self._tokenizer

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._get()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def _create(model: str, source: WeightsSource) -> Any:
    import open_clip

    kwargs = dict(source.preprocess or {})
    if source.quick_gelu:
        kwargs["force_quick_gelu"] = True
    try:
        if source.random:
            # A fixed seed in a forked RNG: the same random model in every process, and the
            # caller's RNG state untouched.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(RANDOM_SEED)
                with _quiet_open_clip():
                    net, _, preprocess = open_clip.create_model_and_transforms(model, pretrained=None)
        else:
            net, _, preprocess = open_clip.create_model_and_transforms(model, pretrained=source.pretrained, **kwargs)
    except LinkerError:
        raise
    except (RuntimeError, FileNotFoundError, OSError) as exc:
        raise LinkerError(f"cannot load {model} weights ({source.identity}): {exc}") from None
    return net, preprocess


@contextlib.contextmanager
def _quiet_open_clip() -> Iterator[None]:
    # open_clip logs "Model initialized randomly" at WARNING on the root logger; with random
    # weights that is what was asked for, and our own outputs already say so.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def image_batch_size(backbone: Backbone, requested: int) -> int:
    """Images per linking batch: the setting on CPU, at least :data:`IMAGE_BATCH_CUDA` on CUDA."""
    return max(requested, IMAGE_BATCH_CUDA) if backbone.on_cuda else max(requested, 1)


def prepare_image(backbone: Backbone, image: Any) -> torch.Tensor:
    """The model's input tensor (3, H, W) for one PIL image (thread-safe; runs in a pool).

    Through :func:`input_steps` where they reproduce the backbone's transform bit for bit:
    torchvision's last steps run in torch, whose small element-wise operations called from
    a decode thread start an OpenMP team of their own (see ``ImagePrep.finish``).
    """
    steps = checked_input_steps(backbone)
    return steps.finish(steps.geometry(image)) if steps is not None else backbone.preprocess(image)


_STEPS_LOCK = threading.Lock()


def checked_input_steps(backbone: Backbone) -> Optional["InputSteps"]:
    """:func:`input_steps` of the backbone, checked once and then remembered on it."""
    def current() -> bool:  # worked out, and for the transform the backbone has now
        return backbone.steps_cache is not None and backbone.steps_cache[0] is backbone.preprocess

    if not current():
        with _STEPS_LOCK:  # the decode threads ask at once for the first batch
            if not current():
                backbone.steps_cache = (backbone.preprocess, input_steps(backbone))
    assert backbone.steps_cache is not None
    return backbone.steps_cache[1]


@dataclass(frozen=True)
class InputSteps:
    """The backbone's preprocessing cut in two where the pixels become a tensor.

    :param geometry: PIL -> PIL at the model's input size (resize, crop, RGB): the costly
        part, which a CPU stage can run far from the model (its uint8 output is 4x smaller
        than the float32 tensor).
    :param finish: PIL -> the model's input tensor (to tensor, normalise): cheap and exact.
    :param fingerprint: the two parts' parameters; equal fingerprints mean
        ``finish(geometry(image))`` is what ``backbone.preprocess(image)`` gives.
    """

    geometry: Any
    finish: Any
    fingerprint: str


def input_steps(backbone: Backbone) -> Optional[InputSteps]:
    """:class:`InputSteps` of the backbone's preprocessing; None when it is not one that
    ``imageprep`` reproduces exactly (then only the whole transform can run).

    The steps come from :class:`~wikivel_bot.linker.backbone.imageprep.ImagePrep` whether the backbone
    is the full open_clip model (its torchvision transform, read and checked bit for bit) or
    an exported tower (which carries its ImagePrep), so both give the same fingerprint: a
    backfill's driver and its actors may hold either.
    """
    from wikivel_bot.linker.backbone.imageprep import ImagePrep, from_transform, same_output, sample_images

    prep = backbone.preprocess
    if not isinstance(prep, ImagePrep):
        prep, _ = from_transform(backbone.preprocess)
        if prep is None or not same_output(prep, backbone.preprocess, sample_images(backbone.image_size)):
            return None
    return InputSteps(prep.geometry, prep.finish, repr(prep.to_dict()))


def images_to_tensor(backbone: Backbone, images: Sequence[Any]) -> torch.Tensor:
    """Preprocess PIL images (or take already prepared tensors) into one batch on the device."""
    batch = torch.stack([x if isinstance(x, torch.Tensor) else backbone.preprocess(x) for x in images])
    if backbone.on_cuda:
        # Pinned memory lets the copy overlap with compute (non_blocking).
        batch = batch.pin_memory()
    return batch.to(backbone.device, dtype=backbone.input_dtype, non_blocking=True)


@torch.inference_mode()
def encode_images(backbone: Backbone, images: Sequence[Any], batch_size: int = 32) -> torch.Tensor:
    """Normalised fp32 image embeddings, shape (len(images), embed_dim), on the device.

    :param images: PIL images, or tensors from :func:`prepare_image`.
    :param batch_size: images per forward pass; on CPU the precision's own batch size
        (``backbone.image_batch``) wins when set.
    """
    out = []
    size = image_batch_size(backbone, batch_size)
    if not backbone.on_cuda and backbone.image_batch:
        size = backbone.image_batch
    for start in range(0, len(images), size):
        batch = images_to_tensor(backbone, images[start:start + size])
        with backbone.autocast():
            features = backbone.encode_image(batch)
        out.append(F.normalize(features.float(), dim=-1))
    if not out:
        return torch.zeros((0, backbone.embed_dim), device=backbone.device)
    return torch.cat(out)


def query_rows(queries: Sequence[Any], key: Any, compute: Callable[[List[Any]], torch.Tensor]) -> torch.Tensor:
    """One row per query, computed only for the queries whose ``cache`` lacks ``key``.

    :param queries: ``base.Query`` objects (their ``cache`` dicts keep the rows).
    :param key: what the row is (e.g. ``("image", id(backbone))``).
    :param compute: rows (n, d) for a list of queries, in order.
    """
    missing = [q for q in queries if key not in q.cache]
    if missing:
        for query, row in zip(missing, compute(missing)):
            query.cache[key] = row
    return torch.stack([q.cache[key] for q in queries])


def query_images(backbone: Backbone, queries: Sequence[Any], batch_size: int = 32) -> torch.Tensor:
    """:func:`encode_images` of the queries' images, each image encoded once per backbone
    (a linker and the verifier that shares its backbone get the same rows)."""
    if not queries:
        return torch.zeros((0, backbone.embed_dim), device=backbone.device)
    return query_rows(queries, ("image", id(backbone)),
                      lambda todo: encode_images(backbone, [q.image for q in todo], batch_size))
