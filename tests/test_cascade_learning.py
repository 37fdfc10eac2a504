"""The cascade learns, through the real entry points (like tests/test_train_learning.py).

A synthetic set where the colour of a shape is in the picture for half of the files and in
the file's name, description or categories for most (``train/synthetic_text.py``);
``wikivel-bot train --linker naive-mlp`` trains the first stage (image only) and
``wikivel-bot train --variant cascade`` the pair model that also reads the text. Through the
linkers themselves (``compare_cascade``: ``create_linker`` + ``search``), the cascade must
beat its first stage on the test split on R@1 and nDCG@5, and its verifier's calibrated
probabilities must be roughly calibrated on the (held-out) test files. Synthetic data,
random-init backbone: the numbers say the code learns, nothing about Commons.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")

from tests.train_support import invoke  # noqa: E402

pytestmark = pytest.mark.slow

NAIVE = ["--linker", "naive-mlp", "--weights", "random", "--device", "cpu", "--threads", "1", "--epochs", "30",
         "--batch-size", "128", "--lr", "0.01", "--patience", "100", "--no-progress"]
CASCADE = ["--variant", "cascade", "--weights", "random", "--device", "cpu", "--threads", "1", "--epochs", "6",
           "--batch-size", "32", "--lr", "0.003", "--patience", "100", "--candidates", "20", "--no-progress"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from wikivel_bot.train.synthetic_text import make_text_synthetic

    root = tmp_path_factory.mktemp("cascade")
    syn = root / "syn"
    make_text_synthetic(syn, 1200, seed=0)
    common = ["--data", str(syn), "--model", str(syn / "tiny-model.json"), "--cache-dir", str(root / "cache")]
    naive = invoke(["train", *NAIVE, *common, "--out", str(root / "naive")])
    assert naive.exit_code == 0, naive.output
    cascade = invoke(["train", *CASCADE, *common, "--first-stage", str(root / "naive" / "best.pt"),
                      "--out", str(root / "cascade")])
    assert cascade.exit_code == 0, cascade.output
    from wikivel_bot.train.cascade_eval import compare_cascade

    result = compare_cascade(root / "cascade" / "best.pt", syn, naive=root / "naive" / "best.pt",
                             cache_dir=str(root / "cache"))
    return root, cascade.output, result


def test_cascade_beats_its_first_stage(trained):
    _, _, result = trained
    scores = {name: metrics for name, _, metrics in result.rows}
    assert set(scores) == {"zero-shot", "naive-mlp", "cascade"}
    assert scores["cascade"]["R@1"] >= scores["naive-mlp"]["R@1"] + 0.05
    assert scores["cascade"]["nDCG@5"] >= scores["naive-mlp"]["nDCG@5"] + 0.05
    assert scores["naive-mlp"]["R@10"] > scores["zero-shot"]["R@10"]
    assert result.synthetic and result.random_weights and result.files > 100


def test_verifier_is_calibrated_on_held_out_files(trained):
    _, _, result = trained
    v = result.verifier
    assert v["pairs"] >= 100 * 20  # every candidate of every test file
    assert v["ece"] < 0.05 and v["top5_ece"] < 0.15
    assert v["roc_auc"] > 0.7
    assert 0.0 < v["f1"] <= 1.0 and v["accuracy"] > v["base_rate"]
    assert sum(b.count for b in result.bins) == v["pairs"]
    from wikivel_bot.train.cascade_eval import comparison_markdown

    text = comparison_markdown(result)
    assert "SYNTHETIC data" in text and "| cascade |" in text and "ECE" in text


def test_training_output_and_checkpoint(trained):
    root, output, _ = trained
    assert "stopped: epochs after" in output and "synthetic dataset" in output
    from wikivel_bot.linker.cascade_checkpoint import load_cascade_checkpoint

    checkpoint = load_cascade_checkpoint(root / "cascade" / "best.pt")
    assert checkpoint.first_stage_linker == "naive-mlp" and checkpoint.first_stage["linker"] == "naive-mlp"
    assert checkpoint.candidates == 20 and checkpoint.calibration is not None
    assert checkpoint.calibration.method == "platt" and checkpoint.verification["roc_auc"] > 0.5
    assert checkpoint.open_clip["random_weights"] is True and checkpoint.extra["open_clip_config"]["embed_dim"] == 32
    assert checkpoint.extra["data"]["synthetic"] is True and checkpoint.extra["train"]["loss"] == "contrastive"
    # The pair model's standardisation came from the training data and is saved with it.
    assert float(checkpoint.pair["std"].sum()) != float(checkpoint.pair["std"].numel())


def test_suggestions_carry_alpha_and_probability(trained):
    """The trained cascade through link_files: α and P(match) on every candidate and in the evidence."""
    import dataclasses

    from wikivel_bot.config import CascadeSettings, LinkerSettings
    from wikivel_bot.linker import create_linker, link_files
    from wikivel_bot.linker.link import rules_from_settings
    from wikivel_bot.train.dataset import image_store, load_dataset, open_labels
    from wikivel_bot.types import MediaFile

    root, _, _ = trained
    dataset = load_dataset(root / "syn")
    store = image_store(dataset)
    settings = LinkerSettings(name="cascade", model="tiny-model", pretrained="", weights="random", device="cpu",
                              checkpoint=str(root / "cascade" / "best.pt"), cache_dir=str(root / "cache"))
    linker = create_linker("cascade", settings, cascade=CascadeSettings(candidates=20))
    linker.attach(open_labels(dataset), settings.cache_dir)
    row = int(dataset.split_rows("test")[0])
    media = MediaFile(page_id=int(dataset.page_ids[row]), title=dataset.titles[row], description="A red figure.")
    data = store.get(media.page_id, media.title)
    linked = link_files(linker, [(media, data)], rules=rules_from_settings(settings))[0]
    assert linked.candidates
    for c in linked.candidates:
        assert c.alpha is not None and 0.0 <= c.alpha <= 1.0 and c.evidence["alpha"] == c.alpha
        assert c.probability is not None and 0.0 <= c.probability <= 1.0
    ordered = [c.probability for c in linked.candidates]
    assert ordered == sorted(ordered, reverse=True)  # ranked by score, probability monotone in it
    # The same picture without any text: the image takes the whole weight.
    from wikivel_bot.linker.base import Query
    from wikivel_bot.linker.images import decode_image

    image = decode_image(data, min_side=linker.backbone.image_size)
    alone = linker.search_details([Query("no text", image, "")], 5)[0]
    assert alone[0].alpha == 1.0 and linked.candidates[0].alpha < 1.0
    # Other words move α too.
    other = link_files(linker, [(dataclasses.replace(media, description="Blue things of many kinds"), data)],
                       rules=rules_from_settings(settings))[0]
    assert other.candidates[0].alpha != linked.candidates[0].alpha
    # Verifier switched off: no probability.
    off = create_linker("cascade", settings, cascade=CascadeSettings(candidates=20, verifier=False))
    off.attach(open_labels(dataset), settings.cache_dir)
    plain = link_files(off, [(media, data)], rules=rules_from_settings(settings))[0]
    assert all(c.probability is None for c in plain.candidates)


def test_checkpoint_refused_for_another_label_set(trained):
    from wikivel_bot.config import LinkerSettings
    from wikivel_bot.errors import LinkerError
    from wikivel_bot.linker import create_linker
    from tests.linker_support import animals_label_set

    root, _, _ = trained
    settings = LinkerSettings(name="cascade", model="tiny-model", pretrained="", weights="random", device="cpu",
                              checkpoint=str(root / "cascade" / "best.pt"), cache_dir=str(root / "cache"))
    linker = create_linker("cascade", settings)
    with pytest.raises(LinkerError, match="trained for label set"):
        linker.attach(animals_label_set(), settings.cache_dir)
    # A first-stage checkpoint is not a cascade one, and the message says what to do.
    wrong = LinkerSettings(name="cascade", model="tiny-model", pretrained="", weights="random", device="cpu",
                           checkpoint=str(root / "naive" / "best.pt"))
    with pytest.raises(LinkerError, match="not a cascade one"):
        create_linker("cascade", wrong)


def test_resume_continues_the_run(trained):
    root, _, _ = trained
    syn = root / "syn"
    common = ["--data", str(syn), "--model", str(syn / "tiny-model.json"), "--cache-dir", str(root / "cache"),
              "--first-stage", str(root / "naive" / "best.pt"), "--out", str(root / "resumed")]
    args = [a if a != "6" else "2" for a in CASCADE]
    first = invoke(["train", *args, *common, "--max-steps", "5"])
    assert first.exit_code == 0, first.output
    assert "stopped: max_steps after 5 steps" in first.output
    again = invoke(["train", *args, *common, "--resume"])
    assert again.exit_code == 0, again.output
    assert "stopped: epochs after" in again.output and "(2 epochs)" in again.output
    other = invoke(["train", *[a if a != "0.003" else "0.02" for a in args], *common, "--resume"])
    assert other.exit_code != 0 and "cannot resume" in other.output


def test_evaluate_cli_takes_a_cascade_checkpoint(trained):
    root, _, _ = trained
    result = invoke(["evaluate", "--checkpoint", str(root / "cascade" / "best.pt"), "--data", str(root / "syn"),
                     "--device", "cpu", "--limit", "40", "--report", str(root / "report")])
    assert result.exit_code == 0, result.output
    # Zero-shot, the first stage taken from inside the checkpoint, and the cascade.
    assert "| zero-shot |" in result.output and "| naive-mlp |" in result.output and "| cascade |" in result.output
    assert "SYNTHETIC data" in result.output and "ECE" in result.output
    assert (root / "report" / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
