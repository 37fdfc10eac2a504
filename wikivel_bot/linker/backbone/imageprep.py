"""The model's image preprocessing without torchvision: resize, centre crop, RGB, tensor, normalise.

open_clip's inference transform is a torchvision ``Compose``, and importing torchvision costs
about a second of every start (its ``ops`` import ``torch._dynamo``). The exported image tower
(``tower.py``) runs without it: :func:`from_transform` reads the parameters of a transform it
can reproduce exactly — a shortest-side or squash ``Resize`` (bicubic or bilinear, no
``max_size``), an optional ``CenterCrop`` that needs no padding, conversion to RGB,
``ToTensor`` and ``Normalize`` in open_clip's order — and :func:`same_output` checks on sample
images that both give the same tensor, bit for bit. Any other transform keeps torchvision.

Each step does what torchvision does on a PIL image (``transforms/functional.py``): the same
output size rule, ``Image.resize`` with the same filter (skipped when the size is already
right), the same crop box rounding, uint8 to float by dividing by 255, then ``(x - mean) / std``.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from PIL import Image

# torchvision's InterpolationMode values -> Pillow filters (its ``pil_modes_mapping``).
FILTERS = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR}


@dataclass(frozen=True)
class ImagePrep:
    """A reproducible inference transform; call it on a PIL image for a (3, H, W) tensor.

    :param resize: ``(side,)``: the shorter side becomes ``side``, keeping the aspect ratio;
        ``(height, width)``: squashed to that size.
    :param interpolation: ``bicubic`` or ``bilinear``.
    :param crop: ``(height, width)`` of the centre crop, or ``()`` for none.
    :param mean: per-channel mean subtracted after scaling to [0, 1].
    :param std: per-channel divisor.
    """

    resize: Tuple[int, ...]
    interpolation: str
    crop: Tuple[int, ...]
    mean: Tuple[float, ...]
    std: Tuple[float, ...]

    def __call__(self, image: Any) -> torch.Tensor:
        return self.finish(self.geometry(image))

    def geometry(self, image: Any) -> Any:
        """PIL -> PIL at the model's input size: resize, centre crop, RGB (the costly part)."""
        image = self._resized(image)
        if self.crop:
            height, width = self.crop
            top = int(round((image.size[1] - height) / 2.0))
            left = int(round((image.size[0] - width) / 2.0))
            image = image.crop((left, top, left + width, top + height))
        if image.mode != "RGB":
            image = image.convert("RGB")
        return image

    def finish(self, image: Any) -> torch.Tensor:
        """An RGB PIL image from :meth:`geometry` -> the (3, H, W) tensor, normalised.

        In numpy, not torch: this runs in the decode threads, and torch would split each of
        these small element-wise steps over its own OpenMP team per calling thread, whose
        start-up and spin-waiting cost more than the arithmetic and take the cores from the
        model's forward pass (``bench/linker.py``; docs/benchmarks.md, "Concurrent batches and
        packed bf16 weights"). The same IEEE float operations in the same order as
        torchvision's, so the same bits (``same_output`` checks it).
        """
        dtype = np.dtype(str(torch.get_default_dtype()).split(".")[-1])
        pixels = np.asarray(image, dtype=np.uint8).reshape(image.size[1], image.size[0], 3)
        planes = np.ascontiguousarray(pixels.transpose(2, 0, 1)).astype(dtype)
        planes /= dtype.type(255)
        planes -= np.asarray(self.mean, dtype=dtype).reshape(-1, 1, 1)
        planes /= np.asarray(self.std, dtype=dtype).reshape(-1, 1, 1)
        return torch.from_numpy(planes)

    def _resized(self, image: Any) -> Any:
        width, height = image.size
        if len(self.resize) == 1:
            short, long = (width, height) if width <= height else (height, width)
            new_short, new_long = self.resize[0], int(self.resize[0] * long / short)
            new_w, new_h = (new_short, new_long) if width <= height else (new_long, new_short)
        else:
            new_h, new_w = self.resize
        if (new_w, new_h) == (width, height):
            return image
        return image.resize((new_w, new_h), FILTERS[self.interpolation])

    def to_dict(self) -> Dict[str, Any]:
        return {"resize": list(self.resize), "interpolation": self.interpolation, "crop": list(self.crop),
                "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "ImagePrep":
        """:raises ValueError: not a dict from :meth:`to_dict`."""
        try:
            prep = cls(tuple(int(x) for x in doc["resize"]), str(doc["interpolation"]),
                       tuple(int(x) for x in doc["crop"]), tuple(float(x) for x in doc["mean"]),
                       tuple(float(x) for x in doc["std"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an image preprocessing description: {exc}") from None
        if prep.interpolation not in FILTERS or len(prep.resize) not in (1, 2) or len(prep.crop) not in (0, 2):
            raise ValueError(f"not an image preprocessing description: {doc}")
        return prep


def from_transform(transform: Any) -> Tuple[Optional[ImagePrep], str]:
    """The :class:`ImagePrep` equivalent to a torchvision ``Compose``, or (None, why not).

    Steps are recognised by class name and attributes, so this module never imports
    torchvision; :func:`same_output` is the check that the reading was right.
    """
    steps = list(getattr(transform, "transforms", None) or [])
    names = [step.__name__ if isinstance(step, types.FunctionType) else type(step).__name__ for step in steps]
    convert = ("MaybeConvertMode", "_convert_to_rgb")
    tensor = ("MaybeToTensor", "ToTensor")
    if len(steps) not in (4, 5) or names[0] != "Resize" or names[-3] not in convert or names[-2] not in tensor \
            or names[-1] != "Normalize" or (len(steps) == 5 and names[1] != "CenterCrop"):
        return None, f"transform steps {names} are not resize, [centre crop], RGB, tensor, normalise"
    resize, normalize = steps[0], steps[-1]
    if getattr(steps[-3], "mode", "RGB") != "RGB":
        return None, f"converts images to {steps[-3].mode}, not RGB"
    if getattr(resize, "max_size", None) is not None:
        return None, "Resize with max_size"
    interpolation = str(getattr(getattr(resize, "interpolation", None), "value", ""))
    if interpolation not in FILTERS:
        return None, f"interpolation {interpolation or resize.interpolation!r}"
    size = resize.size
    side = (int(size),) if isinstance(size, int) else tuple(int(s) for s in size)
    crop: Tuple[int, ...] = ()
    if len(steps) == 5:
        crop = tuple(int(s) for s in steps[1].size)
        smallest = (side[0], side[0]) if len(side) == 1 else side
        if len(crop) != 2 or crop[0] > smallest[0] or crop[1] > smallest[1]:
            return None, f"centre crop {crop} larger than the resized image {side} (padding)"
    if len(side) not in (1, 2):
        return None, f"resize size {size!r}"
    try:
        mean = tuple(float(x) for x in normalize.mean)
        std = tuple(float(x) for x in normalize.std)
    except TypeError:
        return None, "Normalize mean/std are not sequences"
    if len(mean) != 3 or len(std) != 3 or getattr(normalize, "inplace", False):
        return None, f"Normalize mean {normalize.mean!r}, std {normalize.std!r}"
    return ImagePrep(side, interpolation, crop, mean, std), ""


def sample_images(side: int) -> List[Any]:
    """Images of the shapes a transform treats differently (landscape, portrait, exact size,
    smaller than the model, odd sizes, grey and RGBA), with deterministic pixels."""
    rng = np.random.default_rng(0)
    # The short side already right and the long one 3 or 7 over: no resize, and a crop offset
    # of 1.5 or 3.5 pixels, where rounding (not flooring) matters.
    shapes = [(side * 3 // 2 + 1, side + 3), (side - 5, side * 2 + 7), (side, side), (side + 3, side), (side, side + 7),
              (17, 9), (3, 5)]
    images = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in shapes]
    images.append(Image.fromarray(rng.integers(0, 256, (side + 9, side + 2), dtype=np.uint8)))  # L
    images.append(Image.fromarray(rng.integers(0, 256, (side + 4, side + 1, 4), dtype=np.uint8)))  # RGBA
    return images


def same_output(prep: ImagePrep, transform: Any, images: Sequence[Any]) -> bool:
    """Whether ``prep`` and ``transform`` give identical tensors on every image."""
    return all(torch.equal(prep(image), transform(image)) for image in images)
