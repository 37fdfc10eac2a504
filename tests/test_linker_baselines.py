"""The top-k baseline ranks items by how often they are depicted themselves (paper Table 4),
not by counts accumulated from their descendants."""

from __future__ import annotations

from wikivel_bot.labels import label_set_from_records
from wikivel_bot.linker import create_linker
from wikivel_bot.linker.base import Query


def test_top_k_prefers_direct_counts_over_accumulated_ones() -> None:
    records = [
        {"qid": "Q146", "label": "house cat", "description": "domesticated feline", "p279": ["Q729"]},
        {"qid": "Q144", "label": "dog", "description": "domestic animal", "p279": ["Q729"]},
        {"qid": "Q729", "label": "animal", "description": "kingdom of organisms", "p279": []},
    ]
    # animal is depicted on 3 files itself but accumulates 3 + 10 + 6 = 19 over its subclasses
    label_set = label_set_from_records(records, {"Q146": 10, "Q144": 6, "Q729": 3})
    assert label_set.frequency("Q729") > label_set.frequency("Q146") > label_set.direct_frequency("Q729")
    linker = create_linker("top-k")
    linker.attach(label_set, "")
    (hits,) = linker.search([Query("File:X.jpg", None, "", 0)], 3)
    assert [label_set.qids[i] for i, _ in hits] == ["Q146", "Q144", "Q729"]


def test_baselines_use_train_split_counts_after_promotion(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Hand-checked: human (Q5) is depicted once itself, the three people once each; with f = 3
    # the people are promoted to human. Ten files, split 8/1/1 with seed 0; whatever the
    # split, every train file depicting a person or human has human as truth after promotion.
    from wikivel_bot.linker.baselines import FrequencyLinker
    from wikivel_bot.train.data.dataset import FileRecord, load_dataset, write_dataset

    records = [
        {"qid": "Q5", "label": "human", "description": "any member of Homo sapiens"},
        {"qid": "Q937", "label": "Albert Einstein", "p31": ["Q5"]},
        {"qid": "Q762", "label": "Leonardo da Vinci", "p31": ["Q5"]},
        {"qid": "Q7186", "label": "Marie Curie", "p31": ["Q5"]},
        {"qid": "Q146", "label": "house cat", "description": "domesticated feline"},
    ]
    labels = label_set_from_records(records, {"Q5": 1, "Q937": 1, "Q762": 1, "Q7186": 1, "Q146": 6}, min_freq=3)
    assert labels.qids == ["Q5", "Q146"] and labels.direct_frequency("Q5") == 1
    depicts = [("Q5",), ("Q937",), ("Q762",), ("Q7186",)] + [("Q146",)] * 6
    files = [FileRecord(1000 + i, f"File:F{i}.jpg", items) for i, items in enumerate(depicts)]
    write_dataset(files, labels, tmp_path / "data", seed=0)
    dataset = load_dataset(tmp_path / "data")
    counts = dataset.train_counts()
    train_rows = dataset.split_rows("train")
    expected_human = sum(1 for r in train_rows if dataset.items()[r] == ["Q5"])
    assert counts["Q5"] == expected_human and expected_human >= 2  # 4 of 10 files, 8 in train
    assert counts["Q5"] + counts["Q146"] == 8
    assert (tmp_path / "data" / "train_counts.json").is_file()

    # Before: top-k by the label set's own counts puts house cat (6) far ahead of human (1).
    # After: the train counts after promotion give human its real share.
    top = create_linker("top-k")
    assert isinstance(top, FrequencyLinker)
    top.set_frequencies({"Q5": 5, "Q146": 3}, "hand-made counts")
    top.attach(labels, "")
    (hits,) = top.search([Query("File:X.jpg", None, "", 0)], 2)
    assert [(labels.qids[i], round(score, 3)) for i, score in hits] == [("Q5", 0.625), ("Q146", 0.375)]
    assert "frequencies: hand-made counts" in top.description.warnings
    sample = create_linker("random-freq")
    assert isinstance(sample, FrequencyLinker)
    sample.set_frequencies(counts, "train split")
    sample.attach(labels, "")
    drawn_first = [labels.qids[sample.search([Query("F", None, "", seed)], 1)[0][0][0]] for seed in range(200)]
    # P(human first) = its train share; it was 1/7 with the dump's own counts, 0 before promotion
    # was counted at all. Here it is counts["Q5"] / 8 >= 1/4.
    share = drawn_first.count("Q5") / 200
    assert abs(share - counts["Q5"] / 8) < 0.12
