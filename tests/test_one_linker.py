"""One ready linker for every path: ``linker.factory.build_ready_linker``.

The same files are linked through ``suggest --json``, ``link``, the daemon's link stage and
``backfill`` (local Ray), all against the local test wiki, with one settings file: a cascade
that reads item images (P18 thumbnails served by the test wiki), a verifier fitted with item
images, and a safety configuration (a blocked class). Suggestions, scores, probabilities,
withheld counts and the recorded ``linker_version`` must be the same on every path. Then each
setting that changes what the linker ranks must change that version, and the verifier must
get the item images it was calibrated with even beside a linker that reads none.

The model is the tiny open_clip config with random weights; the cascade and the verifier are
pair models with random (seeded) weights saved as checkpoints: SYNTHETIC, the numbers mean
nothing beyond "the paths agree".
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("pywikibot")

from tests.backfill_support import ray_runtime  # noqa: E402,F401 - fixture
from tests.commons_support import CONTACT, pywikibot_dir, wiki  # noqa: E402,F401 - fixtures
from tests.linker_support import image_bytes, tiny_model_file  # noqa: E402

pytestmark = pytest.mark.slow  # the backfill starts Ray workers and the model's actor

# Files of the test wiki (tests/testwiki/README.md) every path links.
TITLES = ["File:Black cat on sofa.jpg", "File:Snowy mountain peak.jpg", "File:Red apple.png",
          "File:Dog in the park.jpg"]
# What the files' own evidence names (tests/testwiki/fixture_files.py): [[w:Couch|sofa]].
EVIDENCE_NAMED = {"File:Black cat on sofa.jpg": {"Q131514"}}
# (qid, label, description, P18 file on the test wiki or "", P279 parents)
ITEMS = [
    ("Q729", "animal", "kingdom of multicellular eukaryotic organisms", "", []),
    ("Q622852", "domestic animal", "animal kept by humans", "", ["Q729"]),
    ("Q146", "house cat", "domesticated feline", "Black cat on sofa.jpg", ["Q622852"]),
    ("Q144", "dog", "domestic animal", "Dog in the park.jpg", ["Q622852"]),
    ("Q8502", "mountain", "large natural elevation", "Snowy mountain peak.jpg", []),
    ("Q8072", "volcano", "rupture in the crust of a planetary-mass object", "", ["Q8502"]),
    ("Q41176", "building", "structure with a roof and walls", "", []),
    ("Q3947", "house", "building usually intended for living in", "", ["Q41176"]),
    ("Q22698", "park", "area of open space for recreational use", "", []),
    ("Q89", "apple", "fruit of the apple tree", "Red apple.png", []),
    ("Q39715", "lighthouse", "tower emitting light to aid navigation", "Lighthouse at dusk.jpg", ["Q41176"]),
]
BLOCKED = "Q622852"  # domestic animal: the cat and the dog under it are never suggested


@dataclasses.dataclass
class World:
    root: Path
    labels: Path
    model: str
    cascade: Path    # the cascade's checkpoint (zero-shot first stage, calibrated)
    verifier: Path   # another calibrated pair model, fitted with item images
    plain: Path      # a verifier recorded as fitted without item images
    config: Path     # the one settings file every path reads


def _write_labels(directory: Path) -> Path:
    from wikivel_bot.labels import label_set_from_records, write_label_set

    records = [{"qid": q, "label": label, "description": text, "image": image, "p279": parents}
               for q, label, text, image, parents in ITEMS]
    return write_label_set(label_set_from_records(records, {q: 10 for q, *_ in ITEMS}, min_freq=0), directory)


def _pair_checkpoint(path: Path, backbone: Any, labelset_hash: str, seed: int, item_images: Optional[int]) -> Path:
    """A cascade checkpoint whose pair model has random, seeded weights (a fresh one ranks
    exactly like its first stage, which would hide what the item images change)."""
    import torch

    from wikivel_bot.core.verification import Calibration
    from wikivel_bot.linker.cascade.checkpoint import save_cascade_checkpoint
    from wikivel_bot.linker.cascade.pair import build_pair_model, pair_args
    from wikivel_bot.linker.clip import backbone_info
    from wikivel_bot.linker.spec import get_spec

    spec = get_spec("cascade")
    generator = torch.Generator().manual_seed(seed)
    pair = build_pair_model(backbone.embed_dim, spec.head)
    with torch.no_grad():
        for parameter in pair.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return save_cascade_checkpoint(
        path, spec=spec.as_dict(), pair=pair, pair_args=pair_args(spec.head), backbone=backbone_info(backbone),
        labelset_hash=labelset_hash, first_stage_linker="zero-shot", first_stage=None, candidates=8,
        text_tokens=16, calibration=Calibration("platt", a=0.1, b=-1.0), item_images=item_images)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


@pytest.fixture(scope="module")
def world(tmp_path_factory, wiki) -> World:  # noqa: F811
    from wikivel_bot.config import LinkerSettings
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.linker import create_linker

    root = tmp_path_factory.mktemp("one-linker")
    labels = _write_labels(root / "labels")
    model = str(tiny_model_file())
    backbone = create_linker("zero-shot", LinkerSettings(model=model, pretrained="", weights="random", device="cpu",
                                                         precision="fp32", cache_dir=str(root / "cache"))).backbone
    content_hash = load_label_set(labels).content_hash
    cascade = _pair_checkpoint(root / "cascade.pt", backbone, content_hash, seed=1, item_images=4)
    verifier = _pair_checkpoint(root / "verifier.pt", backbone, content_hash, seed=2, item_images=4)
    plain = _pair_checkpoint(root / "plain.pt", backbone, content_hash, seed=3, item_images=0)
    sections: Dict[str, Dict[str, Any]] = {
        "site": {"api_url": wiki.api_url, "operator_contact": CONTACT, "languages": ["en"]},
        "linker": {"name": "cascade", "model": model, "pretrained": "", "weights": "random", "device": "cpu",
                   "precision": "fp32", "checkpoint": str(cascade), "verifier": str(verifier),
                   "labels_dir": str(labels), "cache_dir": str(root / "cache"), "batch_size": 8,
                   # The random pair model's scores are far below 0 (first-stage cosine units).
                   "top_k": 4, "min_score": -1.0e6},
        "cascade": {"candidates": 8},
        "safety": {"blocked_classes": [BLOCKED]},
    }
    config = root / "wikivel.toml"
    config.write_text("".join(f"[{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in keys.items()) + "\n"
                              for name, keys in sections.items()), encoding="utf-8")
    return World(root, labels, model, cascade, verifier, plain, config)


def _settings(world: World, db: str = "") -> Any:
    from wikivel_bot.config import load_settings

    settings = load_settings(world.config)
    return settings.replace("db", url=db) if db else settings


def _new_queue(path: Path) -> str:
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for

    url = f"sqlite:///{path}"
    engine = create_engine_for(url)
    migrate.upgrade(engine)
    engine.dispose()
    return url


def _enqueue(settings: Any) -> None:
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.commons.generators import uploads_of
    from wikivel_bot.commons.site import open_site

    store = open_store(settings)
    try:
        store.enqueue(list(uploads_of(open_site(settings.site), TITLES)))
    finally:
        store.close()


def _by_rule(record: Any) -> Dict[str, int]:
    """Withheld counts by rule from a stored or printed record (a list of entries with a
    ``rule``, or already ``{rule: count}``)."""
    if isinstance(record, Mapping):
        return {str(k): int(v) for k, v in record.items() if int(v)}
    return dict(Counter(str(w["rule"]) for w in record or ()))


# title -> ([(rank, qid, score, probability)], {rule: withheld}), and the linker versions seen
Linked = Tuple[Dict[str, Tuple[List[Tuple[int, str, float, Optional[float]]], Dict[str, int]]], set]


def _queue_result(url: str) -> Linked:
    from sqlalchemy import select

    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.tables import candidates, files

    engine = create_engine_for(url)
    out: Dict[str, Any] = {}
    versions = set()
    try:
        with engine.connect() as conn:
            for f in conn.execute(select(files.c.id, files.c.title, files.c.state, files.c.media)):
                assert f.state == "linked", (f.title, f.state)
                out[f.title] = ([], _by_rule((f.media or {}).get("withheld", ())))
            rows = conn.execute(select(files.c.title, candidates.c.rank, candidates.c.qid, candidates.c.score,
                                       candidates.c.evidence, candidates.c.linker_version)
                                .join(files, files.c.id == candidates.c.file_id)
                                .order_by(files.c.title, candidates.c.rank))
            for r in rows:
                out[r.title][0].append((r.rank, r.qid, r.score, (r.evidence or {}).get("probability")))
                versions.add(r.linker_version)
    finally:
        engine.dispose()
    return out, versions


def _suggest(world: World) -> Linked:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    result = CliRunner().invoke(main, ["--config", str(world.config), "suggest", *TITLES, "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    out = {f["title"]: ([(c["rank"], c["qid"], c["score"], c.get("probability")) for c in f["candidates"]],
                        _by_rule(f.get("withheld", ()))) for f in doc["files"]}
    return out, {doc["linker"]["version"]}


def _link_command(world: World, url: str) -> Linked:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    _enqueue(_settings(world, url))
    result = CliRunner().invoke(main, ["--config", str(world.config), "--db-url", url, "link", "--once"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return _queue_result(url)


def _daemon(world: World, url: str) -> Tuple[Linked, str]:
    from wikivel_bot.backfill.pipeline import open_store
    from wikivel_bot.daemon.scheduler import build_parts

    settings = _settings(world, url)
    _enqueue(settings)
    store = open_store(settings)
    try:
        parts = build_parts(settings, store, dry_run=False)
        while True:
            fetched, linked = parts.fetch(50), parts.link(50)
            if fetched.claimed == 0 and linked.claimed == 0:
                break
    finally:
        store.close()
    return _queue_result(url), parts.description["linker_version"]


def _backfill(world: World, url: str) -> Linked:
    from wikivel_bot.backfill.pipeline import run_backfill
    from wikivel_bot.backfill.sources import Sources

    settings = _settings(world, url).replace("backfill", actors=1)
    titles = world.root / "titles.txt"
    titles.write_text("\n".join(TITLES) + "\n", encoding="utf-8")
    result = run_backfill(settings, Sources(titles_files=(str(titles),)), progress=False)
    assert result.counters.linked == len(TITLES), result.counters.lines()
    linked = _queue_result(url)
    # The run's counters add up what the queue holds per file.
    total: Counter = Counter()
    for _, withheld in linked[0].values():
        total.update(withheld)
    assert dict(result.counters.withheld) == dict(total)
    return linked


def _ranked(found: Dict[str, Any]) -> Dict[str, Any]:
    """title -> ([(rank, qid)], withheld by rule): what a reviewer would be shown."""
    return {title: ([(rank, qid) for rank, qid, _, _ in candidates], withheld)
            for title, (candidates, withheld) in found.items()}


def test_every_path_links_the_same_files_the_same_way(world, wiki, pywikibot_dir, ray_runtime):  # noqa: F811
    suggested, suggest_versions = _suggest(world)
    (linked, link_versions) = _link_command(world, _new_queue(world.root / "link.sqlite"))
    (daemon, daemon_versions), daemon_state = _daemon(world, _new_queue(world.root / "daemon.sqlite"))
    backfilled, backfill_versions = _backfill(world, _new_queue(world.root / "backfill.sqlite"))

    assert sorted(suggested) == sorted(TITLES)
    assert linked == suggested and daemon == suggested
    # The backfill links in Ray's blocks, whose sizes differ from the daemon's batches, and a
    # float32 sum depends on its batch: its scores agree to float32 precision and its
    # probabilities (rounded to 4 places) to one rounding step; items, ranks and withheld
    # counts exactly.
    assert _ranked(backfilled) == _ranked(suggested)
    for title, (candidates, _) in suggested.items():
        scores, probabilities = zip(*[(score, p) for _, _, score, p in backfilled[title][0]])
        assert list(scores) == pytest.approx([score for _, _, score, _ in candidates], rel=1e-5), title
        assert list(probabilities) == pytest.approx([p for *_, p in candidates], abs=1.01e-4), title
    # Something to compare: ranked items with the verifier's probability, and items withheld.
    for title, (candidates, withheld) in suggested.items():
        # The image's own four, and the item the file's own evidence names (the cat's
        # description links its sofa, an item outside this label set): the verifier speaks
        # for the image's own top-k only.
        named = EVIDENCE_NAMED.get(title, set())
        assert {qid for _, qid, _, _ in candidates} & named == named, title
        own = [c for c in candidates if c[1] not in named]
        assert len(own) == 4, title
        assert all(p is not None and 0.0 <= p <= 1.0 for *_, p in own), title
        assert not {qid for _, qid, _, _ in candidates} & {"Q622852", "Q146", "Q144"}, title
        # The blocked class and what is under it, less what the file already depicts.
        assert set(withheld) == {"blocked class"} and withheld["blocked class"] >= 1, (title, withheld)
    # One version, naming the verifier and the set-up, on every row of every path.
    versions = suggest_versions | link_versions | daemon_versions | backfill_versions | {daemon_state}
    assert len(versions) == 1, versions
    version = versions.pop()
    assert "verifier:" in version and " setup:" in version and version.startswith("cascade/")


# -- the recorded version follows every setting ------------------------------------------------


class _Images:
    """An item image source that draws a small synthetic image for every name asked (and
    remembers the names); it names itself like the Commons cache does (``cache_id``), so the
    set-up hash can tell two sources apart."""

    def __init__(self, cache_id: str = "test-images:120px") -> None:
        self.cache_id = cache_id
        self.asked: List[str] = []

    def __call__(self, names: Any) -> Dict[str, bytes]:
        self.asked.extend(names)
        return {name: image_bytes((40 * i % 255, 90, 160), (40, 40), seed=i) for i, name in enumerate(names)}


def _version(settings: Any, images: Optional[_Images] = None, **kwargs: Any) -> str:
    from wikivel_bot.linker import build_ready_linker

    ready = build_ready_linker(settings, item_images=(lambda: images) if images is not None else None, **kwargs)
    return ready.description.version


def test_each_setting_changes_the_recorded_version(world):
    base = _settings(world)
    images = _Images()
    reference = _version(base, images)
    assert _version(base, _Images()) == reference  # the same set-up, the same version
    changed = {
        "item images from another source": _version(base, _Images("test-images:240px")),
        "cascade candidates": _version(base.replace("cascade", candidates=9), images),
        "no verifier": _version(base.replace("linker", verifier=""), images),
        "another verifier": _version(base.replace("linker", verifier=str(world.plain)), images),
        "no blocked class": _version(base.replace("safety", blocked_classes=()), images),
        "a person class": _version(base.replace("safety", person_classes=("Q5", "Q15632617")), images),
        "top_k": _version(base.replace("linker", top_k=5), images),
        "--top": _version(base, images, top_k=3),
        "min_score": _version(base.replace("linker", min_score=-1.0), images),
        "blocklist": _version(base.replace("linker", blocklist=("Q89",)), images),
    }
    assert all(v != reference for v in changed.values()), [k for k, v in changed.items() if v == reference]
    assert len(set(changed.values())) == len(changed)
    # Item images on or off (without a verifier, which would refuse to run without them).
    plain = base.replace("linker", verifier="")
    assert _version(plain, _Images()) != _version(plain, None)


def test_backfill_rules_carry_the_operators_safety_settings(world):
    """The issue's probe: a configured blocked class reached the daemon's rules, not the backfill's."""
    from wikivel_bot.backfill.pipeline import ready_linker
    from wikivel_bot.labels import load_label_set

    ready = ready_linker(_settings(world).replace("safety", person_classes=("Q5", "Q15632617")),
                         load_label_set(world.labels))
    assert ready.rules.safety is not None
    assert ready.rules.safety.blocked_classes == frozenset({BLOCKED})
    assert ready.rules.safety.person_classes == frozenset({"Q5", "Q15632617"})
    assert ready.rules.top_k == 4 and ready.rules.min_score == -1.0e6
    assert ready.setup["item_images"].startswith("item-images:")  # the Commons cache, as the daemon's


