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
