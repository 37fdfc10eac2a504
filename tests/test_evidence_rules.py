"""The pure evidence rules (core/evidence.py): values, references, the identifier table, the
P301 rule, category-label matches, ties and buckets."""

from __future__ import annotations

import pytest

from wikivel_bot.core.evidence import (
    BUCKET_IMAGE_ONLY,
    BUCKET_SEVERAL,
    DEFAULT_IDENTIFIER_RULES,
    KIND_CATEGORY,
    KIND_CATEGORY_LABEL,
    KIND_ID,
    KIND_LINK,
    WIKIMEDIA_CATEGORY,
    Evidence,
    IdentifierRule,
    Ref,
    category_label_evidence,
    category_target,
    evidence_for,
    kind_bucket,
    merged_rules,
    parse_ref,
    ref_category,
    ref_id,
    ref_item,
    ref_link,
    rules_from_table,
    ties_file_to,
)
from wikivel_bot.errors import ConfigError

EIFFEL_CAT = Evidence(KIND_CATEGORY, "Category:Eiffel Tower", "Q243")
EIFFEL_LINK = Evidence(KIND_LINK, "[[w:en:Eiffel Tower]]", "Q243")


def test_evidence_describes_itself_and_round_trips_through_its_stored_form():
    assert EIFFEL_CAT.describe() == "Category:Eiffel Tower → Q243"
    stored = EIFFEL_CAT.as_dict()
    assert stored == {"kind": "category", "source": "Category:Eiffel Tower", "qid": "Q243",
                      "text": "Category:Eiffel Tower → Q243"}
    assert Evidence.from_dict(stored) == EIFFEL_CAT
    monument = Evidence(KIND_ID, "{{Rijksmonument|518452}}", "Q1917")
    assert monument.describe() == "{{Rijksmonument|518452}} → Q1917"


@pytest.mark.parametrize("kind, source, qid, message", [
    ("categry", "Category:X", "Q1", "unknown evidence kind 'categry'"),
    ("link", "", "Q1", "has no source text"),
    ("link", "[[w:X]]", "q1", "'q1', not a Wikidata item id"),
])
def test_bad_evidence_is_refused_with_a_message_naming_it(kind, source, qid, message):
    with pytest.raises(ValueError, match=message):
        Evidence(kind, source, qid)


def test_stored_evidence_missing_a_key_is_named():
    with pytest.raises(ValueError, match="has no 'qid'"):
        Evidence.from_dict({"kind": "link", "source": "[[w:X]]"})


def test_references_round_trip_and_render_as_the_page_spells_them():
    cases = [
        (ref_category("black_cats"), Ref("category", name="Black cats"), "Category:Black cats"),
        (ref_link("enwiki", "eiffel_Tower"), Ref("link", name="Eiffel Tower", site="enwiki"),
         "[[w:en:Eiffel Tower]]"),
        (ref_link("zh_yuewiki", "X"), Ref("link", name="X", site="zh_yuewiki"), "[[w:zh-yue:X]]"),
        (ref_link("enwikivoyage", "Paris"), Ref("link", name="Paris", site="enwikivoyage"),
         "[[enwikivoyage:Paris]]"),
        (ref_item("Q243"), Ref("item", name="Q243"), "[[d:Q243]]"),
        (ref_id("P359", " 518452 ", "Rijksmonument"),
         Ref("id", prop="P359", value="518452", template="Rijksmonument"), "{{Rijksmonument|518452}}"),
    ]
    for text, ref, source in cases:
        assert parse_ref(text) == ref
        assert ref.text == text
        assert ref.source == source


def test_identifier_values_may_contain_colons():
    text = ref_id("P1234", "urn:nbn:de:1", "Some id")
    assert text == "id:P1234:urn:nbn:de:1:Some id"
    assert parse_ref(text) == Ref("id", prop="P1234", value="urn:nbn:de:1", template="Some id")


@pytest.mark.parametrize("text", ["", "category:", "item:Q0", "item:243", "link:enwiki", "link::X",
                                  "id:359:1:T", "id:P359:1", "page:X"])
def test_unknown_references_are_refused(text):
    with pytest.raises(ValueError, match="is not an evidence reference"):
        parse_ref(text)


def test_reference_builders_check_their_parts():
    with pytest.raises(ValueError, match="not a wiki database name"):
        ref_link("en:wiki", "X")
    with pytest.raises(ValueError, match="not a Wikidata item id"):
        ref_item("Q01")
    with pytest.raises(ValueError, match="not a Wikidata property id"):
        ref_id("Q359", "1", "T")
    with pytest.raises(ValueError, match="empty P359 identifier"):
        ref_id("P359", "  ", "Rijksmonument")


def test_default_identifier_table_is_valid_and_names_well_known_templates():
    assert rules_from_table(DEFAULT_IDENTIFIER_RULES) == DEFAULT_IDENTIFIER_RULES
    by_template = {r.template: r.property for r in DEFAULT_IDENTIFIER_RULES}
    assert by_template["Rijksmonument"] == "P359"
    assert by_template["Mérimée"] == "P380"