# -- the verifier runs as it was calibrated ----------------------------------------------------


def _beside_zero_shot(world: World, verifier: Path) -> Any:
    return _settings(world).replace("linker", name="zero-shot", checkpoint="", verifier=str(verifier))


def test_the_verifier_gets_item_images_beside_a_zero_shot_linker(world):
    from wikivel_bot.labels import load_label_set
    from wikivel_bot.linker import build_ready_linker, create_linker, link_files
    from wikivel_bot.types import MediaFile

    label_set = load_label_set(world.labels)
    settings = _beside_zero_shot(world, world.verifier)
    images = _Images()
    ready = build_ready_linker(settings, label_set, item_images=lambda: images)
    verifier = ready.linker.verifier
    assert verifier.item_image_loader is images
    named = {name for name in label_set.images if name}
    assert set(images.asked) == named  # every P18 of the set, asked once for the verifier's index
    assert int(verifier._item_image_present.sum()) == len(named)
    # The zero-shot linker itself reads none: its index does not depend on them.
    assert ready.setup["item_images"] == "none" and ready.setup["verifier"]["item_images"] == images.cache_id

    # What the item images change: the same pairs without them (only create_linker's own
    # callers can still build that, and its warning says what it is).
    files = [(MediaFile(page_id=i + 1, title=f"File:Probe {i}.jpg"), image_bytes((30 * i, 120, 60), seed=i))
             for i in range(3)]
    with_images = link_files(ready.linker, files, rules=ready.rules)
    bare = create_linker("zero-shot", settings.linker, cascade=settings.cascade)
    bare.attach(label_set, settings.linker.cache_dir)
    assert any("verifier without item images" in w for w in bare.description.warnings)
    without = link_files(bare, files, rules=ready.rules)
    assert [[c.qid for c in o.candidates] for o in with_images] == [[c.qid for c in o.candidates] for o in without]
    moved = [abs(a.probability - b.probability) for x, y in zip(with_images, without)
             for a, b in zip(x.candidates, y.candidates)]
    assert max(moved) > 1e-3  # SYNTHETIC random pair model: only "they differ" is meaningful


