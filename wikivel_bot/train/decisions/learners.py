"""What a learning round trains, by the running linker's kind (docs/learning.md).

A round (``learning.cycle``) does the same five things whatever runs: encode the decision
records, fine-tune a challenger from the running model, calibrate each model on its own
suggestions, judge both on later files, save the challenger. Only the trainable part differs:

* :class:`HeadsLearner` — zero-shot, naive-mlp, naive-te: Naive CLIP's two heads
  (``train.decisions.heads``);
* :class:`PairLearner` — the cascade: its pair model, the first stage frozen
  (``train.decisions.pair``).

Fusion is refused in one line: its trainer needs the full dataset.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.errors import LinkerError
from wikivel_bot.train.decisions.heads import Platt


@dataclass
class HeadsLearner:
    """Naive CLIP's heads over the running linker's frozen embeddings."""

    linker: Any
    champion: Any
    running: Optional[Any]
    kind: str = "heads"

    def encode(self, records: Sequence[Any], data_dir: Path) -> Any:
        from wikivel_bot.train.decisions.heads import encode_records

        return encode_records(records, data_dir, self.linker.backbone, self.linker.spec.item_text)

    def fine_tune(self, data: Any, epochs: int, lr: float, seed: int) -> Any:
        from wikivel_bot.train.decisions.heads import FineTuneConfig, fine_tune

        return fine_tune(self.champion, data, FineTuneConfig(epochs=epochs, lr=lr, seed=seed))

    def calibrate(self, model: Any, data: Any, top_k: int) -> Optional[Platt]:
        from wikivel_bot.train.decisions.own_suggestions import calibrate_own

        return calibrate_own(model, data, top_k)

    def judged(self, model: Any, data: Any, platt: Platt, top_k: int) -> List[Tuple[int, List[float], List[bool], List[bool]]]:
        from wikivel_bot.train.decisions.own_suggestions import judged_files

        return judged_files(model, data, platt, top_k)

    def save(self, path: Path, model: Any, platt: Optional[Platt], labelset_hash: str, extra: Dict[str, Any]) -> Path:
        from wikivel_bot.train.decisions.heads import save_challenger

        return save_challenger(path, self.linker, model, labelset_hash, extra)


@dataclass
class PairLearner:
    """The cascade's pair model over its frozen first stage and embeddings."""

    linker: Any
    champion: Any
    running: Optional[Any]
    kind: str = "pair model"

    def encode(self, records: Sequence[Any], data_dir: Path) -> Any:
        from wikivel_bot.train.decisions.pair import encode_pair_records

        return encode_pair_records(records, data_dir, self.linker)

    def fine_tune(self, data: Any, epochs: int, lr: float, seed: int) -> Any:
        from wikivel_bot.train.decisions.pair import PairTuneConfig, fine_tune_pair

        start = self.champion
        if self.running is None:
            # An untrained pair model has no standardisation yet (linker.cascade.pair): take
            # it from these files and items, as `train --variant cascade` takes it from its data.
            start = copy.deepcopy(start)
            start.set_statistics(data.files, data.text[data.present], data.items,
                                 data.item_image[data.item_image_present])
        return fine_tune_pair(start, data, PairTuneConfig(epochs=epochs, lr=lr, seed=seed))

    def calibrate(self, model: Any, data: Any, top_k: int) -> Optional[Platt]:
        from wikivel_bot.train.decisions.pair import calibrate_own_pair

        return calibrate_own_pair(model, data, top_k)

    def judged(self, model: Any, data: Any, platt: Platt, top_k: int) -> List[Tuple[int, List[float], List[bool], List[bool]]]:
        from wikivel_bot.train.decisions.pair import judged_pair_files

        return judged_pair_files(model, data, platt, top_k)

    def save(self, path: Path, model: Any, platt: Optional[Platt], labelset_hash: str, extra: Dict[str, Any]) -> Path:
        """A cascade checkpoint: the running one's first stage and settings, the new pair
        weights, and as the verifier's calibration the same Platt map (on ``z``); None: the
        calibration files gave no map, and the running checkpoint's stays (none when none runs)."""
        from wikivel_bot.core.verification import Calibration
        from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
        from wikivel_bot.linker.cascade.pair import pair_args
        from wikivel_bot.linker.clip import backbone_info
        from wikivel_bot.train.decisions.pair import score_calibration

        running, cascade = self.running, self.linker.cascade
        first_doc = running.first_stage if running is not None else None
        first_name = running.first_stage_linker if running is not None else cascade.first_stage
        calibration: Optional[Calibration] = None
        if platt is not None:
            calibration = Calibration.from_dict(score_calibration(platt, float(model.first_weight.detach())))
        else:
            calibration = running.calibration if running is not None else None
        return save_cascade_checkpoint(
            path, spec=running.spec if running is not None else self.linker.spec.as_dict(),
            pair=model, pair_args=running.pair_args if running is not None else pair_args(self.linker.spec.head),
            backbone=backbone_info(self.linker.backbone), labelset_hash=labelset_hash, first_stage_linker=first_name,
            first_stage=first_doc, candidates=running.candidates if running is not None else cascade.candidates,
            text_tokens=cascade.text_tokens,
            calibration=calibration, text_order=self.linker.text_order,
            item_images=running.item_images if running is not None else None, extra=extra)