def test_rules_from_table_reads_rows_and_defaults_the_parameter_to_the_first():
    rules = rules_from_table([{"template": " Monumento BIC ", "property": "P808"},
                              {"template": "Kulturdenkmal", "parameter": "id", "property": "P1234"}])
    assert rules == (IdentifierRule("Monumento BIC", "1", "P808"), IdentifierRule("Kulturdenkmal", "id", "P1234"))


@pytest.mark.parametrize("rows, message", [
    (["Rijksmonument"], "row 1 must be a table"),
    ([{"template": "", "property": "P1"}], "row 1 needs a non-empty string template"),
    ([{"template": "T", "property": "P1"}, {"template": "T2"}], "row 2 needs a non-empty string property"),
    ([{"template": "T", "property": "359"}], "'359' is not a Wikidata property id"),
    ([{"template": "T", "property": "P0359"}], "'P0359' is not a Wikidata property id"),
    ([{"template": "T", "property": "P1", "prop": "P2"}], "unknown key 'prop'"),
    ([{"template": "T", "parameter": 1, "property": "P1"}], "non-empty string parameter, not 1"),
])
def test_bad_table_rows_give_one_line_naming_the_row(rows, message):
    with pytest.raises(ConfigError, match=message) as caught:
        rules_from_table(rows, where="wikivel.toml: evidence.identifier_templates")
    assert str(caught.value).startswith("wikivel.toml: evidence.identifier_templates: ")
    assert "\n" not in str(caught.value)


def test_merged_rules_add_to_the_defaults_and_a_template_row_replaces_its_default():
    extra = (IdentifierRule("rijksmonument", "nummer", "P359"), IdentifierRule("New", "1", "P9"))
    merged = merged_rules(extra)
    assert merged[-2:] == extra
    assert [r for r in merged if r.key == "rijksmonument"] == [extra[0]]
    assert len(merged) == len(DEFAULT_IDENTIFIER_RULES) + 1


def test_category_target_follows_a_category_item_to_its_main_topic():
    assert category_target("Q243", ["Q1440476"], []) == "Q243"  # the topic's own item
    assert category_target("Q7203638", [WIKIMEDIA_CATEGORY], ["Q243"]) == "Q243"
    # a category item with no (or no single) main topic names nothing
    assert category_target("Q7203638", [WIKIMEDIA_CATEGORY], []) is None
    assert category_target("Q7203638", [WIKIMEDIA_CATEGORY], ["Q1", "Q2"]) is None
    # P301 on a topic item is ignored: only category items are followed
    assert category_target("Q243", ["Q1440476"], ["Q1"]) == "Q243"


def test_category_label_matches_names_exactly_with_a_case_insensitive_first_letter():
    names = {"mallard": ["Q25348"], "Eiffel Tower": ["Q243"], "Mercury": ["Q308", "Q925"],
             "owl": ["Q25756"]}
    found = category_label_evidence(
        ["Mallard", "eiffel tower", "Eiffel_Tower", "Mercury", "Owls", "Eiffel Tower"], names)
    assert found == (
        Evidence(KIND_CATEGORY_LABEL, "Category:Mallard", "Q25348"),
        Evidence(KIND_CATEGORY_LABEL, "Category:Eiffel Tower", "Q243"),
    )
    # "eiffel tower" is "Eiffel tower" as a title: the rest of the name is case-sensitive;
    # Mercury names two items; "Owls" is not "owl".


def test_category_label_skips_categories_that_are_linked():
    found = category_label_evidence(["Eiffel Tower"], {"Eiffel Tower": ["Q243"]}, [EIFFEL_CAT.as_dict()])
    assert found == ()


def test_ties_need_a_deliberate_link_to_that_item():
    label_only = Evidence(KIND_CATEGORY_LABEL, "Category:Barack Obama", "Q76")
    assert ties_file_to("Q243", [EIFFEL_CAT])
    assert ties_file_to("Q243", [EIFFEL_LINK.as_dict()])
    assert ties_file_to("Q1917", [Evidence(KIND_ID, "{{Rijksmonument|1}}", "Q1917")])
    assert not ties_file_to("Q76", [label_only])
    assert not ties_file_to("Q76", [EIFFEL_CAT])
    assert not ties_file_to("Q76", [])


def test_kind_bucket():
    assert kind_bucket([]) == BUCKET_IMAGE_ONLY
    assert kind_bucket([EIFFEL_CAT]) == KIND_CATEGORY
    assert kind_bucket([EIFFEL_CAT, Evidence(KIND_CATEGORY, "Category:Towers in Paris", "Q243")]) == KIND_CATEGORY
    assert kind_bucket([EIFFEL_CAT.as_dict(), EIFFEL_LINK.as_dict()]) == BUCKET_SEVERAL


def test_evidence_for_keeps_one_of_each_in_order():
    other = Evidence(KIND_LINK, "[[w:en:Paris]]", "Q90")
    assert evidence_for("Q243", [EIFFEL_LINK, other, EIFFEL_CAT, EIFFEL_LINK]) == (EIFFEL_LINK, EIFFEL_CAT)