def test_a_verifier_fitted_with_item_images_refuses_to_run_without_them(world):
    from wikivel_bot.errors import LinkerError
    from wikivel_bot.linker import build_ready_linker

    with pytest.raises(LinkerError) as caught:
        build_ready_linker(_beside_zero_shot(world, world.verifier), item_images=None)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("linker.verifier:") and "item images" in message


def test_a_verifier_fitted_without_item_images_gets_none(world):
    from wikivel_bot.linker import build_ready_linker
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint

    images = _Images()
    ready = build_ready_linker(_beside_zero_shot(world, world.plain), item_images=lambda: images)
    assert ready.linker.verifier.item_image_loader is None and ready.setup["verifier"]["item_images"] == "none"
    # Without any source it runs too: it never read item images.
    assert build_ready_linker(_beside_zero_shot(world, world.plain)).linker.verifier.item_image_loader is None
    assert load_cascade_checkpoint(world.plain).item_images == 0
    assert load_cascade_checkpoint(world.verifier).fitted_with_item_images


def test_a_checkpoint_without_the_record_counts_as_fitted_with_item_images(world, tmp_path):
    import torch

    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint

    doc = torch.load(world.verifier, map_location="cpu", weights_only=True)
    del doc["item_images"]  # as checkpoints written before the record
    old = tmp_path / "old.pt"
    torch.save(doc, old)
    checkpoint = load_cascade_checkpoint(old)
    assert checkpoint.item_images is None and checkpoint.fitted_with_item_images


