"""Where backbone weights come from, and the one clear error when they cannot be had."""

from __future__ import annotations


import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from tests.linker_support import tiny_settings  # noqa: E402
from wikivel_bot.errors import LinkerError  # noqa: E402
from wikivel_bot.linker.backbone import weights as weights_module  # noqa: E402
from wikivel_bot.linker.backbone.encoders import load_backbone, resolve_device  # noqa: E402
from wikivel_bot.linker.backbone.weights import resolve_weights  # noqa: E402


def test_uncached_tag_without_network_fails_fast_with_instructions(monkeypatch):
    monkeypatch.setattr(weights_module, "cached_tag_file", lambda cfg: None)
    probes = []
    # Fast by construction: one reachability probe (answered at once here), no download tried.
    monkeypatch.setattr(weights_module, "hub_reachable", lambda timeout_s: probes.append(timeout_s) or False)
    with pytest.raises(LinkerError) as info:
        resolve_weights("ViT-B-32", "laion2b_s34b_b79k", "")
    message = str(info.value)
    assert "ViT-B-32/laion2b_s34b_b79k are not in the local cache" in message
    assert "pretrained='laion2b_s34b_b79k'" in message  # how to fetch them elsewhere
    assert "--weights PATH" in message and "--weights random" in message
    assert len(probes) == 1 and probes[0] <= 5  # the probe's own timeout bounds the wait


def test_hf_hub_offline_is_honoured_without_probing(monkeypatch):
    monkeypatch.setattr(weights_module, "cached_tag_file", lambda cfg: None)
    monkeypatch.setattr(weights_module, "hub_reachable", lambda timeout: pytest.fail("probed the network"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LinkerError, match="not in the local cache"):
        resolve_weights("ViT-B-32", "openai", "")


def test_cached_tag_loads_from_the_file_with_the_tag_preprocessing(monkeypatch, tmp_path):
    monkeypatch.setattr(weights_module, "cached_tag_file", lambda cfg: str(tmp_path / "w.bin"))
    source = resolve_weights("ViT-B-32", "openai", "")
    assert source.pretrained == str(tmp_path / "w.bin")
    assert source.identity == "tag:ViT-B-32:openai"
    assert source.quick_gelu is True  # the OpenAI weights were trained with QuickGELU
    assert source.preprocess and "image_mean" in source.preprocess


def test_missing_weights_file_and_unknown_tag():
    with pytest.raises(LinkerError, match="weights file not found: /nonexistent/w.pt"):
        resolve_weights("ViT-B-32", "laion2b_s34b_b79k", "/nonexistent/w.pt")
    with pytest.raises(LinkerError, match="unknown pretrained tag 'nope' for ViT-B-32 .*laion2b_s34b_b79k"):
        resolve_weights("ViT-B-32", "nope", "")


def test_random_weights_are_the_same_in_every_build_and_leave_the_global_rng_alone():
    settings = tiny_settings()
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    first = load_backbone(settings.model, weights="random", device="cpu")
    after = torch.rand(1)
    second = load_backbone(settings.model, weights="random", device="cpu")
    assert torch.equal(before, after)
    assert first.random_weights and first.weights == "random-seed0"
    for (name, a), (_, b) in zip(first.model.state_dict().items(), second.model.state_dict().items()):
        assert torch.equal(a, b), name


def test_devices():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(LinkerError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(LinkerError, match="CUDA is not available"):
            resolve_device("cuda")


def test_unknown_architecture():
    with pytest.raises(LinkerError, match="unknown open_clip model 'ViT-Z-99'"):
        load_backbone("ViT-Z-99", weights="random")
