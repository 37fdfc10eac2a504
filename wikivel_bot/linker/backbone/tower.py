"""Start fast: the image tower exported with TorchScript, loaded without open_clip.

Importing open_clip costs about 1.7 s on the development machine (it imports torchvision,
whose ``ops`` import ``torch._dynamo``), more than everything else a warm ``suggest`` does.
A linker that needs only the image tower at query time (zero-shot and naive, once their label
index is cached) can start without it. The first start that builds such a linker on CPU
traces ``encode_image`` of the inference-ready model (reparameterized, in its precision) with
``torch.jit.trace``, freezes it, checks it against the eager model on batches of 1 and 3
images, and saves it with the preprocessing parameters (``imageprep``) and the backbone's
identity under ``<cache_dir>/towers/``. Later starts load that file with plain torch and
build the full open_clip model only if something needs it (a label index to build, a text to
encode): :class:`ExportedBackbone`.

The key covers the model config, the weights' identity, the precision and the torch and
open_clip versions, and is worked out without importing open_clip (the config is read from
its JSON file), so a stale export is never loaded. When an export fails (a model TorchScript
cannot trace, a transform this module cannot reproduce), the warning says so once and a
``.failed`` marker beside the file keeps later starts from trying again; they start the
ordinary way.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import torch

from wikivel_bot.linker.backbone.encoders import Backbone, config_digest, file_stem, model_name
from wikivel_bot.linker.backbone.imageprep import ImagePrep, from_transform, same_output, sample_images
from wikivel_bot.linker.backbone.packed import preserved_attributes, repack, unpacked
from wikivel_bot.linker.backbone.precision import PrecisionChoice, cache_identity
from wikivel_bot.linker.backbone.weights import weights_identity

log = logging.getLogger(__name__)

# 2: the traced tower computes only the class token in its last block (pooled.py); a
# format-1 tower is still right but slower, and is exported again.
# 3: bf16 MLP and attention weights packed again at load (packed.py); a format-2 tower
# would run unpacked, on the native attention path.
TOWER_FORMAT = 3
DIRECTORY = "towers"
META = "wikivel.json"
# Linker architectures whose query side is the image tower alone (fusion and the cascade
# also encode the file's text, which needs open_clip's tokenizer and text tower).
IMAGE_ONLY_QUERIES = ("zero-shot", "naive")


class ExportFailed(Exception):
    """Why an image tower cannot be exported (said once, then recorded)."""


def tower_key(model: str, pretrained: str, weights: str, precision: str) -> Optional[Dict[str, Any]]:
    """What an exported tower depends on, without open_clip; None when that cannot be told
    here (an ``hf-hub:`` model, weights only ``resolve_weights`` can find)."""
    name = model_name(model)
    config = model_config(model)
    identity = weights_identity(name, pretrained, weights)
    if config is None or identity is None:
        return None
    return {"format": TOWER_FORMAT, "model": name, "config": config_digest(config), "weights": identity,
            "precision": precision, **cache_identity(precision), "torch": torch.__version__,
            "open_clip": _open_clip_version()}


def tower_path(cache_dir: str, key: Dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return Path(cache_dir) / DIRECTORY / f"{file_stem(key['model'])}-{key['precision']}-{digest}.pt"


def model_config(model: str) -> Optional[Dict[str, Any]]:
    """open_clip's config of ``model`` (a name or a config JSON path), read without importing
    open_clip when it is not imported yet: a config path is read directly, a built-in name
    from open_clip's ``model_configs/`` directory. A name registered at run time exists only
    in a process that imported open_clip, which is then asked."""
    name = model_name(model)
    try:
        if name != model:
            return dict(json.loads(Path(model).read_text(encoding="utf-8")))
        if "open_clip" in sys.modules:
            return sys.modules["open_clip"].get_model_config(name)
        spec = importlib.util.find_spec("open_clip")
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(list(spec.submodule_search_locations)[0]) / "model_configs" / f"{name}.json"
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
    except (OSError, ValueError, TypeError):
        return None


def _open_clip_version() -> str:
    try:
        return importlib.metadata.version("open_clip_torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


class ExportedBackbone(Backbone):
    """A :class:`Backbone` whose images go through the exported tower; ``model`` and
    ``tokenizer`` build the full open_clip model on first use (``full``), so anything that
    needs more than the image tower still works, at the ordinary start's cost."""

    def __init__(self, tower: Any, prep: ImagePrep, meta: Dict[str, Any], choice: PrecisionChoice,
                 full: Callable[[], Backbone]) -> None:
        self._tower = tower
        self._side = int(meta["image_size"])
        self._build_full = full
        self._full: Optional[Backbone] = None
        # Batches linked at once (parallel_batches) may all need the full model at the same
        # moment (items from outside the label set are encoded on the fly): it is built once,
        # by one of them (two torch.jit.script calls of one class at a time fail).
        self._full_lock = threading.Lock()
        super().__init__(
            model=None, preprocess=prep, tokenizer=None, model_name=meta["model"], pretrained=meta["pretrained"],
            weights=meta["weights"], random_weights=bool(meta["random_weights"]), device=torch.device("cpu"),
            embed_dim=int(meta["embed_dim"]), config_digest=meta["config_digest"], precision=choice.precision,
            precision_reason=choice.reason, input_dtype=getattr(torch, meta["input_dtype"]),
            image_batch=int(meta["image_batch"]), text_batch=int(meta["text_batch"]),
        )

    def full(self) -> Backbone:
        """The full open_clip backbone (built once, the ordinary way)."""
        if self._full is None:
            with self._full_lock:
                if self._full is None:
                    log.info("building the full %s model (something needs more than the exported image tower)",
                             self.model_name)
                    self._full = self._build_full()
        return self._full

    @property
    def model(self) -> Any:
        return self.full().model

    @model.setter
    def model(self, value: Any) -> None:
        if value is not None:  # None: the dataclass __init__; the model is built on use
            self.full().model = value

    @property
    def tokenizer(self) -> Any:
        return self.full().tokenizer

    @tokenizer.setter
    def tokenizer(self, value: Any) -> None:
        if value is not None:
            self.full().tokenizer = value

    @property
    def image_size(self) -> int:
        return self._side

    def encode_image(self, batch: torch.Tensor) -> torch.Tensor:
        # The plain interpreter: the optimizing executor's profiling runs and fusion
        # compile cost seconds on the first calls, more than a whole suggest.
        with torch.jit.optimized_execution(False):
            return self._tower(batch)

    def __repr__(self) -> str:  # the dataclass repr would build the full model
        return f"<ExportedBackbone {self.model_name} {self.precision} {self.weights}>"


