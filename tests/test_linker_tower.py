"""Start fast (part of the CPU fast path): the exported image tower and the torchvision-free
preprocessing give the suggestions of the full model, a warm ``suggest`` imports neither
open_clip nor torchvision, stale or damaged exports are not used, and a failed export is
said once and not retried."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

from tests.linker_support import animals_label_set, image_bytes, tiny_model_file, tiny_settings  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker import checkpoint as ckpt  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.clip import backbone_info  # noqa: E402
from wikivel_bot.linker.backbone.encoders import load_backbone  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import text_tower_state  # noqa: E402
from wikivel_bot.linker.heads import NaiveHeads  # noqa: E402
from wikivel_bot.linker.backbone.imageprep import ImagePrep, from_transform, same_output, sample_images  # noqa: E402
from wikivel_bot.linker.backbone.images import decode_image  # noqa: E402
from wikivel_bot.linker.link import Linked, link_files  # noqa: E402
from wikivel_bot.linker.spec import get_spec  # noqa: E402
from wikivel_bot.linker.backbone.tower import ExportedBackbone, export_tower, tower_key, tower_path  # noqa: E402
from wikivel_bot.types import MediaFile  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LABELS = animals_label_set()
RULES = RankingRules(top_k=5)
FILES = [
    (MediaFile(page_id=i + 1, title=f"File:T{i}.jpg"), image_bytes(color, size, seed=i))
    for i, (color, size) in enumerate([((200, 30, 30), (48, 40)), ((20, 180, 60), (31, 77)), ((90, 90, 220), (64, 64)),
                                       ((250, 250, 250), (120, 45))])
]


def suggestions(linker):
    """(qid, score) lists per file, in rank order."""
    outcomes = link_files(linker, FILES, rules=RULES)
    assert all(isinstance(o, Linked) for o in outcomes)
    return [[(c.qid, c.score) for c in o.candidates] for o in outcomes]


def assert_same_suggestions(got, want):
    assert [[q for q, _ in row] for row in got] == [[q for q, _ in row] for row in want]
    for got_row, want_row in zip(got, want):
        assert got_row and all(abs(a - b) <= 1e-4 for (_, a), (_, b) in zip(got_row, want_row))


@pytest.mark.parametrize("kwargs", [{}, {"resize_mode": "squash"}, {"interpolation": "bilinear"},
                                    {"mean": (0.0, 0.0, 0.0), "std": (1.0, 1.0, 1.0)}])
def test_preprocessing_without_torchvision_is_bit_identical(kwargs):
    from open_clip.transform import image_transform

    transform = image_transform(224, is_train=False, **kwargs)
    prep, why = from_transform(transform)
    assert prep is not None, why
    assert same_output(prep, transform, sample_images(224))
    decoded = decode_image(FILES[1][1])
    assert torch.equal(prep(decoded), transform(decoded))
    assert ImagePrep.from_dict(json.loads(json.dumps(prep.to_dict()))) == prep


def test_a_transform_it_cannot_reproduce_is_named_not_guessed():
    from open_clip.transform import image_transform

    prep, why = from_transform(image_transform(224, is_train=False, resize_mode="longest"))
    assert prep is None and "ResizeKeepRatio" in why
    with pytest.raises(ValueError, match="not an image preprocessing description"):
        ImagePrep.from_dict({"resize": [224]})


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_exported_tower_gives_the_full_models_suggestions(tmp_path, precision):
    settings = tiny_settings(precision=precision, cache_dir=str(tmp_path))
    first = create_linker("zero-shot", settings)  # the ordinary start: builds, then exports
    assert not isinstance(first.backbone, ExportedBackbone)
    assert first.attach(LABELS, str(tmp_path)).reused is False
    want = suggestions(first)
    assert len(list((tmp_path / "towers").glob(f"*-{precision}-*.pt"))) == 1
    second = create_linker("zero-shot", settings)
    assert isinstance(second.backbone, ExportedBackbone)
    assert second.description == first.description  # same version, precision and warnings
    assert second.attach(LABELS, str(tmp_path)).reused is True
    assert_same_suggestions(suggestions(second), want)
    assert second.backbone._full is None, "the full model was built although only images were encoded"


def test_the_full_model_and_its_exported_tower_cut_preprocessing_alike(tmp_path):
    """A backfill's driver may hold the full model (it exports the tower) while its actors load
    the tower: both must give the same preprocessing steps, or the actors refuse to start."""
    from wikivel_bot.linker.link import model_input_steps

    settings = tiny_settings(cache_dir=str(tmp_path))
    full = create_linker("zero-shot", settings)
    full.attach(LABELS, str(tmp_path))
    fast = create_linker("zero-shot", settings)
    assert isinstance(fast.backbone, ExportedBackbone) and not isinstance(full.backbone, ExportedBackbone)
    full_steps, fast_steps = model_input_steps(full), model_input_steps(fast)
    assert full_steps is not None and fast_steps is not None
    assert full_steps.fingerprint == fast_steps.fingerprint
    for image in sample_images(full.backbone.image_size):
        want = full.backbone.preprocess(image)
        assert torch.equal(full_steps.finish(full_steps.geometry(image)), want)
        assert torch.equal(fast_steps.finish(fast_steps.geometry(image)), want)
    assert fast.backbone._full is None


@pytest.mark.parametrize("name", ["naive-mlp", "naive-te"])
def test_naive_heads_from_a_checkpoint_run_on_the_exported_tower(tmp_path, name):
    spec = get_spec(name)
    base = create_linker(name, tiny_settings(cache_dir=str(tmp_path)))
    torch.manual_seed(1)
    heads = NaiveHeads(base.backbone.embed_dim)
    torch.nn.init.normal_(heads.image_head.net[-1].weight, std=0.5)
    text = None
    if "text_encoder" in spec.trainable:  # a tuned text tower: changes the index, not the queries
        text = text_tower_state(base.backbone.model)
        text["ln_final.bias"] = text["ln_final.bias"] + 0.5
    path = ckpt.save_checkpoint(tmp_path / "naive.pt", spec=spec, backbone=backbone_info(base.backbone), heads=heads,
                                labelset_hash=LABELS.content_hash, text_encoder=text)
    full = create_linker(name, tiny_settings(cache_dir=str(tmp_path / "other"), checkpoint=str(path)))
    full.attach(LABELS, str(tmp_path))
    fast = create_linker(name, tiny_settings(cache_dir=str(tmp_path), checkpoint=str(path)))
    assert isinstance(fast.backbone, ExportedBackbone)
    assert fast.attach(LABELS, str(tmp_path)).reused is True
    assert_same_suggestions(suggestions(fast), suggestions(full))
    assert fast.backbone._full is None
    if text is not None:  # asked for, the full model has the checkpoint's text tower
        assert torch.equal(fast.backbone.model.ln_final.bias, text["ln_final.bias"])


def test_a_missing_index_builds_the_full_model_on_demand(tmp_path):
    settings = tiny_settings(cache_dir=str(tmp_path))
    reference = create_linker("zero-shot", settings)  # fills the tower
    reference.attach(LABELS, str(tmp_path / "index-a"))
    fast = create_linker("zero-shot", settings)
    assert isinstance(fast.backbone, ExportedBackbone)
    info = fast.attach(LABELS, str(tmp_path / "index-b"))  # no index there: texts to encode
    assert info.reused is False and fast.backbone._full is not None
    assert_same_suggestions(suggestions(fast), suggestions(reference))


def test_linkers_that_read_the_files_text_never_use_the_tower(tmp_path):
    for name in ("fusion", "cascade"):
        settings = tiny_settings(cache_dir=str(tmp_path))
        create_linker(name, settings)
        again = create_linker(name, settings)
        assert not isinstance(getattr(again, "backbone", None), ExportedBackbone), name
    assert not list(tmp_path.glob("towers/*.pt"))


def test_the_key_follows_weights_precision_and_config(tmp_path):
    model = str(tiny_model_file())
    key = tower_key(model, "", "random", "fp32")
    assert key is not None and key["model"] == "wikivel-tiny-test"
    assert tower_key(model, "", "random", "bf16") != key
    weights = tmp_path / "w.pt"
    torch.save({"x": torch.zeros(1)}, weights)
    assert tower_key(model, "", str(weights), "fp32")["weights"].startswith("file:w.pt:")
    assert tower_key(model, "", str(tmp_path / "missing.pt"), "fp32") is None  # only resolve_weights can say
    changed = tmp_path / "wikivel-tiny-test.json"
    config = json.loads(Path(model).read_text())
    config["vision_cfg"]["layers"] = 3
    changed.write_text(json.dumps(config))
    assert tower_key(str(changed), "", "random", "fp32")["config"] != key["config"]
    assert tower_key("ViT-B-32", "openai", "", "bf16")["weights"] == "tag:ViT-B-32:openai"
    assert tower_key("no-such-model", "", "random", "fp32") is None


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.jit.save's deprecation notice
def test_a_stale_or_damaged_export_is_not_used(tmp_path):
    settings = tiny_settings(cache_dir=str(tmp_path))
    first = create_linker("zero-shot", settings)
    first.attach(LABELS, str(tmp_path))
    want = suggestions(first)
    (path,) = (tmp_path / "towers").glob("*.pt")
    # A file under the right name whose recorded key is another one (e.g. copied by hand
    # from a machine with another torch); everything else in it is sound.
    extra = {"wikivel.json": ""}
    tower = torch.jit.load(str(path), _extra_files=extra)
    meta = json.loads(extra["wikivel.json"])
    meta["key"] = dict(meta["key"], torch="0.0")
    torch.jit.save(tower, str(path), _extra_files={"wikivel.json": json.dumps(meta)})
    stale = create_linker("zero-shot", settings)
    assert not isinstance(stale.backbone, ExportedBackbone)
    path.write_bytes(b"not a TorchScript archive")
    damaged = create_linker("zero-shot", settings)
    assert not isinstance(damaged.backbone, ExportedBackbone)
    damaged.attach(LABELS, str(tmp_path))
    assert_same_suggestions(suggestions(damaged), want)


def test_a_cache_that_cannot_be_written_only_costs_the_speed(tmp_path):
    (tmp_path / "towers").write_text("a file where the directory would be")
    settings = tiny_settings(cache_dir=str(tmp_path))
    first = create_linker("zero-shot", settings)
    first.attach(LABELS, str(tmp_path))
    again = create_linker("zero-shot", settings)
    assert not isinstance(again.backbone, ExportedBackbone)
    again.attach(LABELS, str(tmp_path))
    assert_same_suggestions(suggestions(again), suggestions(first))


def test_a_failed_export_is_said_once_and_the_ordinary_start_goes_on(tmp_path, caplog):
    from open_clip.transform import image_transform

    settings = tiny_settings(cache_dir=str(tmp_path))
    key = tower_key(settings.model, "", "random", "fp32")
    backbone = load_backbone(settings.model, weights="random", device="cpu")
    # A real open_clip transform this module cannot reproduce (longest-side resize and pad).
    backbone.preprocess = image_transform(backbone.image_size, is_train=False, resize_mode="longest")
    with caplog.at_level(logging.WARNING, logger="wikivel_bot.linker.backbone.tower"):
        assert export_tower(backbone, key, str(tmp_path)) is None
        assert export_tower(backbone, key, str(tmp_path)) is None
        linker = create_linker("zero-shot", settings)
        create_linker("zero-shot", settings)
    said = [r.getMessage() for r in caplog.records if r.name == "wikivel_bot.linker.backbone.tower"]
    assert len(said) == 1 and "fast start is not available" in said[0] and "ResizeKeepRatio" in said[0]
    assert tower_path(str(tmp_path), key).with_suffix(".failed").is_file()
    assert not tower_path(str(tmp_path), key).exists()
    assert not isinstance(linker.backbone, ExportedBackbone)
    linker.attach(LABELS, str(tmp_path))
    assert isinstance(link_files(linker, FILES[:1], rules=RULES)[0], Linked)


HEAVY = ("open_clip", "torchvision", "pandas", "timm", "sqlalchemy", "alembic", "pywikibot")
PROBE = (
    "import atexit, json, sys\n"
    f"atexit.register(lambda: sys.stderr.write('IMPORTED ' + json.dumps([m for m in {HEAVY!r} if m in sys.modules])))\n"
    "from wikivel_bot.cli import run\n"
    "run()\n"
)


def test_a_warm_suggest_imports_neither_open_clip_nor_torchvision(tmp_path):
    (tmp_path / "photo.jpg").write_bytes(FILES[0][1])
    env = dict(os.environ, PYTHONPATH=str(ROOT), WIKIVEL_LINKER_CACHE_DIR=str(tmp_path / "cache"))
    args = ["suggest", "photo.jpg", "--model", str(tiny_model_file()), "--weights", "random", "--precision", "fp32",
            "--json"]

    def suggest():
        done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        imported = json.loads(done.stderr.rsplit("IMPORTED ", 1)[1])
        files = json.loads(done.stdout)["files"]
        return imported, [[(c["qid"], c["score"]) for c in f["candidates"]] for f in files]

    cold_imports, cold = suggest()  # fills the label index, the weights cache and the tower
    assert "open_clip" in cold_imports
    warm_imports, warm = suggest()
    assert warm_imports == []
    assert_same_suggestions(warm, cold)
