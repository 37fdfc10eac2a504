"""Which numeric precision the encoders run in: ``auto | fp32 | bf16 | int8``.

Torch-free on purpose: ``status``, ``linkers`` and the tests decide and explain the choice
without loading a model. Applying a precision to a model lives in ``fastpath.py``.

``auto`` reads the CPU's feature flags (``/proc/cpuinfo``) rather than assuming them:

* CUDA: bf16 (autocast; the GPU path is unchanged).
* a CPU with AMX (``amx_bf16``) or AVX512-BF16 (``avx512_bf16``): bf16 weights, which oneDNN
  runs on the native bf16 dot-product instructions.
* a CPU with VNNI (``avx512_vnni`` or ``avx_vnni``): int8 dynamic quantization of the linear
  layers (int8 dot products; activations quantized per batch).
* otherwise fp32, the reference.

A precision is used by ``auto`` only while it has not failed the parity check
(``wikivel-bot linkers --check-precision``, recorded in ``<cache_dir>/precision-check.json``):
a failed precision falls back to the next one in :data:`FALLBACK` and the reason says why.
An explicitly requested precision is used as asked (the check's verdict is still reported).

The check also times each precision against fp32 on this machine. Where it did, ``auto``
follows the measurement rather than the flags: the fastest precision that passed parity and
ran at least :data:`MIN_SPEEDUP` times fp32's speed, else fp32. The flags are a guess about
speed (an AVX2-only CPU has no VNNI, yet int8 ran 1.37x fp32 there); the check is evidence.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, FrozenSet, Mapping, Optional

from wikivel_bot.errors import UsageError

PRECISIONS = ("auto", "fp32", "bf16", "int8")
# What auto tries next when a precision failed its parity check.
FALLBACK = {"bf16": "int8", "int8": "fp32"}
BF16_FLAGS = ("amx_bf16", "avx512_bf16")
INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni")
# The flags worth naming in outputs and benchmarks (the rest of /proc/cpuinfo is noise here).
NAMED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
CHECK_FILE = "precision-check.json"
# Parity gates: top-10 lists identical on at least this share of files, and cosine to fp32
# at least this (the bars bf16 and int8 must clear against fp32 before auto may pick them).
MIN_TOP10_AGREEMENT = 0.95
MIN_COSINE = 0.999
# How int8 weights are quantized: one scale per output channel of each linear layer (see
# ``fastpath.quantize_int8``). Part of the cache keys of int8 indexes and towers, so a cache
# made with another scheme is rebuilt rather than mixed with this one's embeddings.
INT8_WEIGHTS = "per-channel"
# A measured precision must beat fp32 by this much to be worth its rounding (and to stay
# ahead of the noise of one timed round on a shared machine).
MIN_SPEEDUP = 1.1


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision the encoders run in, and why.

    :param precision: ``fp32``, ``bf16`` or ``int8``.
    :param requested: what the setting asked for (``auto`` or a precision).
    :param reason: one line for ``suggest``, ``status`` and the event lines.
    """

    precision: str
    requested: str
    reason: str

    def __str__(self) -> str:
        return f"{self.precision} ({self.reason})"


def cache_identity(precision: str) -> Dict[str, str]:
    """What a cache key needs beyond the precision's name ({} but for int8: its quantization
    scheme; keys of the other precisions stay as they were, and so do their caches)."""
    return {"int8_weights": INT8_WEIGHTS} if precision == "int8" else {}


def validate(requested: str) -> str:
    """The setting's value, lower-cased, or a one-line error naming it.

    :raises UsageError: not one of :data:`PRECISIONS`.
    """
    value = (requested or "auto").strip().lower()
    if value not in PRECISIONS:
        raise UsageError(f"linker.precision {requested!r} is not one of {', '.join(PRECISIONS)}")
    return value


_FLAGS: Optional[FrozenSet[str]] = None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> FrozenSet[str]:
    """The CPU feature flags of the first processor in ``cpuinfo`` (empty when unreadable).

    Read once per process for the default path (the file does not change while we run).
    """
    global _FLAGS
    if cpuinfo == "/proc/cpuinfo" and _FLAGS is not None:
        return _FLAGS
    flags: FrozenSet[str] = frozenset()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    flags = frozenset(value.split())
                    break
    except OSError:
        pass
    if cpuinfo == "/proc/cpuinfo":
        _FLAGS = flags
    return flags


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name ('' when unknown)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return ""


def named_flags(flags: FrozenSet[str]) -> str:
    """The flags that matter for precision, space separated ('none' when none)."""
    return " ".join(f for f in NAMED_FLAGS if f in flags) or "none"


def bf16_flag(flags: FrozenSet[str]) -> Optional[str]:
    """The flag by which the CPU runs bf16 natively (None: bf16 would be emulated)."""
    return next((f for f in BF16_FLAGS if f in flags), None)


def hardware_choice(device_type: str, flags: FrozenSet[str]) -> PrecisionChoice:
    """What ``auto`` picks from the hardware alone (before any parity verdict)."""
    if device_type == "cuda":
        return PrecisionChoice("bf16", "auto", "CUDA: bf16 autocast")
    bf16 = bf16_flag(flags)
    if bf16:
        return PrecisionChoice("bf16", "auto", f"CPU has {bf16}")
    int8 = [f for f in INT8_FLAGS if f in flags]
    if int8:
        return PrecisionChoice("int8", "auto", f"CPU has {int8[0]}, no bf16 instructions")
    return PrecisionChoice("fp32", "auto", "CPU has neither bf16 nor VNNI instructions")


