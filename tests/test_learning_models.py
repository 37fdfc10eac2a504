"""Champion/challenger: the judge's rule, the models directory, promotion and rollback as
`suggest` sees them, and the daemon's learning job (docs/learning.md).

`suggest` runs through the real click group with the tiny open_clip model (random weights):
what changes between promotions is the checkpoint digest in the linker version it reports.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from wikivel_bot.errors import UsageError
from wikivel_bot.learning import registry
from wikivel_bot.learning.judge import judge
from wikivel_bot.learning.metrics import FileScores, bootstrap_deltas, file_counts, metrics_of, utility_weight
from wikivel_bot.learning.schedule import JOB_ID, add_learning_job


def _files(n: int, good: bool, seed: int = 0):
    """n files, each with an approved and two rejected items; a good model scores the
    approval high and the rejections low, a bad one the other way round on a third of files."""
    import random

    rng = random.Random(seed)
    out = []
    for page in range(n):
        wrong = not good and page % 3 == 0
        pos = rng.uniform(0.2, 0.4) if wrong else rng.uniform(0.6, 0.95)
        negs = [rng.uniform(0.55, 0.9) if wrong else rng.uniform(0.05, 0.45) for _ in range(2)]
        out.append(FileScores(page, (pos, *negs), (True, False, False)))
    return out


def test_metrics_at_the_threshold() -> None:
    files = [FileScores(1, (0.9, 0.7, 0.2), (True, False, False)), FileScores(2, (0.3, 0.6), (True, False))]
    m = metrics_of(file_counts(files, 0.5))
    assert m["precision"] == pytest.approx(1 / 3) and m["recall"] == pytest.approx(1 / 2)
    assert m["R@1"] == pytest.approx(1 / 2)
    # Utility per file, TP - λ·FP with λ = 1 at t = 0.5: (1 - 2) over 2 files.
    assert m["utility"] == pytest.approx(-0.5) and m["selected"] == 3
    assert metrics_of(file_counts(files, 0.5), utility_weight(0.8))["utility"] == pytest.approx((1 - 4 * 2) / 2)
    # Nothing selected: no statement at all — utility 0, and no precision (not "precision 0").
    nothing = metrics_of(file_counts(files, 0.99))
    assert nothing["utility"] == 0.0 and math.isnan(nothing["precision"])


def test_utility_weight_makes_the_target_precision_the_break_even() -> None:
    for t in (0.5, 0.8, 0.9):
        lam = utility_weight(t)
        # A selection at exactly precision t earns nothing; above it earns, below it costs.
        assert 100 * t - lam * 100 * (1 - t) == pytest.approx(0.0)
    assert utility_weight(0.5) == 1.0 and utility_weight(0.8) == pytest.approx(4.0)


def test_a_worse_challenger_is_refused() -> None:
    verdict = judge(_files(60, good=True), _files(60, good=False), threshold=0.5, resamples=500, seed=1)
    assert verdict.outcome == "keep" and not verdict.promote
    assert any("utility gain" in r for r in verdict.reasons)
    assert verdict.deltas["utility"]["delta"] < 0 and verdict.deltas["precision"]["delta"] < 0


def test_a_better_challenger_wins_beyond_the_interval() -> None:
    verdict = judge(_files(60, good=False), _files(60, good=True), threshold=0.5, resamples=500, seed=1)
    assert verdict.promote, verdict.reasons
    assert verdict.deltas["utility"]["low"] > 0
    assert verdict.settings["utility_weight"] == 1.0
    # Seeded: the same inputs give the same interval.
    again = judge(_files(60, good=False), _files(60, good=True), threshold=0.5, resamples=500, seed=1)
    assert again.deltas == verdict.deltas


def test_too_few_files_or_selecting_nothing_never_promote() -> None:
    few = judge(_files(10, good=False), _files(10, good=True), threshold=0.5, resamples=200)
    assert not few.promote and "only 10 evaluation files" in few.reasons[0]
    # A challenger that selects nothing makes no statement: never promoted, whatever the champion.
    silent = [FileScores(f.page_id, tuple(min(p, 0.4) for p in f.probabilities), f.labels)
              for f in _files(60, good=True)]
    verdict = judge(_files(60, good=False), silent, threshold=0.5, resamples=200)
    assert not verdict.promote and any("selects nothing" in r for r in verdict.reasons)
    assert math.isnan(verdict.challenger["precision"])


def test_a_timid_champion_is_beaten_on_utility_not_on_a_precision_of_zero() -> None:
    """The champion selects nothing (utility 0, no precision): a challenger whose right
    statements outnumber its wrong ones wins on utility alone, and the verdict says the
    precision could not be compared."""
    timid = [FileScores(f.page_id, tuple(min(p, 0.4) for p in f.probabilities), f.labels)
             for f in _files(60, good=True)]
    verdict = judge(timid, _files(60, good=True), threshold=0.5, resamples=300, seed=2)
    assert verdict.promote, verdict.reasons
    assert "no precision to compare" in verdict.reasons[0]
    assert math.isnan(verdict.deltas["precision"]["delta"]) and verdict.champion["utility"] == 0.0


def test_more_right_statements_at_lower_precision_win_only_within_the_margin() -> None:
    """Utility up but precision down by far more than the margin: kept (non-inferiority)."""
    import random

    rng = random.Random(3)
    # Champion: one sure right statement a file. Challenger: that one, plus on every file a
    # second approved item and, on most files, a wrong one above the threshold too.
    champion, challenger = [], []
    for page in range(80):
        labels = (True, True, False)
        champion.append(FileScores(page, (0.9, 0.3, 0.2), labels))
        wrong = 0.7 if rng.random() < 0.7 else 0.3
        challenger.append(FileScores(page, (0.9, 0.8, wrong), labels))
    verdict = judge(champion, challenger, threshold=0.5, resamples=300, seed=0)
    assert verdict.deltas["utility"]["low"] > 0
    assert verdict.deltas["precision"]["high"] < -0.02 and not verdict.promote
    assert any("precision may fall by more than 0.02" in r for r in verdict.reasons)


def test_bootstrap_interval_holds_the_point_estimate() -> None:
    a, b = file_counts(_files(40, False), 0.5), file_counts(_files(40, True), 0.5)
    for name, d in bootstrap_deltas(a, b, resamples=300, seed=0).items():
        assert d["low"] <= d["delta"] <= d["high"], name


# -- the models directory ----------------------------------------------------------------------

def _model(root: Path, name: str, outcome: str = "promote", payload: bytes = b"x") -> Path:
    (root / name).mkdir(parents=True)
    (root / name / registry.MODEL).write_bytes(payload)
    registry.write_report(root / name, {"created": "2026-11-25T00:00:00Z", "verdict": {"outcome": outcome}})
    return root / name


def test_promote_and_rollback_are_audited(tmp_path: Path) -> None:
    _model(tmp_path, "a")
    _model(tmp_path, "b")
    assert registry.running_checkpoint(tmp_path) is None
    assert registry.promote(tmp_path, "a", by="Olga") is None
    assert registry.promote(tmp_path, "b", by="Olga", reason="won") == "a"
    assert registry.running_checkpoint(tmp_path) == tmp_path / "b" / registry.MODEL
    assert [e.name for e in registry.list_models(tmp_path) if e.running] == ["b"]
    assert registry.rollback(tmp_path, by="Olga") == "a"
    assert registry.rollback(tmp_path, by="Olga") is None
    with pytest.raises(UsageError, match="nothing to roll back"):
        registry.rollback(tmp_path, by="Olga")
    with pytest.raises(UsageError, match="no checkpoint 'c'"):
        registry.promote(tmp_path, "c", by="Olga")
    with pytest.raises(UsageError, match="not a checkpoint name"):
        registry.promote(tmp_path, "../etc", by="Olga")
    lines = registry.audit_lines(tmp_path)
    assert [(x["action"], x["before"], x["after"], x["by"]) for x in lines] == [
        ("promote", None, "a", "Olga"), ("promote", "a", "b", "Olga"),
        ("rollback", "b", "a", "Olga"), ("rollback", "a", None, "Olga")]
    assert lines[1]["reason"] == "won" and lines[0]["at"].endswith("Z")


def test_what_builds_a_linker_runs_the_promoted_checkpoint(tmp_path: Path) -> None:
    """Settings are read without the models; the one factory and the round ask the registry."""
    from wikivel_bot.config import load_settings
    from wikivel_bot.errors import UsageError

    env = {"WIKIVEL_LEARNING_MODELS_DIR": str(tmp_path), "WIKIVEL_LINKER_CHECKPOINT": "base.pt"}

    def running(given=()):
        return registry.with_running_model(load_settings(env=env), given).linker

    assert running().checkpoint == "base.pt"                          # nothing promoted yet
    _model(tmp_path, "a")
    registry.promote(tmp_path, "a", by="Olga")
    assert load_settings(env=env).linker.checkpoint == "base.pt"      # settings as configured
    assert running().checkpoint == str(tmp_path / "a" / registry.MODEL)
    assert running().name == "zero-shot"                              # its report names no variant
    registry.write_report(tmp_path / "a", {"verdict": {"outcome": "promote"}, "linker": "naive-mlp"})
    assert running().name == "naive-mlp"                              # learned over zero-shot: runs as a head
    # What the command line set explicitly stays: a --checkpoint runs as given, a --linker is kept.
    assert running(given=("checkpoint",)).checkpoint == "base.pt"
    assert running(given=("name",)).name == "zero-shot"
    assert running(given=("name",)).checkpoint == str(tmp_path / "a" / registry.MODEL)
    # So does a key the settings' origins name as set on the command line (-o, `run --linker`).
    import dataclasses

    flagged = dataclasses.replace(load_settings(env=env), origins=(("linker.checkpoint", registry.COMMAND_LINE),))
    assert registry.with_running_model(flagged).linker.checkpoint == "base.pt"
    (tmp_path / "a" / registry.MODEL).unlink()
    with pytest.raises(UsageError, match="learning.models_dir: .* names 'a' as running, but .* is missing"):
        running()
    assert registry.running_model_problem(tmp_path).endswith("run `wikivel-bot models rollback` (or `models promote NAME`)")
    assert load_settings(env=env).linker.checkpoint == "base.pt"      # reading settings still works
    assert registry.running_model_problem("") is None


@pytest.fixture
def gone_env(tmp_path, monkeypatch):
    """`second` runs (after `first`), but its model.pt was deleted by hand; `other` won too."""
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    models = tmp_path / "models"
    for name in ("first", "second", "other"):
        _model(models, name)
    registry.promote(models, "first", by="Olga")
    registry.promote(models, "second", by="Olga")
    (models / "second" / registry.MODEL).unlink()
    for key, value in {"LEARNING_MODELS_DIR": "models", "LINKER_CHECKPOINT": "base.pt",
                       "REVIEW_REVIEWER": "Olga"}.items():
        monkeypatch.setenv(f"WIKIVEL_{key}", value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "photo.jpg").write_bytes(b"not read: the settings refuse first")

    def run(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return models, run


GONE = ("error: learning.models_dir: models/registry.json names 'second' as running, but "
        "models/second/model.pt is missing; run `wikivel-bot models rollback` (or `models promote NAME`)")


def test_a_running_model_that_is_gone_stops_only_what_builds_a_linker(gone_env) -> None:
    models, run = gone_env
    refused = run("suggest", "photo.jpg")
    assert refused.exit_code != 0 and refused.output.splitlines() == [GONE], refused.output
    # status and config show read settings without the models, and say what is wrong.
    problem = GONE.replace("error: learning.models_dir: ", "", 1)
    shown = run("config", "show")
    assert shown.exit_code == 0, shown.output
    assert f"# learning.models_dir: PROBLEM: {problem}" in shown.output.splitlines()
    assert 'checkpoint = "base.pt"' in shown.output
    assert run("db", "upgrade").exit_code == 0
    status = run("status")
    assert f"learning: PROBLEM: {problem}" in status.output.splitlines(), status.output

    listed = run("models")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == "running: second"
    assert lines[1].startswith("MISSING: models/second/model.pt is gone") and "models rollback" in lines[1]
    assert "* second  MISSING models/second/model.pt" in lines
    assert any(line.startswith("  first  2026-11-25") for line in lines)

    back = run("models", "rollback", "--reason", "file deleted")
    assert back.exit_code == 0 and back.output == "running: first\n", back.output
    assert registry.audit_lines(models)[-1] | {"at": ""} == {
        "at": "", "action": "rollback", "before": "second", "after": "first", "by": "Olga", "reason": "file deleted"}
    shown = run("config", "show")
    assert shown.exit_code == 0 and "# learning.models_dir: runs models/first/model.pt" in shown.output, shown.output


def test_a_gone_running_model_can_be_replaced_by_a_promotion(gone_env) -> None:
    models, run = gone_env
    promoted = run("models", "promote", "other")
    assert promoted.exit_code == 0, promoted.output
    assert "running: other (was second;" in promoted.output
    assert [(a["action"], a["before"], a["after"]) for a in registry.audit_lines(models)][-1] == (
        "promote", "second", "other")
    shown = run("config", "show")
    assert shown.exit_code == 0 and "# learning.models_dir: runs models/other/model.pt" in shown.output, shown.output
    # Its predecessor is gone: a later rollback passes it over, back to `first`.
    assert run("models", "rollback").output == "running: first\n"


def test_promoting_a_name_with_no_checkpoint_says_so_not_that_it_lost(gone_env) -> None:
    """A typo, or a checkpoint deleted by hand, has no verdict: "did not win its judgement
    ... use --force" would send the operator to force something that is not there."""
    models, run = gone_env
    for name in ("secnod", "second"):  # never there; its report.json stayed, model.pt is gone
        refused = run("models", "promote", name)
        assert refused.exit_code != 0
        assert refused.output.splitlines() == [
            f"error: no checkpoint '{name}' in models (checkpoints there: first, other); "
            "`wikivel-bot models` lists them with their verdicts"], refused.output
        assert "judgement" not in refused.output and "--force" not in refused.output
        forced = run("models", "promote", name, "--force")
        assert forced.exit_code != 0 and f"no checkpoint '{name}'" in forced.output
    empty = models.parent / "empty"
    empty.mkdir()
    nothing = run("models", "--models-dir", str(empty), "promote", "a")
    assert nothing.exit_code != 0 and "it holds no checkpoint yet" in nothing.output
    assert [a["after"] for a in registry.audit_lines(models)] == ["first", "second"]  # nothing changed


