"""--precision and `wikivel-bot linkers --check-precision` through the real click group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from tests.linker_support import TINY_MODEL, image_bytes, tiny_model_file, write_animals_artifact  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.linker.backbone import precision as prec  # noqa: E402

TINY = ["--model", TINY_MODEL, "--weights", "random", "--device", "cpu"]


@pytest.fixture(scope="module")
def labels_dir(tmp_path_factory) -> str:
    return str(write_animals_artifact(tmp_path_factory.mktemp("labels") / "animals"))


@pytest.fixture
def run(tmp_path, monkeypatch, labels_dir):
    tiny_model_file()
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WIKIVEL_LINKER_LABELS_DIR", labels_dir)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def photo(tmp_path) -> Path:
    path = tmp_path / "photo.jpg"
    path.write_bytes(image_bytes())
    return path


def test_suggest_says_which_precision_and_why(run, photo):
    result = run("suggest", str(photo), *TINY, "--precision", "int8")
    assert result.exit_code == 0, result.output
    assert "in int8 (asked for)" in result.output.splitlines()[0]
    doc = json.loads(run("suggest", str(photo), *TINY, "--precision", "bf16", "--json").output)
    assert doc["linker"]["precision"] == "bf16" and doc["linker"]["precision_reason"] == "asked for"
    auto = json.loads(run("suggest", str(photo), *TINY, "--json").output)
    expected = prec.hardware_choice("cpu", prec.cpu_flags())
    assert auto["linker"]["precision"] == expected.precision
    assert auto["linker"]["precision_reason"] == expected.reason


def test_a_bad_precision_is_one_line(run, photo):
    result = run("suggest", str(photo), *TINY, "--precision", "fp16")
    assert result.exit_code == 2
    assert result.output.strip() == "error: linker.precision 'fp16' is not one of auto, fp32, bf16, int8"


def test_check_precision_records_verdicts_that_auto_follows(run, photo, tmp_path, monkeypatch):
    monkeypatch.setenv("WIKIVEL_LINKER_MODEL", TINY_MODEL)
    monkeypatch.setenv("WIKIVEL_LINKER_WEIGHTS", "random")
    monkeypatch.setenv("WIKIVEL_LINKER_DEVICE", "cpu")
    images = tmp_path / "images"
    images.mkdir()
    for i in range(6):
        (images / f"{i}.jpg").write_bytes(image_bytes(color=(40 * i, 90, 200), seed=i))
    result = run("linkers", "--check-precision", "--images", str(images), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["random_weights"] is True
    # bf16 is checked only where the CPU has bf16 instructions (emulated, it is slower than fp32).
    has_bf16 = prec.bf16_flag(prec.cpu_flags()) is not None
    checked = ["bf16", "int8"] if has_bf16 else ["int8"]
    assert [r["precision"] for r in doc["results"]] == checked
    assert (doc["skipped"] is None) == has_bf16
    assert all(r["files"] == 6 and r["items"] == 12 for r in doc["results"])
    assert all(r["speedup"] > 0 and r["cpu_ms_per_image"] > 0 for r in doc["results"])
    recorded = json.loads(Path(doc["recorded"]).read_text())
    (key, verdicts), = recorded.items()
    assert TINY_MODEL in key and set(verdicts) == set(checked)
    assert verdicts[checked[0]]["passed"] == (doc["results"][0]["top10_agreement"] >= 0.95
                                              and doc["results"][0]["min_cosine"] >= 0.999)
    assert verdicts[checked[0]]["speedup"] == pytest.approx(doc["results"][0]["speedup"])
    # auto follows the timing: the fastest that passed at >= 1.1x fp32, else fp32.
    fast = [r for r in doc["results"] if r["passed"] and r["speedup"] >= prec.MIN_SPEEDUP]
    expected = max(fast, key=lambda r: r["speedup"])["precision"] if fast else "fp32"
    assert doc["auto"]["precision"] == expected and "measured against fp32 here" in doc["auto"]["reason"]
    # Make every one fail: auto must fall back to fp32 and say why, on any CPU.
    for v in verdicts.values():
        v.update(passed=False, why="forced by the test")
    Path(doc["recorded"]).write_text(json.dumps(recorded))
    out = json.loads(run("suggest", str(photo), "--json").output)
    assert out["linker"]["precision"] == "fp32"
    assert "failed the parity check: forced by the test" in out["linker"]["precision_reason"]
    text = run("linkers", "--check-precision", "--images", str(images)).output
    assert "precision check: zero-shot on wikivel-tiny-test" in text and "random weights" in text
    assert "x fp32's speed (" in text and "auto now uses:" in text
    assert ("bf16 not checked: this CPU has no bf16 instructions" in text) != has_bf16


def test_check_precision_refuses_a_baseline_and_bad_images(run, tmp_path):
    result = run("linkers", "--check-precision", "--images", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no such directory" in result.output
    result = run("--config", str(_config(tmp_path, "top-k")), "linkers", "--check-precision")
    assert result.exit_code == 2 and "has no model" in result.output


def _config(tmp_path: Path, linker: str) -> Path:
    path = tmp_path / "wikivel.toml"
    path.write_text(f'[linker]\nname = "{linker}"\n')
    return path


def test_linkers_lists_the_documented_backbones(run):
    result = run("linkers")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.split()[:2] == ["MobileCLIP2-S0", "dfndr2b"] for line in lines)
    assert any(line.split()[:2] == ["ViT-B-32", "laion2b_s34b_b79k"] for line in lines)


def test_mobileclip2_s0_is_a_real_open_clip_choice():
    import open_clip

    from wikivel_bot.linker.backbone.backbones import BACKBONES

    for choice in BACKBONES:
        assert choice.pretrained in open_clip.list_pretrained_tags_by_model(choice.model)
