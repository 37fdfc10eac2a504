"""Resident memory that packing bf16 weights adds (``linker/backbone/packed.py``).

    .venv/bin/python bench/packed_memory.py [--model ViT-B-32]

Loads the model with random weights, converts it to bf16 as ``fastpath.apply_precision``
does, and prints the process's resident set size (``VmRSS``) before and after the MLP layers
and both towers' attention are packed. The packed copies sit beside the plain weights.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

# Replace this folder on the path by the repository root: bench/queue.py would otherwise
# shadow the standard library's `queue`, which torch imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import torch  # noqa: E402

from wikivel_bot.linker.backbone import packed  # noqa: E402
from wikivel_bot.linker.backbone.encoders import load_backbone  # noqa: E402
from wikivel_bot.linker.backbone.fastpath import sequence_first_text  # noqa: E402
from wikivel_bot.linker.backbone.pooled import class_token_only  # noqa: E402


def resident_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status (Linux only)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ViT-B-32")
    args = parser.parse_args()
    if not packed.supported():
        raise SystemExit("this CPU / torch build cannot pack bf16 weights")
    backbone = load_backbone(args.model, weights="random", device="cpu")
    sequence_first_text(backbone)  # as fastpath.apply_precision does, in its order
    backbone.model = backbone.model.to(torch.bfloat16)
    class_token_only(backbone.model)
    gc.collect()
    before = resident_mb()
    mlp = packed.pack_mlp_linears(backbone.model)
    attention = packed.pack_attention(backbone.model)
    gc.collect()
    after = resident_mb()
    print(f"{args.model} bf16: {mlp} MLP layers and {attention} attention blocks packed; "
          f"resident {before:.0f} MB -> {after:.0f} MB (+{after - before:.0f} MB)")
    print(f"command: .venv/bin/python bench/packed_memory.py --model {args.model}")


if __name__ == "__main__":
    main()