def load_learner(settings: Any, cascade: Any, label_set: Callable[[], Any],
                 item_images: Optional[Callable[[], Any]] = None) -> Any:
    """The learner for the running linker (``settings``: ``LinkerSettings``, ``checkpoint``
    already resolved by the registry; ``cascade``: ``CascadeSettings``).

    :param label_set: the label set in use, asked only for the cascade (it attaches one).
    :param item_images: P18 images for a cascade whose pair model was fitted with them.
    :raises LinkerError: a linker this round cannot train (one line).
    """
    from wikivel_bot.linker.spec import get_spec

    spec = get_spec(settings.name)
    if spec.architecture == "cascade":
        return _pair_learner(spec, settings, cascade, label_set, item_images)
    if spec.architecture == "zero-shot":
        # Zero-shot is Naive CLIP with identity heads (heads.py): start there, untrained, and
        # the challenger is a naive-mlp head over the very same embeddings.
        spec, settings = get_spec("naive-mlp"), dataclasses.replace(settings, checkpoint="")
    if spec.architecture != "naive":
        raise LinkerError(f"learning from decisions updates Naive CLIP heads (zero-shot, naive-mlp, naive-te) and "
                          f"the cascade's pair model; linker {spec.name!r} is {spec.architecture}")
    from wikivel_bot.linker.clip import build_clip_linker

    linker = build_clip_linker(spec, settings)
    return HeadsLearner(linker, copy.deepcopy(linker.heads).float().cpu().eval(), linker.checkpoint)


def _pair_learner(spec: Any, settings: Any, cascade: Any, label_set: Callable[[], Any],
                  item_images: Optional[Callable[[], Any]]) -> PairLearner:
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint
    from wikivel_bot.linker.cascade.linker import build_cascade_linker

    fitted_with_images = False
    if settings.checkpoint:
        fitted_with_images = load_cascade_checkpoint(settings.checkpoint).fitted_with_item_images
    if fitted_with_images and item_images is None:
        raise LinkerError("the running cascade's pair model was fitted with item images (P18) and there is no item "
                          "image source here to train it as it runs")
    loader = item_images() if fitted_with_images and item_images is not None else None
    linker = build_cascade_linker(spec, dataclasses.replace(settings, verifier=""), cascade,
                                  item_image_loader=loader)
    linker.attach(label_set(), settings.cache_dir)
    champion = copy.deepcopy(linker.pair).float().cpu().eval()
    return PairLearner(linker, champion, linker.checkpoint)
