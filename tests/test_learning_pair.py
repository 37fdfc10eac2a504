"""A learning round trains the cascade's pair model when the cascade runs (docs/learning.md).

Two levels:

* on tensors (``train.decisions.pair``): the fine-tune leaves the running model alone and
  ends no worse on the held-out decisions than it began; undecided suggestions count as not
  approved; a model can select only its own top-k; one Platt map serves score and logit;
* through the real click group, on a SQLite queue with real decisions and the tiny open_clip
  model (random weights, CPU): with ``linker.name = cascade`` running a cascade checkpoint,
  `train --from-decisions` writes a cascade checkpoint with new pair weights (the first stage
  and its settings kept), its calibration and operating threshold; promoted, it is what
  every path builds (the factory) and what the linker version names.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from tests.learning_support import cascade_checkpoint, decided_queue  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.learning import registry  # noqa: E402
from wikivel_bot.train.decisions.heads import Platt  # noqa: E402
from wikivel_bot.train.decisions.pair import (  # noqa: E402
    PairDecisions,
    PairTuneConfig,
    _held_loss,
    fine_tune_pair,
    judged_pair_files,
    own_pair_suggestions,
    pair_output,
    score_calibration,
)

# -- on tensors --------------------------------------------------------------------------------

def _world(seed: int = 0, files: int = 120, items: int = 12, dim: int = 16) -> PairDecisions:
    """Files whose text names their item (the pair model can learn it), decided on the first
    stage's top 3 by the truth: 60 % train, 20 % calibration, 20 % evaluation."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(seed)
    latent = F.normalize(torch.randn(items, dim, generator=g), dim=-1)
    truth = torch.randint(0, items, (files,), generator=g)
    image = F.normalize(latent[truth] + 0.9 * torch.randn(files, dim, generator=g), dim=-1)
    text = F.normalize(latent[truth] + 0.3 * torch.randn(files, dim, generator=g), dim=-1)
    item_image = F.normalize(latent + 0.5 * torch.randn(items, dim, generator=g), dim=-1)
    top = (image @ latent.T).topk(3, dim=1).indices
    pf, pi, label, split = [], [], [], []
    for f in range(files):
        name = "train" if f < 0.6 * files else ("calibration" if f < 0.8 * files else "evaluation")
        for i in top[f].tolist():
            pf.append(f)
            pi.append(i)
            label.append(float(i == int(truth[f])))
            split.append(name)
    return PairDecisions(files=image, items=latent, page_ids=list(range(100, 100 + files)),
                         qids=[f"Q{i}" for i in range(items)], pair_file=torch.tensor(pf), pair_item=torch.tensor(pi),
                         label=torch.tensor(label), split=split, text=text, present=torch.ones(files, dtype=torch.bool),
                         first_query=image, item_image=item_image, item_image_present=torch.ones(items, dtype=torch.bool),
                         first_items=latent, candidates=6)


def _start(data: PairDecisions):
    from wikivel_bot.linker.cascade.pair import build_pair_model

    torch.manual_seed(0)
    pair = build_pair_model(data.files.shape[1], {})
    pair.set_statistics(data.files, data.text, data.items, data.item_image)
    return pair.eval()


def test_fine_tuning_learns_from_the_decisions_and_leaves_the_running_model_alone() -> None:
    data = _world()
    start = _start(data)
    before = {k: v.clone() for k, v in start.state_dict().items()}
    tuned = fine_tune_pair(start, data, PairTuneConfig(epochs=15, lr=3e-3, batch_size=16))
    assert all(torch.equal(v, start.state_dict()[k]) for k, v in before.items())
    held = data.select("calibration")
    # Kept at its best held-out epoch: better there than the start, which ranks like the first stage.
    assert _held_loss(tuned, data, held) < _held_loss(start, data, held)
    # And it learned what the decisions say: approved pairs above rejected ones on later files.
    assert _separation(tuned, data) > _separation(start, data)


def _separation(model, data: PairDecisions, split: str = "evaluation") -> float:
    """Mean logit of the approved pairs minus that of the rejected ones, on one split."""
    index = data.select(split)
    rows, items = data.pair_file[index], data.pair_item[index].unsqueeze(1)
    with torch.no_grad():
        z = pair_output(model, data, rows, items).logits[:, 0]
    approved = data.label[index] > 0.5
    return float(z[approved].mean() - z[~approved].mean())


def test_trained_on_corrupted_decisions_it_never_ends_worse_on_the_held_out_ones() -> None:
    data = _world()
    start = _start(data)
    train = torch.tensor([s == "train" for s in data.split])
    flipped = replace(data, label=torch.where(train, 1.0 - data.label, data.label))
    config = PairTuneConfig(epochs=10, lr=3e-3, batch_size=16)
    corrupted, honest = fine_tune_pair(start, flipped, config), fine_tune_pair(start, data, config)
    held = data.select("calibration")
    assert _held_loss(corrupted, data, held) <= _held_loss(start, data, held)
    assert _separation(corrupted, data) < _separation(honest, data)


