"""The training losses and their targets (paper §4.3; seeds 002/004): exact values on small
cases, gradients against finite differences, and the target matrix of a batch with repeats."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from wikivel_bot.labels import label_set_from_records  # noqa: E402
from wikivel_bot.train.fitting.losses import (  # noqa: E402
    batch_loss,
    hinge_triplet_loss,
    inverse_frequency_weights,
    relaxed_contrastive_loss,
)
from wikivel_bot.train.fitting.targets import TargetBuilder, Truth, related_pairs  # noqa: E402

# animal <- domesticated animal <- {house cat, dog};  human;  house
RECORDS = [
    {"qid": "Q729", "label": "animal"},
    {"qid": "Q622852", "label": "domesticated animal", "p279": ["Q729"]},
    {"qid": "Q146", "label": "house cat", "p279": ["Q622852"]},
    {"qid": "Q144", "label": "dog", "p279": ["Q622852"]},
    {"qid": "Q5", "label": "human"},
    {"qid": "Q3947", "label": "house"},
]


@pytest.fixture(scope="module")
def labels():
    return label_set_from_records(RECORDS)


def test_targets_mark_every_pair_that_shares_an_item(labels):
    pos = {q: labels.index_of(q) for q in labels.qids}
    # Files: 0 depicts cat and human; 1 depicts cat; 2 depicts house.
    truth = Truth.from_lists([[pos["Q146"], pos["Q5"]], [pos["Q146"]], [pos["Q3947"]]], len(labels.qids))
    # Rows (file, item): (0, cat) (0, human) (1, cat) (2, house) (1, cat) - "cat" three times.
    files = torch.tensor([0, 0, 1, 2, 1])
    items = torch.tensor([pos["Q146"], pos["Q5"], pos["Q146"], pos["Q3947"], pos["Q146"]])
    targets = TargetBuilder(truth)(files, items)
    expected = torch.tensor([
        [1, 1, 1, 0, 1],  # file 0 depicts cat (cols 0, 2, 4) and human (col 1)
        [1, 1, 1, 0, 1],
        [1, 0, 1, 0, 1],  # file 1: cat only
        [0, 0, 0, 1, 0],
        [1, 0, 1, 0, 1],
    ], dtype=torch.float32)
    assert torch.equal(targets, expected)
    assert torch.equal(targets.diagonal(), torch.ones(5))


def test_hop_targets_weight_related_items_by_distance(labels):
    pos = {q: labels.index_of(q) for q in labels.qids}
    truth = Truth.from_lists([[pos["Q146"]], [pos["Q622852"]], [pos["Q729"]], [pos["Q5"]]], len(labels.qids))
    used = [pos[q] for q in ("Q146", "Q622852", "Q729", "Q5")]
    relations = related_pairs(labels, used, max_hops=2)
    n = len(labels.qids)
    assert pos["Q146"] * n + pos["Q622852"] in relations[1].tolist()
    assert pos["Q729"] * n + pos["Q146"] in relations[2].tolist()  # symmetric, 2 hops
    files = torch.tensor([0, 1, 2, 3])
    items = torch.tensor(used)
    one_hop = TargetBuilder(truth, related_pairs(labels, used, 1), hop_weight=0.5)(files, items)
    two_hops = TargetBuilder(truth, relations, hop_weight=0.5)(files, items)
    # cat file: domesticated animal 1 hop up (0.5), animal 2 hops up (0.25 only with 2 hops).
    assert one_hop[0].tolist() == [1.0, 0.5, 0.0, 0.0]
    assert two_hops[0].tolist() == [1.0, 0.5, 0.25, 0.0]
    # animal file: domesticated animal 1 hop down, cat 2 hops down; human unrelated.
    assert two_hops[2].tolist() == [0.25, 0.5, 1.0, 0.0]
    assert two_hops[3].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_inverse_batch_frequency_gives_each_item_equal_weight():
    weights = inverse_frequency_weights(torch.tensor([7, 7, 7, 3]))
    assert torch.allclose(weights, torch.tensor([2 / 3, 2 / 3, 2 / 3, 2.0]))
    assert math.isclose(float(weights.mean()), 1.0, rel_tol=1e-6)
    # Per distinct item the summed weight is the same (2 each here).
    assert math.isclose(float(weights[:3].sum()), float(weights[3]), rel_tol=1e-6)


def test_diagonal_targets_reduce_to_clip_loss():
    torch.manual_seed(0)
    logits = torch.randn(6, 6)
    ours = relaxed_contrastive_loss(logits, torch.eye(6))
    labels_ = torch.arange(6)
    clip = 0.5 * (torch.nn.functional.cross_entropy(logits, labels_) + torch.nn.functional.cross_entropy(logits.T, labels_))
    assert torch.allclose(ours, clip, atol=1e-6)


def test_multi_positive_loss_by_hand():
    # Row 0 has two equal positives: its best distribution is half/half, not one-hot.
    logits = torch.tensor([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    targets = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    z01 = math.log(2 * math.exp(2) + 1)
    row = -(0.5 * (2 - z01) + 0.5 * (2 - z01))  # rows 0 and 1 (and, by symmetry, columns)
    row2 = -(3 - math.log(2 + math.exp(3)))
    expected = 0.5 * (2 * (2 * row + row2) / 3)
    assert math.isclose(float(relaxed_contrastive_loss(logits, targets)), expected, rel_tol=1e-6)
    # The two positives are pulled alike; plain CLIP targets would push the second one away.
    relaxed = logits.clone().requires_grad_()
    relaxed_contrastive_loss(relaxed, targets).backward()
    assert math.isclose(float(relaxed.grad[0, 0]), float(relaxed.grad[0, 1]), abs_tol=1e-7)
    diagonal = logits.clone().requires_grad_()
    relaxed_contrastive_loss(diagonal, torch.eye(3)).backward()
    assert float(diagonal.grad[0, 1]) > 0 > float(diagonal.grad[0, 0])


def test_relaxed_loss_gradient_matches_finite_differences():
    torch.manual_seed(1)
    queries = torch.nn.functional.normalize(torch.randn(5, 4, dtype=torch.float64), dim=1).requires_grad_()
    items = torch.nn.functional.normalize(torch.randn(5, 4, dtype=torch.float64), dim=1).requires_grad_()
    targets = torch.tensor([[1, 1, 0, 0, 0.5], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 1], [0.5, 0, 0, 1, 1]],
                           dtype=torch.float64)
    weights = torch.tensor([0.5, 0.5, 1.0, 1.5, 1.5], dtype=torch.float64)

    def loss(q, e):
        return relaxed_contrastive_loss((q @ e.T) * 7.0, targets, weights)

    assert torch.autograd.gradcheck(loss, (queries, items), eps=1e-6, atol=1e-6)


def test_triplet_loss_uses_the_hardest_negative_only():
    sims = torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.5, 0.45], [0.0, 0.95, 0.7]], requires_grad=True)
    targets = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    loss = hinge_triplet_loss(sims, targets, margin=0.2)
    # Row 0: negatives {col 2}: 0.2 + 0.1 - 0.9 < 0 -> 0; column 0: negatives {row 2}: 0.2 + 0 - 0.9 -> 0.
    # Row 1: 0.2 + 0.45 - 0.5 = 0.15; column 1: 0.2 + 0.95 - 0.5 = 0.65.
    # Row 2: 0.2 + 0.95 - 0.7 = 0.45; column 2: 0.2 + max(0.1, 0.45) - 0.7 = -0.05 -> 0.
    assert math.isclose(loss.item(), (0.15 + 0.65 + 0.45) / 3, rel_tol=1e-6)
    loss.backward()
    assert sims.grad[0, 1] == 0  # a positive is never a negative
    assert sims.grad[2, 1] > 0 and sims.grad[2, 0] == 0  # only the hardest negative gets gradient


def test_triplet_gradient_matches_finite_differences_away_from_kinks():
    torch.manual_seed(3)
    sims = (torch.rand(4, 4, dtype=torch.float64) * 0.8).requires_grad_()
    targets = torch.eye(4, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda s: hinge_triplet_loss(s, targets, 0.3), (sims,), eps=1e-7, atol=1e-6)


def test_batch_loss_dispatches_and_rejects_unknown_kinds():
    torch.manual_seed(2)
    q = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    e = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    ids = torch.tensor([1, 1, 2, 3])
    targets = torch.eye(4)
    targets[0, 1] = targets[1, 0] = 1.0
    contrastive = batch_loss("contrastive", q, e, targets, ids, logit_scale=torch.tensor(math.log(10.0)))
    expected = relaxed_contrastive_loss((q @ e.T) * 10.0, targets, inverse_frequency_weights(ids))
    assert torch.allclose(contrastive, expected)
    unscaled = batch_loss("contrastive", q, e, targets, ids, logit_scale=torch.tensor(math.log(10.0)), rescale=False)
    assert not torch.allclose(contrastive, unscaled)
    assert float(batch_loss("triplet", q, e, targets, ids, margin=0.2)) >= 0.0
    with pytest.raises(ValueError, match="unknown loss"):
        batch_loss("softmax", q, e, targets, ids)