# -- the daemon's job --------------------------------------------------------------------------

def _learning(**values: object):
    defaults = {"schedule_hours": 0.0, "models_dir": ""}
    return SimpleNamespace(learning=SimpleNamespace(**{**defaults, **values}))


def test_the_learning_job_runs_only_when_its_setting_asks() -> None:
    from apscheduler.schedulers.background import BackgroundScheduler

    from wikivel_bot.config import load_settings

    assert load_settings(env={}).learning.schedule_hours == 0   # off by default
    for settings, scheduled in [(_learning(), False), (_learning(schedule_hours=6.0), False),
                                (_learning(schedule_hours=6.0, models_dir="models"), True)]:
        scheduler = BackgroundScheduler()
        assert add_learning_job(scheduler, settings, lambda: None) is scheduled
        job = scheduler.get_job(JOB_ID)
        assert (job is not None) is scheduled
        if job is not None:
            assert job.trigger.interval.total_seconds() == 6 * 3600


def test_the_daemon_schedules_the_learning_job_through_the_rule() -> None:
    """daemon.run adds the job through add_learning_job (so the rule above is the daemon's)."""
    import inspect

    from wikivel_bot.daemon import scheduler as daemon

    source = inspect.getsource(daemon.Daemon.run)
    assert "add_learning_job(scheduler, s, " in source


