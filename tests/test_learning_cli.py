"""`dataset from-decisions` and `train --from-decisions` through the real click group, on a
SQLite queue with real decisions and the tiny open_clip model (random weights, CPU).

A challenger is always kept with its report; here the evaluation part is too small to prove
anything (fewer files than the judge's minimum), so it must be refused and the running model
must stay as it was — `suggest`'s linker version included.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from tests.db_support import open_store  # noqa: E402
from tests.learning_support import COLOURS, decided_queue  # noqa: E402
from tests.linker_support import image_bytes  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.learning import registry  # noqa: E402
from wikivel_bot.types import DecisionAction  # noqa: E402


@pytest.fixture
def env(tmp_path, monkeypatch):
    def mallory_approves_everything(store, page: int) -> None:
        store.record_decision(page, "Q5", DecisionAction.APPROVE, "Mallory", "web")

    data = decided_queue(tmp_path, monkeypatch, more=mallory_approves_everything,
                         settings={"LEARNING_EPOCHS": "3", "LEARNING_BOOTSTRAP": "200"})
    return tmp_path, data


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_decisions_to_a_judged_challenger(env) -> None:
    tmp_path, data = env
    made = _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images",
                "--exclude-reviewer", "Mallory")
    assert made.exit_code == 0, made.output
    assert "decisions: 45 read, 30 kept, 15 excluded reviewer" in made.output
    assert "train: 9 files, 9 approved, 9 rejected" in made.output
    card = json.loads((data / "card.json").read_text())
    assert card["per_reviewer"] == {"Bob": 30} and card["images_missing"] == 0

    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    before = json.loads(_run("suggest", str(photo), "--json").stdout)["linker"]["version"]

    trained = _run("train", "--from-decisions", str(data))
    assert trained.exit_code == 0, trained.output
    assert "verdict: kept, not promoted — only 3 evaluation files (at least 20 needed)" in trained.output
    (entry,) = registry.list_models(tmp_path / "models")
    assert not entry.running and entry.verdict == "keep"
    report = entry.report
    assert report["data"]["kept"] == 30 and report["verdict"]["files"] == 3
    assert report["champion_checkpoint"] == "" and report["linker"] == "naive-mlp"
    # The challenger is an ordinary head checkpoint, and nothing runs it.
    from wikivel_bot.linker.checkpoint import load_checkpoint

    assert load_checkpoint(entry.path).extra["from_decisions"]["pairs"] == {"train": 18, "calibration": 6,
                                                                           "evaluation": 6}
    assert registry.read_registry(tmp_path / "models")["running"] is None
    assert json.loads(_run("suggest", str(photo), "--json").stdout)["linker"]["version"] == before
    assert "verdict=keep" in _run("models").output
    # Its re-calibrated operating threshold, as a thresholds file `linker.calibrated` can apply.
    from wikivel_bot.liveeval.thresholds import load_thresholds

    thresholds = load_thresholds(entry.path.parent / "thresholds.json")
    assert list(thresholds.linkers) == ["naive-mlp"]
    # The operating threshold travels in the checkpoint: the cosine where the challenger's
    # own-suggestion calibration reaches learning.threshold (the same as the thresholds file).
    extra = load_checkpoint(entry.path).extra
    platt = extra["calibration"]
    assert platt["top_k"] == 10 and report["operating_threshold"] == extra["operating_threshold"]
    if extra["operating_threshold"] is not None:
        import math

        p = 1 / (1 + math.exp(-(platt["a"] * extra["operating_threshold"] + platt["b"])))
        assert abs(p - 0.5) < 1e-6
        assert abs(json.loads((entry.path.parent / "thresholds.json").read_text())["linkers"]["naive-mlp"]["threshold"]
                   - extra["operating_threshold"]) < 1e-5


def test_too_few_decisions_is_one_line(env) -> None:
    tmp_path, data = env
    made = _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images", "--reviewer-cap", "1")
    assert made.exit_code == 0, made.output
    result = _run("train", "--from-decisions", str(data))
    assert result.exit_code != 0
    assert "error: too few decisions to learn from" in result.output and "Traceback" not in result.output


def test_the_daemons_learning_round(env, caplog) -> None:
    """What the scheduled job runs: the dataset rebuilt in MODELS_DIR/decisions (images
    fetched through the given client), a challenger judged; kept here, nothing promoted."""
    import logging

    from wikivel_bot.config import load_settings
    from wikivel_bot.learning.schedule import learning_round

    tmp_path, _ = env
    settings = load_settings()
    store = open_store(settings.db.url)
    fetched = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return image_bytes(COLOURS[len(fetched) % 3], seed=len(fetched))

    with caplog.at_level(logging.INFO):
        result = learning_round(settings, store, fetch=fetch)
    store.close()
    assert len(fetched) == 15 and (tmp_path / "models" / "decisions" / "records.jsonl").is_file()
    assert not result.promoted and result.verdict.outcome == "keep"
    assert registry.read_registry(tmp_path / "models")["running"] is None
    assert any("learning" in r.getMessage() and "kept" in r.getMessage() and "runs=unchanged" in r.getMessage()
               for r in caplog.records)


def test_a_zero_shot_bot_learns_a_head(env, monkeypatch) -> None:
    """The default linker: the champion is zero-shot (identity heads), the challenger a
    naive-mlp head over the same embeddings, which is what a promotion would run."""
    tmp_path, data = env
    monkeypatch.setenv("WIKIVEL_LINKER_NAME", "zero-shot")
    from wikivel_bot.train.decisions import heads as from_decisions

    monkeypatch.setattr(from_decisions, "IMAGE_BLOCK", 4)   # images encoded a block at a time
    assert _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images").exit_code == 0
    trained = _run("train", "--from-decisions", str(data))
    assert trained.exit_code == 0, trained.output
    (entry,) = registry.list_models(tmp_path / "models")
    assert entry.report["linker"] == "naive-mlp" and entry.verdict == "keep"
    assert entry.report["skipped"] == {"no image": 0}
    from wikivel_bot.linker.checkpoint import load_checkpoint

    assert sum(load_checkpoint(entry.path).extra["from_decisions"]["pairs"].values()) == 45


def test_without_a_models_directory_is_one_line(env, monkeypatch) -> None:
    _, data = env
    monkeypatch.delenv("WIKIVEL_LEARNING_MODELS_DIR")
    assert _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images").exit_code == 0
    for args in (["train", "--from-decisions", str(data)], ["models"], ["models", "rollback"]):
        result = _run(*args)
        assert result.exit_code != 0 and "Traceback" not in result.output
        assert result.output.startswith("error:") and "models_dir" in result.output, result.output



def test_a_kept_challenger_leaves_the_running_model_recalibrated_and_rollback_undoes_it(env, monkeypatch) -> None:
    """The round judges the challenger against the running model recalibrated on this round's
    decisions, so when the challenger is kept that recalibration runs: a new entry (the same
    weights, a new threshold), audited as `recalibrate`, and `models rollback` undoes it.
    (The minimum of calibration files is lowered here: this queue has three.)"""
    import torch

    from wikivel_bot.learning import contest
    from wikivel_bot.linker.checkpoint import load_checkpoint

    tmp_path, data = env
    monkeypatch.setattr(contest, "RECALIBRATION_MIN_FILES", 1)
    assert _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images",
                "--exclude-reviewer", "Mallory").exit_code == 0
    trained = _run("train", "--from-decisions", str(data))
    assert trained.exit_code == 0, trained.output
    assert "verdict: kept, not promoted" in trained.output
    models = tmp_path / "models"
    running = registry.read_registry(models)["running"]
    assert running and running.startswith("recalibrated-"), trained.output
    assert f"running model recalibrated (same weights): {running} now runs" in trained.output
    challenger, recalibrated = sorted(registry.list_models(models), key=lambda e: not e.name.startswith("challenger"))
    assert recalibrated.running and recalibrated.verdict == "recalibrated"
    # The running model's weights (the untrained naive-mlp heads here), its new calibration and threshold.
    heads = load_checkpoint(recalibrated.path)
    extra = heads.extra
    assert extra["from_decisions"]["trained"].startswith("calibration only")
    assert extra["operating_threshold"] is not None and extra["calibration"]["a"] > 0
    assert extra["calibration"] == {**recalibrated.report["calibration"]["running"], "method": "platt", "top_k": 10}
    fresh = load_checkpoint(challenger.path)
    assert any(not torch.equal(v, fresh.heads[k]) for k, v in heads.heads.items())  # not the challenger's weights
    (line,) = registry.audit_lines(models)
    assert (line["action"], line["before"], line["after"]) == ("recalibrate", None, running)
    assert _run("models", "rollback").exit_code == 0
    assert registry.read_registry(models)["running"] is None
    # A recalibration may be run again by hand without --force: it is the running model's own weights.
    assert _run("models", "promote", running).exit_code == 0
    assert registry.read_registry(models)["running"] == running
