"""The evidence model learns from reviewers' decisions and is judged like the other learners
(learning/evidence.py): decided pairs with the values the linker served, the evidence model's
own fit, the round's contest against the image alone; and a learned checkpoint carries the
won model to the factory. Seeded constructed decisions; the tiny open_clip model (CPU)."""

from __future__ import annotations

import random

import pytest

from wikivel_bot.learning.contest import Rules
from wikivel_bot.learning.evidence import decided_candidates, learn_evidence_model
from wikivel_bot.learning.records import Record

REVIEWERS = ("ada", "ben", "chen", "dara", "eli")


def _records(files: int = 150, served: bool = True, seed: int = 0):
    """Per file three shown candidates whose visual scores barely differ; the depicted one is
    named by a linked category on 80 % of files, a wrong one on 10 %. Reviewers approve the
    depicted item and reject the others."""
    rng = random.Random(seed)
    out = []
    for page in range(1, files + 1):
        shown, best = [], 0.36
        for k in range(3):
            qid, right = f"Q{100 * page + k}", k == 0
            kinds = ([{"kind": "category"}] if (right and rng.random() < 0.8) or (not right and rng.random() < 0.05)
                     else [])
            entry = {"qid": qid, "score": 0.3, "rank": k + 1, "evidence": kinds}
            if served:
                entry["served"] = {"visual_score": rng.uniform(0.28, 0.36) if right else rng.uniform(0.26, 0.35),
                                   "best_visual_score": best, "image_rank": k + 1, "in_label_set": True}
            shown.append(entry)
        split = "train" if page <= 0.6 * files else "calibration" if page <= 0.8 * files else "evaluation"
        qids = [s["qid"] for s in shown]
        out.append(Record(page_id=page, title=f"File:{page}.jpg", uploaded_at="", thumb_url="", description="",
                          categories=(), shown=tuple(shown), positives=(qids[0],), negatives=tuple(qids[1:]),
                          reviewers={q: REVIEWERS[page % 5] for q in qids}, split=split))
    return out


def test_the_evidence_model_learned_from_decisions_beats_the_image_alone() -> None:
    outcome, report = learn_evidence_model(_records(), None, Rules(resamples=300))
    assert outcome.verdict.promote, outcome.verdict.reasons
    assert report["pairs"] == {"train": 270, "calibration": 90, "evaluation": 90}
    assert report["champion"].startswith("the image alone") and report["verdict"]["outcome"] == "promote"
    # Every reviewer left out in turn, twice each (as trained, and refitted without them).
    assert sorted({c["without"] for c in report["leave_one_reviewer_out"]}) == sorted(REVIEWERS)
    model = outcome.challenger
    named = [r for r in decided_candidates(_records()).records if r.kinds == ("category",)]
    # What it learned: a linked category makes a candidate far likelier to be approved.
    assert sum(model.probability(r.features()) for r in named) / len(named) > 0.5
    assert model.data["synthetic"] is False and model.data["records"] == 270


def test_it_must_win_against_the_running_model_and_old_records_are_counted_out() -> None:
    first, _ = learn_evidence_model(_records(), None, Rules(resamples=200))
    # Against itself (the same decisions): no gain beyond the interval, kept.
    again, report = learn_evidence_model(_records(), first.challenger, Rules(resamples=200))
    assert not again.verdict.promote and "utility gain" in again.verdict.reasons[0]
    assert report["champion"] == first.challenger.version
    # Pairs shown before the linker stored what the model reads: left out, and nothing judged.
    old, report = learn_evidence_model(_records(served=False), None, Rules(resamples=100))
    assert report["skipped"] == {"shown without served values": 450} and not old.verdict.promote
    assert "carries the values the evidence model reads" in old.verdict.reasons[0]


def test_a_learned_checkpoint_runs_its_evidence_model(tmp_path, monkeypatch) -> None:
    """The round writes the won model beside its checkpoint (extra.evidence_model): the one
    factory loads it when no linker.evidence_model is configured, and a missing file is one line."""
    pytest.importorskip("torch")
    from tests.linker_support import TINY_MODEL, tiny_model_file, tiny_settings, write_animals_artifact
    from wikivel_bot.config import load_settings
    from wikivel_bot.errors import LinkerError
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.learning.evidence import save_evidence_model
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker import checkpoint as ckpt
    from wikivel_bot.linker.clip import backbone_info, build_clip_linker
    from wikivel_bot.linker.heads import NaiveHeads
    from wikivel_bot.linker.spec import get_spec

    tiny_model_file()
    labels = write_animals_artifact(tmp_path / "labels")
    outcome, _ = learn_evidence_model(_records(), None, Rules(resamples=100, leave_one_out=False))
    spec = get_spec("naive-mlp")
    linker = build_clip_linker(spec, tiny_settings())
    path = tmp_path / "learned" / "model.pt"
    path.parent.mkdir()
    record = save_evidence_model(outcome.challenger, path.parent)
    ckpt.save_checkpoint(path, spec=spec, backbone=backbone_info(linker.backbone),
                         heads=NaiveHeads(linker.backbone.embed_dim),
                         labelset_hash=default_label_set(str(labels)).content_hash,
                         extra={"from_decisions": {"pairs": {}}, "operating_threshold": None,
                                "evidence_model": record})
    for key, value in {"LINKER_NAME": "naive-mlp", "LINKER_MODEL": TINY_MODEL, "LINKER_WEIGHTS": "random",
                       "LINKER_DEVICE": "cpu", "LINKER_PRECISION": "fp32", "LINKER_LABELS_DIR": str(labels),
                       "LINKER_CACHE_DIR": str(tmp_path / "cache"), "LINKER_CHECKPOINT": str(path)}.items():
        monkeypatch.setenv(f"WIKIVEL_{key}", value)
    ready = build_ready_linker(load_settings(), None)
    assert ready.evidence_model is not None and ready.evidence_model.version == outcome.challenger.version
    assert ready.setup["evidence"]["model"] == outcome.challenger.version
    (path.parent / record["path"]).unlink()
    with pytest.raises(LinkerError, match="evidence model learned with this checkpoint is missing"):
        build_ready_linker(load_settings(), None)