def test_own_suggestions_count_undecided_items_as_not_approved_and_select_only_their_own() -> None:
    data = _world(files=40)
    model = _start(data)
    own = own_pair_suggestions(model, data, "evaluation", top_k=4)
    decided = {}
    for i in data.select("evaluation").tolist():
        decided.setdefault(data.page_ids[int(data.pair_file[i])], {})[int(data.pair_item[i])] = bool(data.label[i])
    assert own.page_ids == sorted(decided)
    # Top 4 of 3 decided items: at least one suggestion per file nobody decided, never approved.
    for page, labels in zip(own.page_ids, own.labels):
        assert len(labels) == 4 and sum(labels) == sum(decided[page].values())
    judged = judged_pair_files(model, data, Platt(5.0, -2.0), top_k=1)
    for page, probs, labels, suggested in judged:
        assert len(probs) == len(labels) == len(suggested) == len(decided[page])
        assert sum(suggested) <= 1  # only its own top 1 can be selected
    assert sum(sum(s) for *_, s in judged) >= 1


def test_one_platt_map_serves_the_score_and_the_logit() -> None:
    from wikivel_bot.core.verification import Calibration

    platt, a = Platt(7.5, -3.0), 12.0
    on_z = Calibration.from_dict(score_calibration(platt, a))
    for score in (-0.2, 0.1, 0.4, 0.9):
        assert on_z.probability(a * score) == pytest.approx(float(platt(torch.tensor(score, dtype=torch.float64))), rel=1e-9)


# -- through the CLI, with the tiny model ------------------------------------------------------

@pytest.fixture
def env(tmp_path, monkeypatch):
    data = decided_queue(tmp_path, monkeypatch, files=30, linker="cascade",
                         settings={"LEARNING_EPOCHS": "8", "LEARNING_LR": "0.003"})
    running = cascade_checkpoint(tmp_path / "running.pt", seed=1, calibration={"method": "platt", "a": 0.5, "b": -4.0})
    monkeypatch.setenv("WIKIVEL_LINKER_CHECKPOINT", str(running))
    made = _run("dataset", "from-decisions", "--out", str(data), "--no-fetch-images")
    assert made.exit_code == 0, made.output
    return tmp_path, data, running


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_round_trains_the_running_cascades_pair_model(env) -> None:
    from wikivel_bot.config import load_settings
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint

    tmp_path, data, running_path = env
    trained = _run("train", "--from-decisions", str(data), "--no-promote")
    assert trained.exit_code == 0, trained.output
    assert "training its pair model" in trained.output
    (entry,) = registry.list_models(tmp_path / "models")
    assert entry.report["linker"] == "cascade" and entry.report["trained"] == "pair model"
    running, challenger = load_cascade_checkpoint(running_path), load_cascade_checkpoint(entry.path)
    # The first stage and the cascade's settings come along; the pair weights are new.
    assert (challenger.first_stage_linker, challenger.candidates, challenger.text_tokens, challenger.item_images,
            challenger.labelset_hash) == (running.first_stage_linker, 8, 16, 0, running.labelset_hash)
    assert any(not torch.equal(v, running.pair[k]) for k, v in challenger.pair.items())
    extra = challenger.extra
    assert extra["from_decisions"]["trained"] == "pair model"
    # One Platt map: on the score in extra, on the logit z as the checkpoint's calibration.
    a = float(challenger.build_pair().first_weight.detach())
    assert challenger.calibration.method == "platt"
    assert challenger.calibration.a * a == pytest.approx(extra["calibration"]["a"], rel=1e-6)
    assert challenger.calibration.b == pytest.approx(extra["calibration"]["b"], rel=1e-6)

    # Promoted, it is what the factory builds, with its operating threshold, under its digest.
    promoted = _run("models", "promote", entry.name, "--force")
    assert promoted.exit_code == 0, promoted.output
    settings = load_settings()  # as configured; the factory asks the registry what runs
    assert registry.with_running_model(settings).linker.checkpoint == str(entry.path)
    assert registry.with_running_model(settings).linker.name == "cascade"
    ready = build_ready_linker(settings, load_label_set(settings.linker.labels_dir))
    assert f"ckpt:{challenger.digest[:12]}" in ready.description.version
    if extra["operating_threshold"] is not None:
        assert ready.rules.min_score == pytest.approx(extra["operating_threshold"])
    # The running one asked for by name (as `suggest --checkpoint` does): the registry leaves it.
    before = build_ready_linker(replace(settings, linker=replace(settings.linker, checkpoint=str(running_path))),
                                load_label_set(settings.linker.labels_dir), given=("checkpoint",))
    assert before.description.version != ready.description.version


def test_an_untrained_cascade_learns_too_and_fusion_is_refused_in_one_line(env, monkeypatch) -> None:
    from wikivel_bot.config import load_settings
    from wikivel_bot.errors import LinkerError
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint
    from wikivel_bot.train.decisions.learners import load_learner

    tmp_path, data, _ = env
    monkeypatch.delenv("WIKIVEL_LINKER_CHECKPOINT")
    trained = _run("train", "--from-decisions", str(data), "--no-promote")
    assert trained.exit_code == 0, trained.output
    (entry,) = registry.list_models(tmp_path / "models")
    challenger = load_cascade_checkpoint(entry.path)
    # The first stage it ran with (cascade.first_stage, untrained) is what it names.
    assert challenger.first_stage_linker == "naive-mlp" and challenger.first_stage is None
    pair = challenger.build_pair()
    assert float(pair.std.min()) != 1.0 or float(pair.std.max()) != 1.0  # standardised on the data
    settings = load_settings()
    with pytest.raises(LinkerError, match="linker 'fusion' is fusion"):
        load_learner(replace(settings.linker, name="fusion", checkpoint=""), settings.cascade, lambda: None)