def choose(
    requested: str,
    device_type: str,
    flags: Optional[FrozenSet[str]] = None,
    verdicts: Optional[Mapping[str, Mapping[str, Any]]] = None,
) -> PrecisionChoice:
    """Resolve ``linker.precision`` for a device.

    :param requested: ``auto``, ``fp32``, ``bf16`` or ``int8``.
    :param device_type: ``cpu`` or ``cuda``.
    :param flags: CPU flags (default: this machine's).
    :param verdicts: parity results per precision (``{"bf16": {"passed": False, "why": ...}}``),
        from :func:`read_verdicts`; only ``auto`` acts on them.
    :raises UsageError: an unknown precision, or int8 asked for on CUDA.
    """
    requested = validate(requested)
    flags = cpu_flags() if flags is None else flags
    verdicts = verdicts or {}
    if requested != "auto":
        if device_type == "cuda" and requested == "int8":
            raise UsageError("linker.precision int8 is CPU only (dynamic quantization); use auto or bf16 on CUDA")
        reason = "asked for"
        failed = verdicts.get(requested)
        if failed is not None and not failed.get("passed", True):
            reason += f"; note: it failed the parity check ({failed.get('why', '')})"
        return PrecisionChoice(requested, requested, reason)
    choice = hardware_choice(device_type, flags)
    if device_type == "cuda":
        return choice
    measured = measured_choice(verdicts)
    if measured is not None:
        return measured
    precision, failures = choice.precision, []
    while precision in FALLBACK:
        verdict = verdicts.get(precision)
        if verdict is None or verdict.get("passed", True):
            break
        fallback = FALLBACK[precision]
        if fallback == "int8" and not any(f in flags for f in INT8_FLAGS):
            fallback = "fp32"
        failures.append(f"{precision} failed the parity check ({verdict.get('why', '')})")
        precision = fallback
    if not failures:
        return choice
    return PrecisionChoice(precision, "auto", "; ".join(failures) + f", so {precision}")


def measured_choice(verdicts: Mapping[str, Mapping[str, Any]]) -> Optional[PrecisionChoice]:
    """``auto``'s pick from a check that timed the precisions on this machine (None: none timed).

    The fastest precision that passed parity and ran at least :data:`MIN_SPEEDUP` times fp32's
    speed; fp32 when none did. Verdicts recorded before the check timed anything carry no
    ``speedup``, and the flags decide as before.
    """
    timed = {p: float(v["speedup"]) for p, v in verdicts.items()
             if p in FALLBACK and isinstance(v.get("speedup"), (int, float))}
    if not timed:
        return None
    passed = {p: s for p, s in timed.items() if verdicts[p].get("passed", False)}
    notes = ", ".join(f"{p} {s:.2f}x" + ("" if p in passed else f" (failed the parity check: {verdicts[p].get('why', '')})")
                      for p, s in sorted(timed.items()))
    best = max(passed, key=lambda p: passed[p], default=None)
    said = f"linkers --check-precision measured against fp32 here: {notes}"
    if best is None or passed[best] < MIN_SPEEDUP:
        return PrecisionChoice("fp32", "auto", f"{said}; none passed parity at >= {MIN_SPEEDUP}x, so fp32")
    return PrecisionChoice(best, "auto", f"{said}; {best} is the fastest that passed parity")


def check_key(model: str, weights: str, device_type: str, flags: Optional[FrozenSet[str]] = None) -> str:
    """What a parity verdict is valid for: the backbone and this machine's relevant flags."""
    flags = cpu_flags() if flags is None else flags
    return f"{model}|{weights}|{device_type}|{named_flags(flags)}"


def read_verdicts(cache_dir: str, key: str) -> Dict[str, Dict[str, Any]]:
    """Parity verdicts recorded for ``key`` under ``cache_dir`` ({} when none or unreadable)."""
    path = Path(cache_dir) / CHECK_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entry = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(entry, dict):
        return {}
    return {k: v for k, v in entry.items() if isinstance(v, dict)}


def write_verdicts(cache_dir: str, key: str, verdicts: Mapping[str, Mapping[str, Any]]) -> Path:
    """Record parity verdicts for ``key`` (other keys in the file are kept); the file's path."""
    path = Path(cache_dir) / CHECK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            doc = {}
    except (OSError, ValueError):
        doc = {}
    doc[key] = {k: dict(v) for k, v in verdicts.items()}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path


def verdict(top10_agreement: float, min_cosine: float, speedup: Optional[float] = None) -> Dict[str, Any]:
    """A parity verdict from the measured agreement with fp32 (see the module gates).

    :param speedup: fp32's CPU time over this precision's for the same images, when timed.
    """
    problems = []
    if top10_agreement < MIN_TOP10_AGREEMENT:
        problems.append(f"top-10 identical on {top10_agreement:.1%} of files < {MIN_TOP10_AGREEMENT:.0%}")
    if min_cosine < MIN_COSINE:
        problems.append(f"min cosine to fp32 {min_cosine:.5f} < {MIN_COSINE}")
    return {
        "passed": not problems,
        "top10_agreement": round(top10_agreement, 4),
        "min_cosine": round(min_cosine, 6),
        "why": "; ".join(problems) or "matches fp32",
        **({} if speedup is None else {"speedup": round(speedup, 3)}),
    }
