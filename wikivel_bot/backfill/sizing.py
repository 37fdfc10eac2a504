"""How many linker actors a backfill runs, and how much of a CPU each is given.

Ray places work by the resources each actor and task asks for, not by what it uses. The
linker actors and the tasks that feed them (read, resolve, download, decode; their shares are
``IO_CPU`` and ``DECODE_CPU`` in ``pipeline``) must fit the cluster together, or the run
waits forever: on one CPU an actor holding a whole CPU left none for the tasks.
"""

from __future__ import annotations

from typing import Tuple

from wikivel_bot.errors import UsageError

# What the stages besides the model need to move at all: a read, a resolve and a download
# task (0.1 CPU each) and a decode task (0.25), rounded up.
OTHER_STAGES_CPU = 0.6


def size_actors(cpus: float, gpus: int, asked: int) -> Tuple[int, float]:
    """How many linker actors, and the CPUs each one is given, for a cluster's resources.

    The read, resolve, download and decode tasks need :data:`OTHER_STAGES_CPU` of a CPU
    between them to move at all. With two CPUs or more an actor holds a whole CPU and one
    CPU's worth is left to those stages; with a single CPU (a small Toolforge job) the one
    actor gets what they leave of it. Ray only places work by these numbers: an actor that
    held the only CPU left none for the tasks that feed it, and the run never ended.

    :param cpus: the cluster's CPUs (``--num-cpus`` for a local Ray).
    :param gpus: its GPUs: one per actor.
    :param asked: ``backfill.actors`` (``--actors``); 0 = one per GPU, else one per two CPUs.
    :raises UsageError: more actors asked for than the GPUs or CPUs can hold.
    """
    room = cpus - OTHER_STAGES_CPU
    if gpus:
        actors = asked or gpus
        if actors > gpus:
            raise UsageError(f"{actors} linker actors need a GPU each and this Ray has {gpus} GPUs: "
                             f"ask for at most {gpus} (--actors / backfill.actors)")
        return actors, round(min(1.0, max(0.0, room) / actors), 3)
    fits = max(1, int(cpus) - 1)  # whole CPUs for the model, one left to the other stages
    actors = asked or max(1, int(cpus) // 2)
    if actors > fits:
        plural = "CPU" if cpus == 1 else "CPUs"
        raise UsageError(f"{actors} linker actors cannot run on {cpus:g} {plural} (one CPU's worth is kept for "
                         f"reading, downloading and decoding): ask for at most {fits} (--actors / "
                         f"backfill.actors), or give Ray more CPUs (--num-cpus)")
    return actors, round(min(1.0, room / actors), 3)
