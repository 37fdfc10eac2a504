"""Where the bot keeps its state on disk, and where its caches go by default.

The caches (label indexes, item images, exported encoders: close to 1 GB after a first run)
default to the user's cache directory, ``$XDG_CACHE_HOME/wikivel-bot``, else
``~/.cache/wikivel-bot``: never into a checkout or whatever the working directory is.
``linker.cache_dir`` moves them (on Toolforge: under ``$TOOL_DATA_DIR``, the only directory a
build-service job shares with the tool's NFS home). :func:`state_paths` names every path for
``wikivel-bot config show``, so an operator can see that they all land where they should.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Mapping, Optional, Tuple

APP_DIR = "wikivel-bot"
# What Toolforge's build-service pods set to the tool's data directory (its NFS home).
TOOL_DATA_VARIABLE = "TOOL_DATA_DIR"


def user_cache_root(env: Optional[Mapping[str, str]] = None) -> Tuple[Path, str]:
    """The user's cache directory and where it came from: ``$XDG_CACHE_HOME`` when set to
    an absolute path (the XDG spec ignores a relative one), else ``~/.cache``."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg), "$XDG_CACHE_HOME"
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".cache", "~/.cache"


def default_cache_dir(env: Optional[Mapping[str, str]] = None) -> str:
    """``linker.cache_dir``'s default: ``<user cache directory>/wikivel-bot``."""
    return str(user_cache_root(env)[0] / APP_DIR)


def hugging_face_cache(env: Optional[Mapping[str, str]] = None) -> Tuple[str, str]:
    """Where huggingface_hub (open_clip's downloads) keeps model weights, and why: the same
    order as huggingface_hub's own constants."""
    env = os.environ if env is None else env
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return env[name], f"${name}"
    if env.get("HF_HOME"):
        return str(Path(env["HF_HOME"]) / "hub"), "$HF_HOME/hub"
    root, why = user_cache_root(env)
    return str(root / "huggingface" / "hub"), f"{why}/huggingface/hub (set HF_HOME to move it)"


def state_paths(settings: Any, env: Optional[Mapping[str, str]] = None) -> List[Tuple[str, str, str]]:
    """(what, path, note) for everything the bot reads or keeps on disk beside the database."""
    env = os.environ if env is None else env
    linker = settings.linker
    cache = linker.cache_dir
    if cache == default_cache_dir(env):
        why = f"linker.cache_dir, default: {user_cache_root(env)[1]}/{APP_DIR}"
    else:
        why = "linker.cache_dir"
    hub, hub_why = hugging_face_cache(env)
    rows = [
        ("cache directory", cache, why),
        ("label index", str(Path(cache) / "label-index"), "rebuilt when missing"),
        ("item thumbnails", str(Path(cache) / "item-images"), "item images, fetched once"),
        ("exported encoders", str(Path(cache) / "towers"), "faster starts on CPU"),
    ]
    if linker.weights == "random":
        rows.append(("model weights", "none", "linker.weights = random (smoke runs only)"))
    elif linker.weights:
        rows.append(("model weights", linker.weights, "linker.weights"))
    else:
        rows.append(("model weights", hub, f"linker.pretrained {linker.pretrained!r} from the Hugging Face cache"))
    rows.append(("Hugging Face cache", hub, hub_why))
    rows.append(("label set", linker.labels_dir or "the starter set in the package", "linker.labels_dir"))
    if linker.checkpoint:
        rows.append(("checkpoint", linker.checkpoint, "linker.checkpoint"))
    models_dir = getattr(getattr(settings, "learning", None), "models_dir", "")
    if models_dir:
        rows.append(("learned models", models_dir, "learning.models_dir"))
    return rows


def state_path_lines(settings: Any, env: Optional[Mapping[str, str]] = None) -> List[str]:
    """``config show``'s comment block: one line per path; on Toolforge (``$TOOL_DATA_DIR``
    set) a path outside that directory is flagged, since nothing else survives a restart."""
    env = os.environ if env is None else env
    data = env.get(TOOL_DATA_VARIABLE, "")
    lines = ["# State on disk (where each path comes from):"]
    for what, path, note in state_paths(settings, env):
        lines.append(f"#   {what}: {path}  ({note})")
        if data and os.path.isabs(path) and not _under(path, data):
            lines.append(f"#     WARNING: not under ${TOOL_DATA_VARIABLE} ({data}): lost when the job restarts")
    return lines


def _under(path: str, root: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True
