"""Text encoding batched by length, and the on-disk label index: reuse and invalidation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from tests.linker_support import animals_label_set, tiny_model_file, tiny_settings  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.clip import ClipLinker  # noqa: E402
from wikivel_bot.linker.backbone.text_tower import encode_texts, token_lengths  # noqa: E402

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def zero_shot():
    return create_linker("zero-shot", tiny_settings())


def test_length_batched_text_encoding_equals_full_padding(zero_shot):
    backbone = zero_shot.backbone
    texts = ["cat", "a very long description of a house with a garden, a red roof and two chimneys", "dog",
             "", "volcano, rupture in the crust of a planetary-mass object", "park!"]
    ours = encode_texts(backbone, texts, batch_size=2)
    tokens = backbone.tokenizer(texts)
    reference = torch.nn.functional.normalize(backbone.model.encode_text(tokens), dim=-1)
    assert torch.allclose(ours, reference, atol=1e-5)
    # The point of batching by length: the short batch runs on a few positions, not 77.
    assert int(token_lengths(tokens).max()) < 30 < tokens.shape[1]


def test_index_is_built_once_and_reused(zero_shot, tmp_path, monkeypatch):
    labels = animals_label_set()
    first = zero_shot.attach(labels, str(tmp_path))
    assert not first.reused
    manifest = json.loads((Path(first.path) / "manifest.json").read_text())
    assert manifest["items"] == 12 and manifest["key"]["labelset"] == labels.content_hash
    stored = np.load(Path(first.path) / "embeddings.npy")
    assert stored.dtype == np.float16 and stored.shape == (12, 32)

    def must_not_encode(*args, **kwargs):
        raise AssertionError("the index was rebuilt although nothing changed")

    monkeypatch.setattr(ClipLinker, "_encode_items", must_not_encode)
    again = create_linker("zero-shot", tiny_settings()).attach(labels, str(tmp_path))
    assert again.reused and again.path == first.path


def test_index_is_reused_by_another_process_with_the_same_random_weights(zero_shot, tmp_path):
    labels = animals_label_set()
    info = zero_shot.attach(labels, str(tmp_path / "a"))
    script = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.linker_support import animals_label_set, tiny_settings
from wikivel_bot.linker import create_linker
import numpy as np
labels = animals_label_set()
reused = create_linker("zero-shot", tiny_settings()).attach(labels, {str(tmp_path / "a")!r}).reused
fresh = create_linker("zero-shot", tiny_settings()).attach(labels, {str(tmp_path / "b")!r})
emb = np.load(fresh.path + "/embeddings.npy").astype(float)
print(json.dumps({{"reused": reused, "fresh_reused": fresh.reused, "emb": emb.tolist()}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["reused"] is True and doc["fresh_reused"] is False
    ours = np.load(Path(info.path) / "embeddings.npy").astype(float)
    # Same seed, same random model in another process: the same embeddings.
    assert np.allclose(np.array(doc["emb"]), ours, atol=1e-3)


def test_index_is_rebuilt_when_an_input_changes(zero_shot, tmp_path):
    labels = animals_label_set()
    base = zero_shot.attach(labels, str(tmp_path))
    more = zero_shot.attach(animals_label_set(extra=[("Q7377", "mammal", "", "")]), str(tmp_path))
    assert not more.reused and more.path != base.path and more.items == 13
    naive = create_linker("naive-mlp", tiny_settings()).attach(labels, str(tmp_path))
    assert not naive.reused and naive.path != base.path


def test_local_weights_file_gives_the_same_embeddings_under_a_new_cache_key(zero_shot, tmp_path):
    labels = animals_label_set()
    base = zero_shot.attach(labels, str(tmp_path))
    weights = tmp_path / "tiny.pt"
    torch.save(zero_shot.backbone.model.state_dict(), weights)
    local = create_linker("zero-shot", tiny_settings(weights=str(weights)))
    assert local.backbone.weights.startswith("file:tiny.pt:") and not local.description.random_weights
    info = local.attach(labels, str(tmp_path))
    assert not info.reused and info.path != base.path
    assert np.allclose(np.load(Path(info.path) / "embeddings.npy"), np.load(Path(base.path) / "embeddings.npy"))


def test_damaged_index_is_rebuilt(zero_shot, tmp_path):
    labels = animals_label_set()
    first = zero_shot.attach(labels, str(tmp_path))
    (Path(first.path) / "manifest.json").write_text("{not json")
    second = zero_shot.attach(labels, str(tmp_path))
    assert not second.reused and second.path == first.path
    assert json.loads((Path(second.path) / "manifest.json").read_text())["items"] == 12


def test_model_config_json_path_is_accepted(tmp_path):
    linker = create_linker("zero-shot", tiny_settings(model=str(tiny_model_file())))
    assert linker.backbone.model_name == "wikivel-tiny-test"
