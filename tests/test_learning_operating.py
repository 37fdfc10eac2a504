"""A learned model's operating threshold: calibrated on its own suggestions, judged where it
would itself suggest, carried by the checkpoint into every linker the factory builds, written
into the model card at a promotion, and followed by the daemon without a restart
(docs/learning.md). Deterministic: fixed geometry or seeded generators, the tiny open_clip
model with random weights on CPU.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from wikivel_bot.learning import registry  # noqa: E402
from wikivel_bot.learning.metrics import FileScores, file_counts  # noqa: E402
from wikivel_bot.train.decisions.heads import DecisionTensors, Platt, fit_probability  # noqa: E402
from wikivel_bot.train.decisions.own_suggestions import (  # noqa: E402
    calibrate_own,
    judged_files,
    operating_score,
    own_suggestions,
)

IDENTITY = SimpleNamespace(image_head=lambda x: x, text_head=lambda x: x, eval=lambda: None)


def _unit(degrees) -> torch.Tensor:
    a = np.radians(np.asarray(degrees, dtype=float))
    return torch.tensor(np.stack([np.cos(a), np.sin(a)], axis=-1), dtype=torch.float32)


def _data(file_angles, item_angles, pairs, split="calibration") -> DecisionTensors:
    """pairs: (file row, item row, approved)."""
    return DecisionTensors(_unit(file_angles), _unit(item_angles), list(range(100, 100 + len(file_angles))),
                           [f"Q{i}" for i in range(len(item_angles))],
                           torch.tensor([f for f, _, _ in pairs]), torch.tensor([i for _, i, _ in pairs]),
                           torch.tensor([1.0 if y else 0.0 for _, _, y in pairs]), [split] * len(pairs))


def test_own_suggestions_rank_every_item_and_count_undecided_as_not_approved() -> None:
    # The champion showed items 0 (approved) and 2 (rejected); the model's own top 2 are 0 and 1.
    data = _data([0.0], [0.0, 10.0, 90.0, 180.0], [(0, 0, True), (0, 2, False)])
    own = own_suggestions(IDENTITY, data, "calibration", top_k=2)
    assert own.page_ids == [100] and own.labels == [[True, False]] and own.approved == [1]
    assert own.cosines[0][0] == pytest.approx(1.0) and own.cosines[0][1] == pytest.approx(math.cos(math.radians(10)))
    # Judged on the decided pairs; the rejected item is outside its top 2, so never selected.
    ((page, probs, labels, suggested),) = judged_files(IDENTITY, data, Platt(10.0, -5.0), 2, split="calibration")
    assert (page, labels, suggested) == (100, [True, False], [True, False])
    scores = FileScores(page, tuple(probs), tuple(labels), tuple(suggested))
    assert file_counts([scores], threshold=0.0)[0, :3].tolist() == [1.0, 1.0, 1.0]
    assert file_counts([FileScores(page, tuple(probs), tuple(labels))], threshold=0.0)[0, 0] == 2.0


def test_calibration_on_its_own_suggestions_is_not_fooled_by_the_champions_pairs() -> None:
    """The champion's decided pairs are the right item and a far one; the model's own
    second suggestion is a near neighbour nobody decided. Fitted on the decided pairs, the
    neighbours look right; fitted on its own suggestions, they do not."""
    rng = np.random.default_rng(0)
    true = [60.0 * k for k in range(6)]
    items = true + [t + 20.0 for t in true] + [t + 90.0 for t in true]   # right, neighbour, far
    rows = [int(k) for k in rng.integers(0, 6, size=60)]
    angles = [true[k] + float(rng.uniform(-8, 8)) for k in rows]
    pairs = [(f, k, True) for f, k in enumerate(rows)] + [(f, 12 + k, False) for f, k in enumerate(rows)]
    data = _data(angles, items, pairs)
    files, its = _unit(angles), _unit(items)

    def cos(item_of) -> torch.Tensor:
        return (files * its[torch.tensor([item_of(k) for k in rows])]).sum(dim=-1).double()

    index = data.select("calibration")
    decided = fit_probability((files[data.pair_file[index]] * its[data.pair_item[index]]).sum(dim=-1),
                              data.label[index])
    own = calibrate_own(IDENTITY, data, top_k=2)
    neighbours, right = cos(lambda k: 6 + k), cos(lambda k: k)
    assert float(decided(neighbours).mean()) > 0.9          # the bias: near neighbours look right
    assert float(own(neighbours).mean()) < 0.5 < float(own(right).mean())
    score = operating_score(own, 0.5)
    assert score is not None and float(own(torch.tensor(score, dtype=torch.float64))) == pytest.approx(0.5)
    assert operating_score(Platt(-1.0, 0.0), 0.5) is None   # no positive slope: suggest nothing


def test_the_one_platt_fit_recovers_a_known_calibration_and_stays_finite_when_separated() -> None:
    """The round's fit is core.verification.fit_calibration (the package's one Platt fit)."""
    from wikivel_bot.core.verification import fit_calibration

    rng = np.random.default_rng(0)
    x = rng.uniform(-0.2, 0.9, size=4000)
    y = (rng.random(4000) < 1 / (1 + np.exp(-(8 * x - 4)))).astype(float)
    fitted = fit_probability(torch.tensor(x), torch.tensor(y))
    assert fitted is not None and fitted.a == pytest.approx(8, abs=0.6) and fitted.b == pytest.approx(-4, abs=0.3)
    same = fit_calibration(x.tolist(), [bool(v) for v in y], "platt")
    assert (fitted.a, fitted.b) == (same.a, same.b)
    separated = fit_probability(torch.tensor([0.1] * 50 + [0.9] * 50), torch.tensor([0.0] * 50 + [1.0] * 50))
    assert separated is not None and math.isfinite(separated.a) and separated.a > 0
    assert operating_score(separated, 0.5) == pytest.approx(0.5, abs=1e-3)
    # Platt's smoothed targets keep a small separated set's slope moderate: p stays inside
    # (0, 1) at the classes' own scores, so the map still tells a near miss from a sure match.
    assert 0.9 < float(separated(torch.tensor(0.9, dtype=torch.float64))) < 0.99


def test_a_calibration_set_of_one_class_gives_no_fit_and_the_old_threshold_stays() -> None:
    assert fit_probability(torch.tensor([0.2, 0.4, 0.6]), torch.tensor([0.0, 0.0, 0.0])) is None
    assert fit_probability(torch.tensor([0.2, 0.4]), torch.tensor([1.0, 1.0])) is None
    assert fit_probability(torch.zeros(0), torch.zeros(0)) is None
    # The calibration files' own suggestions of one kind: calibrate_own says so with None.
    data = _data([0.0], [0.0, 90.0], [(0, 1, False)])
    assert calibrate_own(IDENTITY, data, top_k=2) is None


# -- the threshold in the checkpoint, the factory, the card and the daemon ----------------------

@pytest.fixture
def env(tmp_path, monkeypatch):
    from tests.linker_support import TINY_MODEL, tiny_model_file, write_animals_artifact

    tiny_model_file()
    labels = write_animals_artifact(tmp_path / "labels")
    models = tmp_path / "models"
    for key, value in {"LEARNING_MODELS_DIR": str(models), "LINKER_CACHE_DIR": str(tmp_path / "cache"),
                       "LINKER_NAME": "naive-mlp", "LINKER_MODEL": TINY_MODEL, "LINKER_WEIGHTS": "random",
                       "LINKER_DEVICE": "cpu", "LINKER_PRECISION": "fp32", "LINKER_LABELS_DIR": str(labels),
                       "LINKER_MIN_SCORE": "0.05", "REVIEW_REVIEWER": "Olga"}.items():
        monkeypatch.setenv(f"WIKIVEL_{key}", value)
    monkeypatch.chdir(tmp_path)
    return models, labels


def _learned(models: Path, name: str, labels: Path, operating, report=None) -> str:
    from tests.linker_support import tiny_settings
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import checkpoint as ckpt
    from wikivel_bot.linker.clip import backbone_info, build_clip_linker
    from wikivel_bot.linker.heads import NaiveHeads
    from wikivel_bot.linker.spec import get_spec

    spec = get_spec("naive-mlp")
    linker = build_clip_linker(spec, tiny_settings())
    torch.manual_seed(len(name))
    path = models / name / registry.MODEL
    ckpt.save_checkpoint(path, spec=spec, backbone=backbone_info(linker.backbone),
                         heads=NaiveHeads(linker.backbone.embed_dim),
                         labelset_hash=default_label_set(str(labels)).content_hash,
                         extra={"from_decisions": {"pairs": {}}, "operating_threshold": operating,
                                "calibration": {"method": "platt", "a": 12.0, "b": -6.0}})
    registry.write_report(models / name, report or {"created": "2026-11-25T00:00:00Z",
                                                    "verdict": {"outcome": "promote"}})
    return ckpt.file_digest(path)[:12]


def test_the_factory_runs_a_learned_model_at_its_own_threshold(env) -> None:
    from wikivel_bot.config import load_settings
    from wikivel_bot.linker import build_ready_linker

    models, labels = env
    before = build_ready_linker(load_settings())
    assert before.rules.min_score == pytest.approx(0.05)             # linker.min_score
    digest = _learned(models, "learned", labels, 0.4125)
    registry.promote(models, "learned", by="test")
    after = build_ready_linker(load_settings())
    assert after.rules.min_score == pytest.approx(0.4125)            # the model's, not linker.min_score
    assert f"ckpt:{digest}" in after.description.version
    assert after.description.version.split("setup:")[1] != before.description.version.split("setup:")[1]
    _learned(models, "untuned", labels, None)                       # no threshold: linker.min_score
    registry.promote(models, "untuned", by="test")
    assert build_ready_linker(load_settings()).rules.min_score == pytest.approx(0.05)


def test_a_promotion_writes_the_model_card_with_data_metrics_and_date(env) -> None:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    models, labels = env
    metrics = {"precision": 0.5, "recall": 0.4, "R@1": 0.6, "nDCG@5": 0.7}
    better = {"precision": 0.75, "recall": 0.45, "R@1": 0.8, "nDCG@5": 0.9}
    report = {"created": "2026-11-20T10:00:00Z", "linker": "naive-mlp", "digest": "ab" * 32, "epochs": 30,
              "operating_threshold": 0.4125,
              "data": {"decisions": 120, "kept": 100, "dropped": {"undone or replaced": 20},
                       "per_reviewer": {"Bob": 100},
                       "splits": {"train": {"files": 9, "approved": 9, "rejected": 18,
                                            "uploaded": ["2026-01-01", "2026-02-01"]}}},
              "verdict": {"outcome": "promote", "threshold": 0.5, "files": 40, "champion": metrics,
                          "challenger": better, "reasons": ["precision +0.250"],
                          "deltas": {k: {"delta": better[k] - metrics[k], "low": 0.01, "high": 0.4} for k in metrics}}}
    _learned(models, "won", labels, 0.4125, report)
    result = CliRunner().invoke(main, ["models", "promote", "won"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    card = (models / "model-card.md").read_text()
    assert card == (models / "won" / "model-card.md").read_text()
    when = registry.audit_lines(models)[-1]["at"]
    assert f"promoted: {when} by Olga" in card and "Created: 2026-11-20T10:00:00Z" in card
    assert "| train | 9 | 9 | 18 | 2026-01-01 – 2026-02-01 |" in card and "Bob 100" in card
    assert "| precision | 0.500 | 0.750 | 0.250 [0.010, 0.400] |" in card
    assert "Operating threshold: score 0.412" in card
    # Rolled back to nothing learned: no card claims to describe the running model.
    assert CliRunner().invoke(main, ["models", "rollback"], catch_exceptions=False).exit_code == 0
    assert not (models / "model-card.md").exists() and (models / "won" / "model-card.md").is_file()


def test_the_daemon_follows_a_promotion_and_a_rollback_without_a_restart(env, caplog) -> None:
    import logging

    from wikivel_bot.config import load_settings
    from wikivel_bot.daemon.promotions import FollowingLinker
    from wikivel_bot.errors import LinkerError
    from wikivel_bot.linker import build_ready_linker

    models, labels = env
    built = []

    def build(settings):
        # The factory asks the registry what runs; this stand-in refuses one model by name.
        built.append(registry.with_running_model(settings).linker.checkpoint)
        if "broken" in built[-1]:
            raise LinkerError("checkpoint unreadable")
        return build_ready_linker(settings)

    shown = {}   # what the daemon's state document (`status`) names
    following = FollowingLinker(load_settings(), build,
                                on_change=lambda ready: shown.update(version=ready.description.version))
    start = following.ready.description.version
    assert "ckpt:" not in start and not following.refresh() and len(built) == 1   # nothing changed
    digest = _learned(models, "learned", labels, 0.4125)
    registry.promote(models, "learned", by="test")
    with caplog.at_level(logging.INFO):
        assert following.refresh()
    assert f"ckpt:{digest}" in following.ready.description.version
    assert following.ready.rules.min_score == pytest.approx(0.4125)
    assert shown == {"version": following.ready.description.version}
    assert any("model-loaded" in r.getMessage() and "running=learned" in r.getMessage() for r in caplog.records)
    assert not following.refresh() and len(built) == 2                          # once per change
    # A promotion that cannot be built keeps the model that runs.
    _learned(models, "broken", labels, 0.3)
    registry.promote(models, "broken", by="test")
    assert not following.refresh() and f"ckpt:{digest}" in following.ready.description.version
    assert f"ckpt:{digest}" in shown["version"]
    registry.rollback(models, by="test")                                       # back to "learned"
    registry.rollback(models, by="test")                                       # back to linker.checkpoint
    assert following.refresh()
    assert following.ready.description.version == start and following.ready.rules.min_score == pytest.approx(0.05)


def test_a_learned_models_suggestions_carry_its_calibrated_probability(env, tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from tests.linker_support import image_bytes
    from wikivel_bot.cli import main

    models, labels = env
    _learned(models, "learned", labels, -1.0)   # a threshold every cosine reaches: all suggested
    registry.promote(models, "learned", by="test")
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    result = CliRunner().invoke(main, ["suggest", str(photo), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.stdout)["files"]
    assert found["candidates"]
    for c in found["candidates"]:
        # The checkpoint's Platt (12, -6) on the suggestion's cosine: the uncertainty order
        # then compares it with learning.threshold, like a verifier's probability.
        assert c["probability"] == pytest.approx(1 / (1 + math.exp(-(12.0 * c["score"] - 6.0))), abs=2e-4)


def test_suggest_says_the_operating_threshold_dropped_everything(env, tmp_path) -> None:
    """After a promotion the learned checkpoint's threshold replaces linker.min_score: a file
    with nothing above it must say which threshold, and -v what was dropped and why, not
    only "no suggestions left after the ranking rules"."""
    from click.testing import CliRunner

    from tests.linker_support import image_bytes
    from wikivel_bot.cli import main

    models, labels = env
    _learned(models, "strict", labels, 2.0)   # above every cosine: nothing is suggested
    registry.promote(models, "strict", by="test")
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    checkpoint = models / "strict" / registry.MODEL

    plain = CliRunner().invoke(main, ["suggest", str(photo)], catch_exceptions=False)
    assert plain.exit_code == 0, plain.output
    (why,) = [line for line in plain.output.splitlines() if "(no suggestions" in line]
    assert "below the operating threshold 2.0000 of the learned checkpoint" in why, why
    assert str(checkpoint) in why and "which replaces linker.min_score 0.0500" in why
    assert "; -v lists what was dropped and why" in why
    scored = int(why.split("(no suggestions: ")[1].split(" of ")[1].split(" ")[0])
    assert scored > 0 and f"{scored} of {scored} scored items" in why
    assert "dropped Q" not in plain.output

    verbose = CliRunner().invoke(main, ["suggest", "-v", str(photo)], catch_exceptions=False)
    assert verbose.exit_code == 0, verbose.output
    lines = verbose.output.splitlines()
    dropped = [line for line in lines if line.startswith("    dropped Q")]
    assert len(dropped) == scored, verbose.output
    for line in dropped:
        assert ": score " in line and "below the threshold 2.000" in line, line
    assert "-v lists" not in verbose.output
