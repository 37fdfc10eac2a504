"""link_files: per-file failures, Candidates with evidence, the rules applied, baselines."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from tests.linker_support import animals_label_set, image_bytes, tiny_settings  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.link import Linked, LinkFailed, link_files  # noqa: E402
from wikivel_bot.types import Depiction, MediaFile  # noqa: E402

LABELS = animals_label_set()
ALL = RankingRules(top_k=12, ancestor_margin=0.05)


@pytest.fixture(scope="module")
def zero_shot(tmp_path_factory):
    linker = create_linker("zero-shot", tiny_settings(batch_size=2))
    linker.attach(LABELS, str(tmp_path_factory.mktemp("cache")))
    return linker


def media(page_id: int, **kwargs) -> MediaFile:
    return MediaFile(page_id=page_id, title=f"File:Test {page_id}.jpg", **kwargs)


def test_a_corrupt_image_gets_a_reason_and_the_batch_goes_on(zero_shot):
    good = image_bytes()
    truncated = image_bytes(size=(64, 64))[:200]
    files = [(media(1), good), (media(2), b"GIF89a not really"), (media(3), truncated), (media(4), b""),
             (media(5), image_bytes(color=(10, 200, 10), fmt="PNG"))]
    outcomes = link_files(zero_shot, files, rules=ALL)
    assert [o.media.page_id for o in outcomes] == [1, 2, 3, 4, 5]
    assert [type(o) for o in outcomes] == [Linked, LinkFailed, LinkFailed, LinkFailed, Linked]
    assert "not an image" in outcomes[1].reason
    assert "corrupt image" in outcomes[2].reason or "truncated" in outcomes[2].reason
    assert outcomes[3].reason == "empty image data"
    assert len(outcomes[0].candidates) > 0 and len(outcomes[4].candidates) > 0


def test_decompression_bomb_guard(zero_shot, monkeypatch):
    outcomes = link_files(zero_shot, [(media(1), image_bytes(size=(48, 40)))], rules=ALL, max_pixels=1000)
    assert isinstance(outcomes[0], LinkFailed)
    assert "48x40 = 1920 pixels" in outcomes[0].reason and "decompression bomb" in outcomes[0].reason
    # Pillow's own, stricter global limit is honoured too (it raises at twice the limit).
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 500)
    outcomes = link_files(zero_shot, [(media(1), image_bytes(size=(48, 40)))], rules=ALL)
    assert isinstance(outcomes[0], LinkFailed) and "decompression bomb" in outcomes[0].reason
    outcomes = link_files(zero_shot, [(media(1), image_bytes(size=(30, 30)))], rules=ALL)
    assert isinstance(outcomes[0], LinkFailed) and "500 pixels" in outcomes[0].reason


def test_candidates_carry_identity_scores_and_json_evidence(zero_shot):
    (outcome,) = link_files(zero_shot, [(media(7), image_bytes())], rules=RankingRules(top_k=5))
    assert isinstance(outcome, Linked)
    candidates = outcome.candidates
    assert [c.rank for c in candidates] == list(range(1, len(candidates) + 1))
    assert len(candidates) <= 5
    assert all(a.score >= b.score for a, b in itertools.pairwise(candidates))
    first = candidates[0]
    assert first.linker == "zero-shot"
    assert first.linker_version == "zero-shot/v2 wikivel-tiny-test:random"
    assert first.labelset_hash == LABELS.content_hash
    evidence = json.loads(json.dumps(first.evidence))
    assert evidence["random_weights"] is True
    assert evidence["label"] == LABELS.labels[LABELS.index_of(first.qid)]
    assert any("random weights" in w for w in evidence["warnings"])


def test_existing_depicts_rejections_and_deprecated_statements_are_respected(zero_shot):
    file = media(8, depicts=(Depiction("Q146"), Depiction("Q89", rank="deprecated")))
    (outcome,) = link_files(zero_shot, [(file, image_bytes())], rules=ALL, rejected={8: {"Q22698"}})
    proposed = {c.qid for c in outcome.candidates}
    assert not proposed & {"Q146", "Q622852", "Q729", "Q22698", "Q89"}
    assert outcome.ranking.dropped_reason("Q622852") == "ancestor of depicted Q146 (house cat)"
    assert "rejected" in outcome.ranking.dropped_reason("Q89")
    # Everything else is still proposed, and no kept item is an ancestor of another.
    assert proposed <= set(LABELS.qids)
    for qid in proposed:
        assert not set(LABELS.ancestors(qid)) & proposed


def test_top_k_baseline_proposes_the_most_frequent_items_after_the_rules(tmp_path):
    linker = create_linker("top-k", tiny_settings())
    linker.attach(LABELS, str(tmp_path))
    file = media(9, depicts=(Depiction("Q5"),))
    (outcome,) = link_files(linker, [(file, image_bytes())], rules=RankingRules(top_k=3))
    # human is depicted (its ancestor animal excluded); then cat 300, dog 250, building 200,
    # but house (120) is more specific than building and within the margin of it.
    assert [c.qid for c in outcome.candidates] == ["Q146", "Q144", "Q3947"]
    assert outcome.candidates[0].score == pytest.approx(300 / 1635, abs=1e-6)
    assert outcome.ranking.dropped_reason("Q41176") == "ancestor of Q3947 (house), which is more specific"
    assert outcome.candidates[2].evidence["notes"] == ["ancestor Q41176 (building) suppressed"]
    assert outcome.candidates[0].linker_version == "top-k/v1"


def test_random_freq_baseline_is_seeded_per_file(tmp_path):
    linker = create_linker("random-freq", tiny_settings())
    linker.attach(LABELS, str(tmp_path))
    files = [(media(i), image_bytes()) for i in range(1, 9)]
    first = [[c.qid for c in o.candidates] for o in link_files(linker, files, rules=RankingRules(top_k=3))]
    again = [[c.qid for c in o.candidates] for o in link_files(linker, files, rules=RankingRules(top_k=3))]
    assert first == again
    assert len({tuple(sorted(q)) for q in first}) > 1  # different files, different samples


def test_fusion_reads_the_file_text(tmp_path):
    linker = create_linker("fusion", tiny_settings())
    linker.attach(LABELS, str(tmp_path))
    image = image_bytes()
    plain = media(10)
    described = media(10, description="A volcano erupting at night", categories=("Category:Volcanoes",))
    a, b = link_files(linker, [(plain, image), (described, image)], rules=ALL)
    scores_a = {c.qid: c.score for c in a.candidates}
    scores_b = {c.qid: c.score for c in b.candidates}
    assert scores_a != scores_b
    assert any("untrained head" in w for w in a.warnings)


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_cuda_and_cpu_give_the_same_ranking_within_tolerance(tmp_path):
    files = [(media(i), image_bytes(color=(40 * i % 256, 90, 160), seed=i)) for i in range(1, 7)]
    results = {}
    for device in ("cpu", "cuda"):
        linker = create_linker("naive-mlp", tiny_settings(device=device))
        linker.attach(LABELS, str(tmp_path / device))
        results[device] = link_files(linker, files, rules=RankingRules(top_k=5))
    for cpu, gpu in zip(results["cpu"], results["cuda"]):
        cpu_scores = {c.qid: c.score for c in cpu.candidates}
        gpu_scores = {c.qid: c.score for c in gpu.candidates}
        assert len(set(cpu_scores) & set(gpu_scores)) >= 4
        for qid in set(cpu_scores) & set(gpu_scores):
            assert abs(cpu_scores[qid] - gpu_scores[qid]) < 2e-2