# -- promotion and rollback as `suggest` reports them -------------------------------------------

@pytest.fixture
def suggest_env(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from tests.linker_support import TINY_MODEL, image_bytes, tiny_model_file, write_animals_artifact

    tiny_model_file()
    labels = write_animals_artifact(tmp_path / "labels")
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(image_bytes())
    models = tmp_path / "models"
    for key, value in {"LEARNING_MODELS_DIR": str(models), "LINKER_CACHE_DIR": str(tmp_path / "cache"),
                       "LINKER_NAME": "naive-mlp", "LINKER_MODEL": TINY_MODEL, "LINKER_WEIGHTS": "random",
                       "LINKER_DEVICE": "cpu", "LINKER_PRECISION": "fp32", "LINKER_LABELS_DIR": str(labels),
                       "REVIEW_REVIEWER": "Olga"}.items():
        monkeypatch.setenv(f"WIKIVEL_{key}", value)
    monkeypatch.chdir(tmp_path)
    return tmp_path, labels, photo, models


def _checkpoint(models: Path, name: str, labels: Path, seed: int, outcome: str = "promote") -> str:
    import torch

    from tests.linker_support import tiny_settings
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import checkpoint as ckpt
    from wikivel_bot.linker.clip import backbone_info, build_clip_linker
    from wikivel_bot.linker.heads import NaiveHeads
    from wikivel_bot.linker.spec import get_spec

    spec = get_spec("naive-mlp")
    linker = build_clip_linker(spec, tiny_settings())
    torch.manual_seed(seed)
    heads = NaiveHeads(linker.backbone.embed_dim)
    torch.nn.init.normal_(heads.image_head.net[-1].weight)
    path = models / name / registry.MODEL
    ckpt.save_checkpoint(path, spec=spec, backbone=backbone_info(linker.backbone), heads=heads,
                         labelset_hash=default_label_set(str(labels)).content_hash)
    registry.write_report(models / name, {"created": "2026-11-25T00:00:00Z", "verdict": {"outcome": outcome}})
    return ckpt.file_digest(path)[:12]


def test_promotion_and_rollback_change_the_linker_suggest_reports(suggest_env) -> None:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    tmp_path, labels, photo, models = suggest_env
    first, second = _checkpoint(models, "first", labels, 1), _checkpoint(models, "second", labels, 2)
    _checkpoint(models, "loser", labels, 3, outcome="keep")
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(main, list(args), catch_exceptions=False)
        return result

    def version() -> str:
        result = run("suggest", str(photo), "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["linker"]["version"]

    assert "ckpt:" not in version()                      # nothing promoted: the untrained head
    assert run("models", "promote", "first").exit_code == 0
    assert f"ckpt:{first}" in version()
    assert run("models", "promote", "second", "--reason", "won on later decisions").exit_code == 0
    assert f"ckpt:{second}" in version()
    listed = run("models").output
    assert "running: second" in listed and "* second" in listed and "verdict=keep" in listed
    refused = run("models", "promote", "loser")
    assert refused.exit_code != 0 and "did not win its judgement (verdict: keep)" in refused.output
    assert f"ckpt:{second}" in version()                 # a refused promotion changes nothing
    assert run("models", "rollback").exit_code == 0
    assert f"ckpt:{first}" in version()
    assert (models / "model-card.md").is_file()
    audit = registry.audit_lines(models)
    assert [(a["action"], a["after"], a["by"]) for a in audit] == [
        ("promote", "first", "Olga"), ("promote", "second", "Olga"), ("rollback", "first", "Olga")]
