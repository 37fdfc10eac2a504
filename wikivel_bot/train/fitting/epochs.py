"""The epoch loop every training run shares: shuffled batches from a resumable position.

``train`` (``loop.py``, the heads) and ``train --variant cascade`` (``cascade.py``, the pair
model) differ in what one step computes and when they validate; the walk through the data is
the same and lives here once: the epoch's order drawn from ``(seed, epoch)`` (so a resumed run
sees the batches an uninterrupted one would), the position advanced after every step,
``--max-steps``, and Ctrl-C kept as a clean stop (``position.stopped``) the caller persists.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from wikivel_bot.train.fitting.state import Position


def run_epochs(
    position: Position, *, epochs: int, rows: int, batch_size: int, n_batches: int, seed: int,
    max_steps: Optional[int], step: Callable[[np.ndarray], float],
    after_batch: Optional[Callable[[int, float], None]] = None, after_epoch: Optional[Callable[[], None]] = None,
    progress: bool = False,
) -> None:
    """Run batches from ``position`` until ``epochs`` are done, ``max_steps`` or a stop.

    :param position: where the run is; advanced in place (``stopped`` says why it ended:
        ``epochs``, ``max_steps``, ``interrupted``, or what a callback set, e.g. ``early_stopping``).
    :param rows: training rows (or files) shuffled per epoch; :param batch_size: per batch.
    :param n_batches: batches per epoch (a short last one may be dropped by the caller's count).
    :param seed: the run's seed (the epoch's order is ``default_rng([seed, epoch])``).
    :param max_steps: stop after this many optimizer steps in total (None: no limit).
    :param step: one optimizer step on the given row indexes; returns the loss.
    :param after_batch: called with (the batch index just done, its loss) after the position
        moved on: logging, validation within an epoch.
    :param after_epoch: called when an epoch is complete (``position.epoch`` already counts it).
    :param progress: a progress bar per epoch.
    """
    from tqdm import tqdm

    try:
        while position.epoch < epochs and not position.stopped:
            order = np.random.default_rng([seed, position.epoch]).permutation(rows)
            bar = tqdm(total=n_batches, initial=position.batch, desc=f"epoch {position.epoch + 1}/{epochs}",
                       unit="batch", disable=not progress, leave=False)
            while position.batch < n_batches and not position.stopped:
                value = step(order[position.batch * batch_size:(position.batch + 1) * batch_size])
                position.step += 1
                done = position.batch
                position.batch += 1
                bar.update(1)
                bar.set_postfix(loss=f"{value:.4f}")
                if after_batch is not None:
                    after_batch(done, value)
                if max_steps is not None and position.step >= max_steps and not position.stopped:
                    position.stopped = "max_steps"
            bar.close()
            if position.batch >= n_batches:
                position.epoch += 1
                position.batch = 0
                if after_epoch is not None:
                    after_epoch()
        if not position.stopped:
            position.stopped = "epochs"
    except KeyboardInterrupt:
        # Ctrl-C keeps what was done: the caller's saved state lets --resume go on from this step.
        position.stopped = "interrupted"
