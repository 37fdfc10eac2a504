"""Commons' own evidence joins the image's candidates, against the test wiki over real HTTP.

The evidence fixture files (``tests/testwiki/fixture_evidence.py``) are uploaded to a test
wiki of this module, and linked with the starter label set by the tiny open_clip model with
random weights, through ``suggest --json`` and through the daemon's link stage (the one
ready linker, ``build_ready_linker``, both resolve the batch's evidence before linking). The
scores mean nothing (SYNTHETIC: random weights); what is checked is the wiring: every item
a file's linked category (or link, or identifier) names is among its suggestions with its
evidence, items outside the label set are encoded on the fly and say so, misleading
categories produce candidates that carry their evidence, and the look-ups are counted,
batched and cached in the queue database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("pywikibot")

from click.testing import CliRunner  # noqa: E402

from tests.commons_support import CONTACT, local_only, pywikibot_dir, wiki  # noqa: E402,F401 - fixtures
from tests.linker_support import tiny_model_file  # noqa: E402
from tests.testwiki.fixture_evidence import EXPECTED, upload_evidence_files  # noqa: E402

# Items the evidence files show, named by their categories (or link, or identifier); the
# other evidence is misleading on purpose (the location Paris, the photographer, a person
# named in "Photographs by ...", the event) or a link to what the subject holds.
DEPICTED = {
    "Eiffel_Tower_from_the_Champ_de_Mars.jpg": "Q243",
    "Rijksmuseum_facade.jpg": "Q190804",
    "Munttoren_tower.jpg": "Q990006",
    "Westerkerk_from_the_canal.jpg": "Q990007",
}
# Outside the starter label set: encoded on the fly from what Wikidata says of them.
OUTSIDE = {"Q190804", "Q990006", "Q990007", "Q990003", "Q995653"}
TOP = 3


@pytest.fixture(scope="module")
def uploaded(wiki) -> Dict[str, int]:  # noqa: F811
    return upload_evidence_files(wiki)


@pytest.fixture(scope="module")
def config(tmp_path_factory, wiki, uploaded) -> Path:  # noqa: F811
    """One settings file: the test wiki, the tiny model with random weights, the starter set."""
    root = tmp_path_factory.mktemp("evidence-linking")
    model = tiny_model_file()
    path = root / "wikivel.toml"
    path.write_text(
        f'[site]\napi_url = "{wiki.api_url}"\noperator_contact = "{CONTACT}"\nlanguages = ["en"]\n\n'
        f'[linker]\nname = "zero-shot"\nmodel = "{model}"\npretrained = ""\nweights = "random"\ndevice = "cpu"\n'
        f'precision = "fp32"\ncache_dir = "{root / "cache"}"\nbatch_size = 8\ntop_k = {TOP}\n'
        # Random weights give cosines around 0, many below the default threshold of 0.
        'min_score = -2.0\n', encoding="utf-8")
    return path


def suggest(config: Path, *titles: str) -> Dict[str, Any]:
    result = CliRunner().invoke(main(), ["--config", str(config), "suggest", *titles, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def main() -> Any:
    from wikivel_bot.cli import main as group

    return group


def by_qid(entry: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {c["qid"]: c for c in entry["candidates"]}


def test_suggest_shows_every_depicted_evidence_item_with_its_evidence(config, local_only, pywikibot_dir):  # noqa: F811
    doc = suggest(config, *(f"File:{name.replace('_', ' ')}" for name in EXPECTED))
    files = {f["title"][len("File:"):].replace(" ", "_"): f for f in doc["files"]}
    assert set(files) == set(EXPECTED) and all(f["ok"] for f in files.values())
    for name, qid in DEPICTED.items():
        found = by_qid(files[name])
        assert qid in found, (name, sorted(found))
        texts = {s["text"] for s in found[qid]["sources"]}
        assert texts == {f"{source} → {qid}" for _, source, q in EXPECTED[name] if q == qid}, name
        assert found[qid]["why"] == "; ".join(s["text"] for s in found[qid]["sources"]) + (
            " (not in the label set)" if qid in OUTSIDE else "")
        assert found[qid]["in_label_set"] is (qid not in OUTSIDE)
        assert isinstance(found[qid]["visual_score"], float)
    eiffel = by_qid(files["Eiffel_Tower_from_the_Champ_de_Mars.jpg"])["Q243"]
    assert eiffel["evidence_kind"] == "several"  # its category and two description links
    munt = by_qid(files["Munttoren_tower.jpg"])["Q990006"]
    assert munt["evidence_kind"] == "identifier" and munt["label"] == "Munttoren"
    assert munt["description"] == "tower in Amsterdam, Netherlands"
    # The image's own top-k is still there, image only, in the label set.
    for entry in files.values():
        image_only = [c for c in entry["candidates"] if c["evidence_kind"] == "image only"]
        assert len(image_only) == TOP and all(c["in_label_set"] and c["sources"] == [] for c in image_only)
    # A file with an unlinked category and a link to nothing: image only.
    assert all(c["evidence_kind"] == "image only" for c in files["Unlinked_category_only.jpg"]["candidates"])


def test_misleading_categories_give_candidates_that_carry_their_evidence(config, local_only, pywikibot_dir):  # noqa: F811
    (entry,) = suggest(config, "File:Street scene by Bob.jpg")["files"]
    found = by_qid(entry)
    # The photographer (outside the set, by P373) and the event: each a candidate, with its
    # evidence, for the image (or the evidence model) to judge. The photographer is tied to
    # the file by a linked category, so the safety rules let him through.
    assert found["Q990003"]["sources"] == [{"kind": "category", "source": "Category:Bob Photographer",
                                           "qid": "Q990003", "text": "Category:Bob Photographer → Q990003"}]
    assert found["Q990003"]["in_label_set"] is False
    # "Photographs by Barack Obama" names Obama as its P301 topic, but Obama's own main
    # category (P910) is another: a photo *by* him is no evidence that it shows him, so he is
    # neither a candidate nor unlocked for the safety rules.
    assert "Q76" not in found
    assert found["Q995653"]["evidence_kind"] == "several" and found["Q995653"]["in_label_set"] is False


def settings_of(config: Path, db: str = "") -> Any:
    from wikivel_bot.config import load_settings

    settings = load_settings(config)
    return settings.replace("db", url=db) if db else settings


def new_queue(path: Path) -> str:
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for

    url = f"sqlite:///{path}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    engine.dispose()
    return url


def test_the_daemons_link_stage_stores_the_evidence_and_caches_the_look_ups(config, tmp_path, wiki,  # noqa: F811
                                                                            local_only, pywikibot_dir):  # noqa: F811
    from sqlalchemy import select

    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.commons.generators import uploads_of
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.daemon.scheduler import build_parts
    from wikivel_bot.queue.tables import candidates, evidence_cache, files

    settings = settings_of(config, new_queue(tmp_path / "daemon.sqlite"))
    store = open_store(settings)
    try:
        store.enqueue(list(uploads_of(open_site(settings.site), [f"File:{n.replace('_', ' ')}" for n in EXPECTED])))
        parts = build_parts(settings, store, dry_run=False)
        while True:
            fetched, linked = parts.fetch(50), parts.link(50)
            if fetched.claimed == 0 and linked.claimed == 0:
                break
        with store.engine.connect() as conn:
            rows = conn.execute(select(files.c.title, candidates.c.qid, candidates.c.evidence,
                                       candidates.c.linker_version, candidates.c.rank, candidates.c.score)
                                .join(files, files.c.id == candidates.c.file_id)).all()
            cached = dict(conn.execute(select(evidence_cache.c.key, evidence_cache.c.qid)).all())
    finally:
        store.close()
    stored = {(r.title[len("File:"):].replace(" ", "_"), r.qid): r.evidence for r in rows}
    for name, qid in DEPICTED.items():
        evidence = stored[(name, qid)]
        assert {s["text"] for s in evidence["sources"]} == {
            f"{source} → {qid}" for _, source, q in EXPECTED[name] if q == qid}
        assert evidence["in_label_set"] is (qid not in OUTSIDE) and "visual_score" in evidence
    # The photographer was linked from the evidence, outside the label set.
    assert stored[("Street_scene_by_Bob.jpg", "Q990003")]["in_label_set"] is False
    # One version on every row, naming the set-up with evidence (the daemon's state says it too).
    assert {r.linker_version for r in rows} == {parts.description["linker_version"]}
    # suggest links the same files the same way: the same ready linker, the same evidence.
    doc = suggest(config, *(f"File:{name.replace('_', ' ')}" for name in EXPECTED))
    assert {(f["title"], c["rank"], c["qid"], c["score"]) for f in doc["files"] for c in f["candidates"]} == {
        (r.title, r.rank, r.qid, r.score) for r in rows}
    assert doc["linker"]["version"] == parts.description["linker_version"]
    # The look-ups were kept in the queue database for the next worker.
    assert cached["category:Eiffel Tower"] == "Q243" and cached["category:Dogs sleeping in baskets"] is None
    assert cached["id:P359:518452"] == "Q990006" and cached["link:enwiki:Eiffel Tower"] == "Q243"


def test_evidence_off_links_from_the_image_alone_under_another_version(config, local_only, pywikibot_dir):  # noqa: F811
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.linker import build_ready_linker

    settings = settings_of(config)
    on = build_ready_linker(settings, evidence=evidence_source(settings))
    off_settings = settings.replace("evidence", enabled=False)
    off = build_ready_linker(off_settings, evidence=evidence_source(off_settings))
    assert off.evidence is None and on.evidence is not None
    assert on.setup["evidence"]["resolved"] and not off.setup["evidence"]["resolved"]
    assert on.description.version != off.description.version


def test_requests_per_100_files_over_the_usable_files_of_the_test_wiki(config, wiki, local_only,  # noqa: F811
                                                                      pywikibot_dir):  # noqa: F811
    """Every file of the test wiki the fetcher can use (the bundled fixtures and the evidence
    files), linked in the daemon's batches with a cold cache, then again with a warm one."""
    from tests.commons_support import fixture_titles
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.commons.fetcher import fetch_media
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import build_ready_linker

    settings = settings_of(config)
    site = open_site(settings.site)
    titles = fixture_titles() + [f"File:{n.replace('_', ' ')}" for n in EXPECTED]
    usable = [m for m in fetch_media(site, titles).values() if not isinstance(m, str)]
    assert len(usable) >= 40  # 49 today: the bundled fixtures and the evidence files, less the unusable
    ready = build_ready_linker(settings, default_label_set(""), evidence=evidence_source(settings, lambda: site))
    size = 32  # linker.batch_size's default: the daemon's link batch
    blank = b""  # never decoded: the request count is what is measured, links fail harmlessly

    def link_all() -> int:
        start = ready.evidence().requests
        for at in range(0, len(usable), size):
            ready.link([(m, blank) for m in usable[at:at + size]])
        return ready.evidence().requests - start

    cold = link_all()
    warm = link_all()
    per_100 = 100 * cold / len(usable)
    print(f"\nevidence requests: {len(usable)} usable files in batches of {size}: {cold} cold "
          f"({per_100:.1f} per 100 files), {warm} warm")
    # Batched (50 category pages, 50 entities, 10 statement values a request): far fewer
    # requests than files; a warm cache answers everything, the items' texts included.
    assert 0 < cold < len(usable) / 2 and warm == 0


