"""The safety rules' fixture label set: specific people, human and two subclasses, a
painting, animals, a religion with items 1-4 hops under it, an ethnic group, a blocked class."""

from __future__ import annotations

from wikivel_bot.labels import label_set_from_records

RECORDS = [
    {"qid": "Q5", "label": "human", "description": "any member of Homo sapiens"},
    {"qid": "Q467", "label": "woman", "description": "female adult human", "p279": ["Q5"]},
    {"qid": "Q7569", "label": "child", "description": "young human", "p279": ["Q5"]},
    {"qid": "Q76", "label": "Barack Obama", "description": "44th president of the United States",
     "p31": ["Q5"], "aliases": ["Obama"]},
    {"qid": "Q5582", "label": "Vincent van Gogh", "description": "Dutch painter", "p31": ["Q5"],
     "aliases": ["Van Gogh"]},
    {"qid": "Q7186", "label": "Marie Curie", "description": "physicist and chemist", "p31": ["Q5"]},
    {"qid": "Q3305213", "label": "painting", "description": "artwork"},
    {"qid": "Q45585", "label": "The Starry Night", "description": "painting by Vincent van Gogh",
     "p31": ["Q3305213"]},
    {"qid": "Q729", "label": "animal", "description": "kingdom of multicellular organisms"},
    {"qid": "Q146", "label": "house cat", "description": "domesticated feline", "p279": ["Q729"]},
    {"qid": "Q144", "label": "dog", "description": "domestic canine", "p279": ["Q729"]},
    # A sensitive class (religion) with items 1, 2, 3 and 4 hops below it.
    {"qid": "Q9174", "label": "religion", "description": "social-cultural system"},
    {"qid": "Q5043", "label": "Christianity", "description": "Abrahamic religion", "p31": ["Q9174"]},
    {"qid": "Q1841", "label": "Catholicism", "description": "Christian denomination", "p279": ["Q5043"]},
    {"qid": "Q9592", "label": "Catholic Church", "description": "church", "p279": ["Q1841"]},
    {"qid": "Q900004", "label": "parish of four hops", "description": "test item", "p279": ["Q9592"]},
    {"qid": "Q41710", "label": "ethnic group", "description": "socially defined category"},
    {"qid": "Q190168", "label": "Yoruba people", "description": "ethnic group of West Africa",
     "p31": ["Q41710"]},
    # A class the operator blocks: it and everything below it.
    {"qid": "Q800001", "label": "blocked thing", "description": "a blocked class"},
    {"qid": "Q800002", "label": "blocked child", "description": "under the blocked class", "p279": ["Q800001"]},
]
PEOPLE_QIDS = {"Q76", "Q5582", "Q7186"}
LABELS = label_set_from_records(RECORDS)