# -- the backfill records what was withheld as the daemon does ---------------------------------


def test_settle_files_records_withheld_as_save_candidates_does(store):
    """Every backend: a backfill block (``settle_files``) leaves the same withheld record in the
    file's media document as the daemon's ``save_candidates``, whether the block carries the
    file's media (read in the backfill) or the queue already has it (fetched before)."""
    from datetime import datetime, timezone

    from wikivel_bot.queue.store import FileOutcome
    from wikivel_bot.types import Candidate, FileState, MediaFile, Upload

    def upload(page_id: int) -> Upload:
        return Upload(page_id=page_id, title=f"File:Example {page_id}.jpg",
                      timestamp=datetime(2026, 11, 1, tzinfo=timezone.utc), uploader="Alice", log_id=1000 + page_id,
                      sha1="a" * 40, mime="image/jpeg", size=1, width=800, height=600)

    def media(page_id: int) -> MediaFile:
        return MediaFile(page_id=page_id, title=f"File:Example {page_id}.jpg", description="d", revid=7)

    found = [Candidate(qid="Q89", score=0.5, rank=1, linker="zero-shot", linker_version="1", labelset_hash="h")]
    record = [{"qid": "Q146", "rule": "blocked class", "reason": "under Q622852", "score": 0.25}]
    store.enqueue([upload(p) for p in (1, 2, 3)])
    ids = {w.page_id: w.id for w in store.claim_files(FileState.DISCOVERED, 3, "w")}
    for page_id in (2, 3):  # fetched before they are linked
        store.mark_fetched(ids[page_id], media(page_id))
    store.claim_files(FileState.FETCHED, 2, "w")
    store.save_candidates(ids[3], found, withheld=record)  # the daemon
    assert store.settle_files([  # the backfill
        FileOutcome(ids[1], FileState.LINKED, media=media(1), candidates=found, withheld=record),
        FileOutcome(ids[2], FileState.LINKED, candidates=found, withheld=record),
    ]) == [1, 1]
    from sqlalchemy import select

    from wikivel_bot.queue.tables import files

    with store.engine.connect() as conn:
        docs = {r.id: r.media for r in conn.execute(select(files.c.id, files.c.media))}
    assert docs[ids[1]] == docs[ids[2]] == docs[ids[3]]
    assert docs[ids[3]]["withheld"] and docs[ids[3]]["description"] == "d"
