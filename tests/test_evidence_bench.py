"""The evidence bench (``bench/evidence.py``): its tables are whole, its intervals could say no,
and the harder synthetic set no longer has the answer built in.

Tiny sizes (100 files, one epoch per model, the tiny random-init open_clip model): the figures
are SYNTHETIC and mean nothing by themselves. What must hold whatever the training did: when
every file carries a linked category naming what it depicts and no evidence is misleading,
the evidence model learns that evidence is right, so each file's first suggestion with
evidence is depicted — R@1 with evidence is at least R@1 of the image alone, for every linker.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")

from wikivel_bot.core.evidence import KIND_CATEGORY  # noqa: E402
from wikivel_bot.evaluation.runs.evidence import (  # noqa: E402
    BASELINES,
    COLUMNS,
    EVIDENCE_ALONE,
    IMAGE_ONLY,
    KINDS_MODEL,
    KINDS_RULE,
    LINKERS,
    WITH_EVIDENCE,
    EvidenceBenchOptions,
    run_evidence_bench,
)
from wikivel_bot.evaluation.runs.evidence_measures import (  # noqa: E402
    Outcome,
    Truth,
    file_bootstrap,
    lone_category_auc,
    paired_gain,
    served_calibration,
)
from wikivel_bot.evaluation.runs.evidence_report import comparison_markdown, seeds_markdown  # noqa: E402
from wikivel_bot.train.synthetic.evidence import check_shares, leaf_of, plan_evidence  # noqa: E402
from wikivel_bot.train.synthetic.evidence_errors import HARD_SHARES  # noqa: E402
from wikivel_bot.train.synthetic.shapes import generate_files, leaf_qid  # noqa: E402

CONDITION = "misleading-0.5"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    options = EvidenceBenchOptions(files=100, seed=0, shares={"category": 1.0, "misleading": 0.0}, epochs=1,
                                   cascade_epochs=1, candidates=10, threads=1, precision="fp32",
                                   test_shares=((CONDITION, {"misleading": 0.5}),))
    return run_evidence_bench(tmp_path_factory.mktemp("evidence-bench"), options)


def test_the_table_has_every_row_and_column(honest):
    expected = [(name, mode) for name in LINKERS for mode in (IMAGE_ONLY, WITH_EVIDENCE)]
    baselines = [("evidence", mode) for mode in BASELINES]
    assert [(r["linker"], r["mode"]) for r in honest.rows] == expected + baselines
    for row in honest.rows:
        assert set(COLUMNS) <= set(row), row["linker"]
        for column in ("R@1", "R@10", "nDCG@5", "recall"):
            assert 0.0 <= row[column] <= 1.0, (row["linker"], row["mode"], column)
    table = comparison_markdown(honest)
    assert table.startswith("SYNTHETIC")
    assert "| linker | evidence | " + " | ".join(COLUMNS) + " |" in table
    for name, mode in expected + baselines:
        assert f"| {name} | {mode} | " in table
    assert set(honest.models) == set(LINKERS) and honest.files > 0
    # The further test set: the same files, every linker with evidence and the baselines.
    condition = honest.conditions[CONDITION]
    assert [(r["linker"], r["mode"]) for r in condition["rows"]] == [(n, WITH_EVIDENCE) for n in LINKERS] + baselines
    assert condition["shares_realised"]["misleading"] > 0.3 and f"Test set `{CONDITION}`" in table


def test_gains_and_calibration_have_intervals(honest):
    for name in LINKERS:
        for base in BASELINES:
            r1 = honest.gains[name][base]["R@1"]
            assert r1["low"] <= r1["value"] <= r1["high"], (name, base)
            assert set(honest.gains[name][base]) == {"R@1", "precision", "recall"}
        served = honest.calibration[name]
        assert 0.0 <= served["ece"] <= 1.0 and served["candidates"] >= served["evidence_candidates"] > 0
    # Kinds alone give every lone category one probability: they cannot rank them.
    lone = honest.conditions[CONDITION]["calibration"][f"evidence ({KINDS_MODEL})"]["lone_category"]
    assert lone["auc"] is None or lone["auc"]["value"] == pytest.approx(0.5)


def test_evidence_that_is_always_right_never_lowers_rank_one(honest):
    # Every file has a linked category naming its leaf, and none misleads.
    assert honest.shares["category"] == 1.0 and honest.shares["misleading"] == 0.0
    for name in LINKERS:
        image, both = honest.row(name, IMAGE_ONLY), honest.row(name, WITH_EVIDENCE)
        assert both["R@1"] >= image["R@1"], name
        # Nothing is misleading, so there is nothing to keep; items outside the label set are
        # named by evidence only, so the image alone never suggests one.
        assert both["misleading kept"] is None and image["outside label set"] in (0.0, None)
    # Evidence alone, and the kinds-only rule, propose only right items here.
    assert honest.row("evidence", EVIDENCE_ALONE)["precision"] == 1.0
    assert honest.row("evidence", KINDS_RULE)["precision"] in (1.0, None)


# -- the harder set: the answer is no longer built in ---------------------------------------------

def _wrong(shares):
    files = generate_files(1200, 0)
    plan = plan_evidence(files, 0, check_shares(shares))
    out = []
    for f in files:
        sources = plan.sources[f.record.page_id]
        truth = leaf_qid(f.colour, f.shape)
        for ev in sources:
            if ev.qid != truth:
                kinds = tuple(e.kind for e in sources if e.qid == ev.qid)
                out.append((ev.kind, kinds, leaf_of(ev.qid), (f.colour, f.shape)))
    return out


def test_in_the_first_set_only_a_lone_category_is_ever_wrong():
    wrong = _wrong({})
    assert wrong and {kinds for _, kinds, _, _ in wrong} == {(KIND_CATEGORY,)}


def test_in_the_harder_set_every_kind_is_wrong_errors_co_occur_and_look_alike():
    wrong = _wrong(HARD_SHARES)
    assert {kind for kind, _, _, _ in wrong} == {"category", "category label", "link", "identifier"}
    named_twice = sum(1 for _, kinds, _, _ in wrong if len(set(kinds)) > 1)
    assert named_twice > 0.2 * len(wrong)  # the photographer's category and link together
    alike = sum(1 for _, _, (c, s), (tc, ts) in wrong if c == tc or s == ts)
    # Half drawn as look-alikes, and a uniform draw shares colour or shape 12/47 of the time.
    assert 0.5 < alike / len(wrong) < 0.75


def test_item_dependent_reliability_spreads_the_error_rate_over_leaves():
    files = generate_files(1200, 0)
    plan = plan_evidence(files, 0, check_shares({**HARD_SHARES, "misleading": 0.0, "co_link": 0.0}))
    by_leaf = {}
    for f in files:
        errors = [ev.qid != leaf_qid(f.colour, f.shape) for ev in plan.sources[f.record.page_id]]
        count = by_leaf.setdefault((f.colour, f.shape), [0, 0])
        count[0] += sum(errors)
        count[1] += len(errors)
    rates = [w / n for w, n in by_leaf.values() if n >= 30]
    assert max(rates) > 3 * min(rates) + 0.02


# -- the measures: they can say no ----------------------------------------------------------------

def _outcome(mode, hits, files=40):
    ids = tuple(range(files))
    return Outcome("x", mode, ids, {f: ["Q1" if f < hits else "Q2"] for f in ids},
                   {f: ["Q1" if f < hits else "Q2"] for f in ids})


def test_a_paired_gain_excludes_zero_only_when_the_rows_differ():
    truth = Truth({f: ("Q1",) for f in range(40)}, set(), {"Q1", "Q2"})
    better = paired_gain(_outcome("a", 40), _outcome("b", 20), truth)
    assert better["R@1"].value == pytest.approx(0.5) and better["R@1"].excludes_zero
    assert better["recall"].value == pytest.approx(0.5) and better["precision"].excludes_zero
    same = paired_gain(_outcome("a", 20), _outcome("b", 20), truth)
    assert same["R@1"].value == 0.0 and not same["R@1"].excludes_zero
    # One file of 40 apart: too little to claim an order.
    close = paired_gain(_outcome("a", 21), _outcome("b", 20), truth)
    assert not close["R@1"].excludes_zero


def test_the_file_bootstrap_covers_the_mean_of_a_known_coin():
    hits = np.random.default_rng(5).random(400) < 0.3
    interval = file_bootstrap(len(hits), lambda idx: float(hits[idx].mean()))
    assert interval.low < 0.3 < interval.high and interval.high - interval.low < 0.1


def test_served_calibration_and_the_lone_category_auc():
    served = [(f, 0.9, True, (KIND_CATEGORY,)) for f in range(10)] + \
             [(f, 0.1, False, (KIND_CATEGORY,)) for f in range(10, 20)] + \
             [(f, 0.5, False, ()) for f in range(20, 30)]
    outcome = Outcome("x", WITH_EVIDENCE, tuple(range(30)), {}, {}, served=served)
    calibration = served_calibration(outcome)
    assert calibration["evidence_candidates"] == 20
    assert calibration["ece_evidence"] == pytest.approx(0.1)
    assert calibration["ece"] == pytest.approx((0.1 + 0.1 + 0.5) / 3)
    lone = lone_category_auc(outcome)
    assert lone["candidates"] == 20 and lone["auc"]["value"] == 1.0


def _runs(honest, gains):
    """Copies of one run under other seeds, naive-mlp's R@1 with evidence set to the kinds-only
    model's plus ``gains[(data seed, training seed)]``."""
    import copy

    out = []
    for (data_seed, train_seed), gain in gains.items():
        doc = copy.deepcopy(honest.as_dict())
        doc["options"].update(data_seed=data_seed, train_seed=train_seed)
        base = next(r for r in doc["rows"] if r["mode"] == KINDS_MODEL)
        mine = next(r for r in doc["rows"] if r["linker"] == "naive-mlp" and r["mode"] == WITH_EVIDENCE)
        mine["R@1"] = base["R@1"] + gain
        out.append(doc)
    return out


def _claim(table):
    line = next(x for x in table.splitlines() if x.startswith(f"| naive-mlp | {KINDS_MODEL} |"))
    return line.split(" | ")[3]


def test_over_seeds_an_order_needs_a_paired_interval_over_data_seeds_that_excludes_zero(honest):
    steady = {(d, t): 0.10 + 0.01 * d - 0.005 * t for d in range(3) for t in range(2)}
    assert "above" in _claim(seeds_markdown(_runs(honest, steady)))
    # The same mean gain, but one data seed says the opposite: no order.
    mixed = {(d, t): (0.25 if d < 2 else -0.2) for d in range(3) for t in range(2)}
    assert _claim(seeds_markdown(_runs(honest, mixed))) == "none claimed"
    # However steady, one data seed is one draw of test files: no order.
    one = {(0, t): 0.10 for t in range(5)}
    assert _claim(seeds_markdown(_runs(honest, one))) == "none claimed"


def test_the_seeds_table_claims_no_order_from_one_run(honest):
    table = seeds_markdown([honest.as_dict()])
    assert table.startswith("SYNTHETIC, 1 runs") and "none claimed" in table and "**image + evidence" not in table
    assert "[one training seed]" in table