def load_tower(key: Optional[Dict[str, Any]], cache_dir: str, choice: PrecisionChoice, threads: int,
               full: Callable[[], Backbone]) -> Optional[ExportedBackbone]:
    """The exported tower for ``key`` when one is cached and readable, else None.

    :param key: from :func:`tower_key`.
    :param full: builds the full backbone when something needs it.
    """
    if key is None or not cache_dir:
        return None
    path = tower_path(cache_dir, key)
    if not path.is_file():
        return None
    if choice.precision == "int8":
        from wikivel_bot.linker.backbone.fastpath import select_quantized_engine

        select_quantized_engine()  # the packed int8 weights are rebuilt for it at load
    extra = {META: ""}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TorchScript's deprecation notice
            tower = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        meta = json.loads(extra[META])
        if meta.get("key") != key:
            raise ValueError("its key does not match")
        repack(tower)
        prep = ImagePrep.from_dict(meta["preprocess"])
        backbone = ExportedBackbone(tower, prep, meta, choice, full)
    except (OSError, RuntimeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.info("exported image tower %s unusable (%s); starting the ordinary way", path, exc)
        return None
    if threads > 0:
        torch.set_num_threads(threads)
    return backbone


def export_tower(backbone: Backbone, key: Optional[Dict[str, Any]], cache_dir: str) -> Optional[Path]:
    """Export ``backbone``'s image tower for later starts, unless done or failed before.

    :param backbone: inference-ready (precision applied), on CPU.
    :returns: the file written, or None.
    """
    if key is None or not cache_dir or backbone.device.type != "cpu" or isinstance(backbone, ExportedBackbone):
        return None
    path = tower_path(cache_dir, key)
    marker = path.with_suffix(".failed")
    if path.is_file() or marker.is_file():
        return None
    try:
        tower, prep = _export(backbone)
    except ExportFailed as exc:
        reason = str(exc)
        log.warning("fast start is not available for %s in %s: %s; it starts the ordinary way "
                    "(not tried again: remove %s to retry)", backbone.model_name, backbone.precision, reason, marker)
        _write(marker, lambda tmp: tmp.write_text(f"{reason}\n", encoding="utf-8"))
        return None
    meta = {
        "key": key, "preprocess": prep.to_dict(), "image_size": backbone.image_size, "model": backbone.model_name,
        "pretrained": backbone.pretrained, "weights": backbone.weights, "random_weights": backbone.random_weights,
        "embed_dim": backbone.embed_dim, "config_digest": backbone.config_digest,
        "input_dtype": str(backbone.input_dtype).split(".")[-1], "image_batch": backbone.image_batch,
        "text_batch": backbone.text_batch,
    }
    files = {META: json.dumps(meta, sort_keys=True)}
    return path if _write(path, lambda tmp: _save(tower, tmp, files)) else None


def _save(tower: Any, tmp: Path, files: Dict[str, str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(tower, str(tmp), _extra_files=files)


def _write(path: Path, write: Callable[[Path], Any]) -> bool:
    """Write through a temporary file and rename, so a reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
        return True
    except OSError as exc:  # a read-only cache only costs later starts their speed
        log.info("cannot write %s: %s", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False


class _ImageTower(torch.nn.Module):
    """``encode_image`` as a module's ``forward`` (what ``torch.jit.trace`` records)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(images)


def _export(backbone: Backbone) -> Tuple[Any, ImagePrep]:
    """The frozen traced tower and the preprocessing, both checked against the originals.

    :raises ExportFailed: anything that would make the export differ from the eager path.
    """
    prep, why = from_transform(backbone.preprocess)
    if prep is None:
        raise ExportFailed(f"its image preprocessing needs torchvision ({why})")
    images = sample_images(backbone.image_size)
    if not same_output(prep, backbone.preprocess, images):
        raise ExportFailed("its image preprocessing differs from torchvision's on the sample images")
    inputs = torch.stack([prep(image) for image in images]).to(backbone.input_dtype)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # TorchScript's deprecation and tracer notices
            # Packed bf16 weights cannot be saved: the export records the plain ones and
            # keeps what repack() needs at load (packed.py).
            visual = getattr(backbone.model, "visual", None)
            image_side = preserved_attributes(visual, "model.visual.") if visual is not None else []
            with unpacked(backbone.model):
                traced = torch.jit.trace(_ImageTower(backbone.model).eval(), inputs[:2], check_trace=False)
                tower = torch.jit.freeze(traced, preserved_attrs=image_side)
    except Exception as exc:  # noqa: BLE001 - third-party model code can fail to trace in any way
        raise ExportFailed(f"TorchScript cannot trace it ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
    # Other batch sizes than the traced one: a shape baked into the trace shows up here.
    for batch in (inputs[:1], inputs[2:5]):
        with torch.inference_mode(), torch.jit.optimized_execution(False):
            want = backbone.model.encode_image(batch).float()
            got = tower(batch).float()
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            raise ExportFailed(f"the traced tower differs from the model on a batch of {len(batch)}")
    return tower, prep