def test_with_the_evidence_model_every_candidate_gets_its_probability(config, tmp_path, local_only,  # noqa: F811
                                                                      pywikibot_dir):  # noqa: F811
    """``linker.evidence_model`` set: the ready linker loads it, names it in the version, and
    each candidate's probability is the model's over the features the linker stored; the
    suggestions are ranked by it. Fitted on the synthetic evidence set and applied to random
    weights' scores: the probabilities are SYNTHETIC (whether the photographer scores low
    depends on scores that mean nothing here; tests/test_evidence_scores.py checks it with
    controlled scores)."""
    from wikivel_bot.commons.providers import evidence_source
    from wikivel_bot.commons.fetcher import fetch_media
    from wikivel_bot.commons.site import open_site
    from wikivel_bot.commons.thumbnails import ThumbnailClient
    from wikivel_bot.labels import default_label_set
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.evidence_model import fit, served_features
    from wikivel_bot.train.synthetic.evidence import load_evidence, make_evidence_synthetic, simulated_records

    make_evidence_synthetic(tmp_path / "syn", 400, seed=0)
    records = simulated_records(load_evidence(tmp_path / "syn"), top_k=10, seed=0)
    model = fit([r.example() for r in records], held_out=0.25, seed=0, data={"synthetic": True})
    path = model.save(tmp_path / "evidence-model.json")
    settings = settings_of(config).replace("linker", evidence_model=str(path))
    site = open_site(settings.site)
    ready = build_ready_linker(settings, default_label_set(""), evidence=evidence_source(settings, lambda: site))
    assert ready.evidence_model is not None and ready.setup["evidence"]["model"] == model.version
    (media,) = fetch_media(site, ["File:Street scene by Bob.jpg"]).values()
    with ThumbnailClient.from_settings(settings.fetch, CONTACT) as client:
        (linked,) = ready.link([(media, client.get(media.thumb_url))])
    found = {c.qid: c for c in linked.candidates}
    assert {"Q990003", "Q995653"} <= set(found) and "Q76" not in found
    best = max(c.evidence["visual_score"] for c in linked.candidates)
    assert all(c.evidence["best_visual_score"] >= best for c in linked.candidates)
    for c in linked.candidates:
        e = c.evidence
        expected = model.probability(served_features(e))
        assert c.probability == pytest.approx(expected, abs=1e-4), c.qid
    assert [c.rank for c in linked.candidates] == list(range(1, len(found) + 1))
    assert [c.probability for c in linked.candidates] == sorted((c.probability for c in linked.candidates),
                                                                reverse=True)
    print(f"\nSYNTHETIC (random weights): P(photographer Q990003) = {found['Q990003'].probability}, "
          f"P(event Q995653) = {found['Q995653'].probability}")
