"""Evidence items get the score the image search gives, and join the candidates in ``link_files``.

Every linker variant (zero-shot, naive, fusion with item images, the cascade, the frequency
baselines) runs through its real code path with the tiny random-weight open_clip model
(SYNTHETIC scores): ``score_items`` must give a label-set item the score ``search`` gives it,
and ``score_outside`` an item outside the set — encoded on the fly from its texts and P18 —
the score the same item gets from the label index. Then ``link_files`` with evidence: the
candidate set, the specificity rules, top-k, and what each candidate carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, Tuple

import pytest

pytest.importorskip("torch")

from tests.linker_support import animals_label_set, image_bytes, tiny_settings  # noqa: E402
from wikivel_bot.core.evidence import Evidence  # noqa: E402
from wikivel_bot.core.ranking import RankingRules  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.backbone.images import decode_image  # noqa: E402
from wikivel_bot.linker.base import Query  # noqa: E402
from wikivel_bot.linker.evidence_model import EvidenceModel, candidate_features, served_features  # noqa: E402
from wikivel_bot.linker.link import link_files  # noqa: E402
from wikivel_bot.types import Depiction, MediaFile  # noqa: E402

LABELS = animals_label_set()
IMAGES = {name: image_bytes(color=(40 * n % 255, 90, 200 - 30 * n), seed=n)
          for n, name in enumerate(sorted({i for i in LABELS.images if i}))}


@dataclass(frozen=True)
class Item:
    """An item as the resolver reads it (``wikidata.entities.ItemInfo`` has these fields)."""

    qid: str
    label: str
    description: str = ""
    image: str = ""
    aliases: Tuple[str, ...] = ()
    instance_of: Tuple[str, ...] = ()
    subclass_of: Tuple[str, ...] = ()
    person_properties: Tuple[str, ...] = ()


def loader(names: Sequence[str]) -> Mapping[str, bytes]:
    return {n: IMAGES[n] for n in names if n in IMAGES}


loader.cache_id = "test-item-images"  # type: ignore[attr-defined]


def build(name: str, tmp_path_factory, **settings):
    linker = create_linker(name, tiny_settings(batch_size=4, **settings), item_image_loader=loader)
    linker.attach(LABELS, str(tmp_path_factory.mktemp(name)))
    return linker


def queries(linker, n: int = 3) -> Sequence[Query]:
    prepare = getattr(linker, "prepare_image", lambda image: image)
    return [Query(f"File:{i}.jpg", prepare(decode_image(image_bytes(color=(30 * i, 120, 60), seed=i))),
                  "a dog in a park", seed=i) for i in range(n)]


@pytest.mark.parametrize("name", ["zero-shot", "naive-mlp", "fusion", "cascade", "top-k", "random-freq"])
def test_score_items_gives_the_score_search_gives(name, tmp_path_factory):
    linker = build(name, tmp_path_factory)
    asked = queries(linker)
    hits = linker.search(asked, len(LABELS.qids))
    # Every item, in a shuffled order per file.
    positions = [[p for p, _ in reversed(row)] for row in hits]
    scores = linker.score_items(asked, positions)
    for row, found, got in zip(hits, positions, scores):
        expected = dict(row)
        assert got == pytest.approx([expected[p] for p in found], abs=2e-5), name


@pytest.mark.parametrize("name", ["zero-shot", "naive-mlp", "fusion", "cascade"])
def test_an_item_encoded_on_the_fly_scores_as_it_does_in_the_label_index(name, tmp_path_factory):
    linker = build(name, tmp_path_factory)
    asked = queries(linker)
    # The house cat (with its P18) and the apple (without), as if they were outside the set.
    cat, apple = (LABELS.index_of(q) for q in ("Q146", "Q89"))
    twins = [Item("Q990146", LABELS.labels[cat], LABELS.descriptions[cat], LABELS.images[cat]),
             Item("Q990089", LABELS.labels[apple], LABELS.descriptions[apple], "")]
    inside = linker.score_items(asked, [[cat, apple]] * len(asked))
    outside = linker.score_outside(asked, [twins] * len(asked))
    # fp16 rounding on both sides: the index stores fp16, the on-the-fly rows are rounded to it.
    for a, b in zip(inside, outside):
        assert b == pytest.approx(a, abs=2e-3), name
    # The item text matters: another label scores differently.
    other = linker.score_outside(asked, [[Item("Q1", "lighthouse", "tower emitting light")]] * len(asked))
    assert all(abs(o[0] - i[0]) > 1e-4 for o, i in zip(other, inside))


def media(page_id: int, **kwargs) -> MediaFile:
    return MediaFile(page_id=page_id, title=f"File:Test {page_id}.jpg", **kwargs)


def test_link_files_joins_evidence_items_to_the_image_candidates(tmp_path_factory):
    linker = build("zero-shot", tmp_path_factory)
    # A lighthouse outside the set, and the evidence of three files (park and apple stand
    # alone in the set's hierarchy, so no specificity rule interferes).
    lighthouse = Item("Q39715", "lighthouse", "tower emitting light to aid navigation")
    evidence = {
        1: (Evidence("category", "Category:Lighthouse", "Q39715"), Evidence("link", "[[w:en:Park]]", "Q22698")),
        2: (Evidence("identifier", "{{Monument|7}}", "Q3947"),),
        3: (Evidence("category", "Category:Apples", "Q89"), Evidence("category", "Category:Gone", "Q404")),
    }
    files = [(media(1), image_bytes(seed=1)), (media(2, depicts=(Depiction("Q3947"),)), image_bytes(seed=2)),
             (media(3, categories=("Dog",)), image_bytes(seed=3))]
    rules = RankingRules(top_k=2, min_score=-2.0, ancestor_margin=0.05)
    plain = {o.media.page_id: o for o in link_files(linker, files, rules=rules)}
    linked = {o.media.page_id: o for o in link_files(linker, files, rules=rules, evidence=evidence,
                                                     items={"Q39715": lighthouse}, category_label_match=True)}
    # File 1: the image's own two, and both evidence items (outside the set, encoded; inside it).
    one = {c.qid: c for c in linked[1].candidates}
    image_top = [c.qid for c in plain[1].candidates]
    assert set(one) == set(image_top) | {"Q39715", "Q22698"}
    assert [q for q in image_top if q != "Q22698"] == [q for q in one if one[q].evidence["evidence_kind"] == "image only"]
    assert one["Q39715"].evidence["in_label_set"] is False and one["Q39715"].evidence["label"] == "lighthouse"
    assert one["Q39715"].evidence["image_rank"] is None and one["Q22698"].evidence["in_label_set"] is True
    assert one["Q22698"].evidence["sources"] == [Evidence("link", "[[w:en:Park]]", "Q22698").as_dict()]
    assert [c.rank for c in linked[1].candidates] == list(range(1, len(one) + 1))
    assert [c.score for c in linked[1].candidates] == sorted((c.score for c in linked[1].candidates), reverse=True)
    # The evidence item's score is the one the image search gives it.
    (score,) = linker.score_outside(queries_of(linker, files[0]), [[lighthouse]])[0]
    assert one["Q39715"].evidence["visual_score"] == pytest.approx(score, abs=1e-5)
    # File 2: a present item wins: the file depicts the house already, its identifier proposes nothing.
    assert "Q3947" not in {c.qid for c in linked[2].candidates}
    # File 3: an unlinked category named like one item ("Dog") is weaker evidence for it; an
    # item nothing was read of (deleted) cannot be scored and is left out.
    three = {c.qid: c for c in linked[3].candidates}
    assert three["Q144"].evidence["evidence_kind"] == "category label"
    assert three["Q89"].evidence["evidence_kind"] == "category" and "Q404" not in three
    for outcome in linked.values():
        for c in outcome.candidates:
            assert set(c.evidence) >= {"sources", "evidence_kind", "visual_score", "in_label_set", "image_rank"}


def queries_of(linker, pair) -> Sequence[Query]:
    """The query ``link_files`` makes of one (file, bytes) pair."""
    media_file, data = pair
    return [Query(media_file.title, linker.prepare_image(decode_image(data)), "", media_file.page_id)]


def test_an_evidence_item_more_specific_than_an_image_candidate_replaces_it(tmp_path_factory):
    linker = build("top-k", tmp_path_factory)  # scores by frequency: building (200) beats house (120)
    rules = RankingRules(top_k=4, ancestor_margin=0.0)
    (plain,) = link_files(linker, [(media(1), image_bytes())], rules=rules)
    kept = [c.qid for c in plain.candidates]
    # From the image alone, the house loses to the building, which scores clearly higher.
    assert "Q41176" in kept and "Q3947" not in kept
    assert plain.ranking.dropped_reason("Q3947").startswith("more specific than Q41176 (building)")
    evidence = {1: (Evidence("category", "Category:Houses", "Q3947"),)}
    (linked,) = link_files(linker, [(media(1), image_bytes())], rules=rules, evidence=evidence)
    kept = [c.qid for c in linked.candidates]
    # Named by the file's category, the house replaces the building whatever their scores.
    assert "Q3947" in kept and "Q41176" not in kept
    assert "ancestor Q41176 (building) suppressed" in linked.candidates[kept.index("Q3947")].evidence["notes"]


def test_the_evidence_model_gives_the_probability_and_the_order(tmp_path_factory):
    linker = build("top-k", tmp_path_factory)
    features = len(candidate_features(0.1, 0.1, 1, [], True))
    # A hand-set model (SYNTHETIC): evidence of kind category counts a lot, the score a little.
    weights = [1.0] + [0.0] * (features - 1)
    weights[4] = 3.0  # kind:category
    model = EvidenceModel(weights=tuple(weights), intercept=-1.0, mean=(0.0,) * features, scale=(1.0,) * features)
    evidence = {1: (Evidence("category", "Category:Apples", "Q89"),)}
    (linked,) = link_files(linker, [(media(1), image_bytes())], rules=RankingRules(top_k=3), evidence=evidence,
                           evidence_model=model)
    first = linked.candidates[0]
    assert first.qid == "Q89" and first.rank == 1  # ranked by probability, not by score
    for c in linked.candidates:
        e = c.evidence
        # The best visual score of the file's candidate set before the ranking rules, as stored.
        assert e["best_visual_score"] >= max(x.evidence["visual_score"] for x in linked.candidates)
        expected = model.probability(served_features(e))
        assert c.probability == pytest.approx(expected, abs=1e-4) and e["probability"] == c.probability
    assert [c.probability for c in linked.candidates] == sorted((c.probability for c in linked.candidates),
                                                                reverse=True)



@pytest.fixture(scope="module")
def synthetic_model(tmp_path_factory) -> EvidenceModel:
    """The evidence model fitted as `train evidence` fits it, on the synthetic evidence set
    (SYNTHETIC: simulated image scores with a share of misleading evidence)."""
    from wikivel_bot.linker.evidence_model import fit
    from wikivel_bot.train.synthetic.evidence import load_evidence, make_evidence_synthetic, simulated_records

    out = tmp_path_factory.mktemp("evidence-model") / "syn"
    make_evidence_synthetic(out, 400, seed=0)
    records = simulated_records(load_evidence(out), top_k=10, seed=0)
    return fit([r.example() for r in records], l2=1.0, held_out=0.25, seed=0, data={"synthetic": True})


def test_a_photographers_category_the_image_disagrees_with_gets_a_low_probability(synthetic_model):
    """The linker's features of each candidate (``evidence_link.annotate``) as the model was
    fitted on them: the photographer named by "Category:Bob Photographer", outside the label
    set, scored 0.20 by the image where the file's best is 0.32 (SYNTHETIC scores), must get a
    low probability; the tower its category names and the image agrees with, a high one."""
    from wikivel_bot.linker.evidence_link import FileCandidates, annotate
    from wikivel_bot.types import Candidate

    photographer = Evidence("category", "Category:Bob Photographer", "Q990003")
    tower = Evidence("category", "Category:Eiffel Tower", "Q243")
    scored = (("Q243", 0.32), ("Q90", 0.30), ("Q3947", 0.29), ("Q990003", 0.20))
    found = FileCandidates(scored, {"Q243": 1, "Q90": 2, "Q3947": 3}, (photographer, tower), frozenset({"Q990003"}))
    candidates = [Candidate(qid=q, score=s, rank=n, linker="zero-shot", linker_version="1", labelset_hash="h")
                  for n, (q, s) in enumerate(scored, 1)]
    out = {c.qid: c for c in annotate(candidates, found, synthetic_model)}
    assert out["Q990003"].probability < 0.1 < 0.9 < out["Q243"].probability
    assert out["Q990003"].evidence["in_label_set"] is False and out["Q990003"].rank == 4
    assert [c.qid for c in annotate(candidates, found, synthetic_model)][0] == "Q243"
