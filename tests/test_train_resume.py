"""Reproducible and resumable training, and every trainable variant through its real path.

* The same seed gives the same weights; an interrupted run (``--max-steps``) resumed with
  ``--resume`` ends with the weights of an uninterrupted one (dropout included: torch's RNG
  state is part of the saved state).
* naive-te (text tower trained), fusion (file text and item images) and the hinge triplet
  loss train, and their checkpoints load into the linker that ``evaluate`` runs.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from tests.train_support import invoke  # noqa: E402
from wikivel_bot.linker.checkpoint import load_checkpoint  # noqa: E402

pytestmark = pytest.mark.slow

COMMON = ["--weights", "random", "--device", "cpu", "--threads", "2", "--batch-size", "64", "--lr", "0.005",
          "--no-progress"]


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    made = invoke(["dataset", "synthetic", "--out", str(root / "syn"), "--files", "300", "--seed", "3"])
    assert made.exit_code == 0, made.output
    return root


def _train(root, out, *extra):
    result = invoke(["train", "--linker", "naive-mlp", "--data", str(root / "syn"), "--model",
                     str(root / "syn" / "tiny-model.json"), "--cache-dir", str(root / "cache"),
                     "--out", str(root / out), *COMMON, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _heads(path):
    return load_checkpoint(path).heads


def _losses(path):
    return [e["loss"] for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == "train"]


def test_resume_gives_the_uninterrupted_result(syn):
    _train(syn, "straight", "--epochs", "3", "--patience", "100")
    stopped = _train(syn, "resumed", "--epochs", "3", "--patience", "100", "--max-steps", "5")
    assert "stopped: max_steps after 5 steps" in stopped
    assert len(_losses(syn / "resumed" / "metrics.jsonl")) == 5
    # As if the process had died after logging a step it never saved: resuming drops the line.
    with (syn / "resumed" / "metrics.jsonl").open("a") as log:
        log.write(json.dumps({"kind": "train", "step": 6, "loss": 123.0}) + "\n")
    _train(syn, "resumed", "--epochs", "3", "--patience", "100", "--resume")
    straight, resumed = _heads(syn / "straight" / "last.pt"), _heads(syn / "resumed" / "last.pt")
    assert straight.keys() == resumed.keys()
    for name in straight:
        assert torch.allclose(straight[name], resumed[name], atol=1e-6), name
    assert _losses(syn / "straight" / "metrics.jsonl") == pytest.approx(_losses(syn / "resumed" / "metrics.jsonl"), abs=1e-6)
    # The weights moved: this compares two trained heads, not two untouched initialisations.
    assert float(straight["image_head.net.3.weight"].abs().sum()) > 0
    # Another seed gives other weights (so the equality above is not vacuous).
    _train(syn, "other", "--epochs", "1", "--seed", "1")
    one = _train(syn, "one", "--epochs", "1")
    assert "stopped: epochs" in one
    other, first = _heads(syn / "other" / "last.pt"), _heads(syn / "one" / "last.pt")
    assert not torch.allclose(other["image_head.net.0.weight"], first["image_head.net.0.weight"])


def test_resume_refuses_other_settings_and_missing_state(syn):
    _train(syn, "short", "--epochs", "1", "--max-steps", "2")
    changed = invoke(["train", "--linker", "naive-mlp", "--data", str(syn / "syn"), "--model",
                      str(syn / "syn" / "tiny-model.json"), "--cache-dir", str(syn / "cache"), "--out",
                      str(syn / "short"), *COMMON, "--epochs", "1", "--resume", "--seed", "9"])
    assert changed.exit_code == 2 and "cannot resume" in changed.output and "seed" in changed.output
    missing = invoke(["train", "--linker", "naive-mlp", "--data", str(syn / "syn"), "--model",
                      str(syn / "syn" / "tiny-model.json"), "--out", str(syn / "fresh"), *COMMON, "--resume"])
    assert missing.exit_code == 2 and "nothing to resume" in missing.output


@pytest.mark.parametrize("linker, extra", [
    ("naive-te", ["--text-lr", "1e-4"]),
    ("fusion", []),
    ("naive-mlp", ["--loss", "triplet", "--target-hops", "0", "--no-rescale"]),
])
def test_every_variant_trains_and_loads_into_the_linker(syn, linker, extra):
    out = syn / f"v-{linker}-{len(extra)}"
    result = invoke(["train", "--linker", linker, "--data", str(syn / "syn"), "--model",
                     str(syn / "syn" / "tiny-model.json"), "--cache-dir", str(syn / "cache"), "--out", str(out),
                     *COMMON, "--epochs", "1", *extra])
    assert result.exit_code == 0, result.output
    checkpoint = load_checkpoint(out / "best.pt")
    assert checkpoint.linker == linker
    assert (checkpoint.text_encoder is not None) == (linker == "naive-te")
    if linker == "fusion":
        assert "items have a P18 image" in result.output
    evaluated = invoke(["evaluate", "--checkpoint", str(out / "best.pt"), "--data", str(syn / "syn"), "--device",
                        "cpu", "--baselines", "", "--limit", "20", "--k", "1,10", "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    results = json.loads(evaluated.output)
    assert [m["name"] for m in results["models"]] == [linker]
    assert results["files"] == 20 and 0.0 <= results["models"][0]["scores"]["0"]["R@10"] <= 1.0


def test_train_refuses_bad_inputs(syn, tmp_path):
    bad = invoke(["train", "--linker", "naive-mlp", "--data", str(syn / "syn"), "--model",
                  str(syn / "syn" / "tiny-model.json"), "--out", str(tmp_path / "x"), *COMMON, "--select", "banana"])
    assert bad.exit_code == 2 and "--select" in bad.output
    no_images = invoke(["train", "--linker", "naive-mlp", "--data", str(syn / "syn"), "--images", str(tmp_path),
                        "--model", str(syn / "syn" / "tiny-model.json"), "--cache-dir", str(tmp_path / "c"),
                        "--out", str(tmp_path / "y"), *COMMON, "--epochs", "1"])
    assert no_images.exit_code == 2 and "too few for a batch" in no_images.output
    not_data = invoke(["train", "--linker", "naive-mlp", "--data", str(tmp_path), "--out", str(tmp_path / "z"), *COMMON])
    assert not_data.exit_code == 2 and "not a dataset directory" in not_data.output
