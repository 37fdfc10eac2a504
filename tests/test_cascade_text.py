"""The file text the cascade reads (linker/cascade/text.py) and how it is cut (linker/cascade/linker.py)."""

from __future__ import annotations

import pytest

from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.cascade.text import (
    LEGACY_ORDER,
    TEXT_ORDER,
    cascade_file_text,
    check_order,
    descriptive_categories,
    media_text,
)
from wikivel_bot.types import MediaFile

# A real-looking Commons file: a name with a place and a year, one sentence, two categories
# that say what is shown and one an upload tool adds.
VICTORIA = MediaFile(
    page_id=7, title="File:London Victoria station – platform 8 (2019).jpg",
    description="A Southern class 377 train waiting at platform 8 of London Victoria station on a grey "
                "afternoon, seen from the concourse.",
    categories=("Category:London Victoria station", "Category:Southern Class 377",
                "Category:Uploaded with UploadWizard"))


def test_file_name_is_cleaned_as_in_seed_004():
    text = cascade_file_text("File:Red_fox-in_snow_(Vulpes_vulpes).JPG", "", ())
    assert text == "Red fox in snow (Vulpes vulpes)"


def test_maintenance_categories_are_left_out():
    kept = descriptive_categories([
        "Category:Red foxes in Germany", "Category:CC-BY-SA-4.0", "Category:Photographs by John Doe",
        "Category:Files with no machine-readable author", "Category:Uploaded with UploadWizard",
        "Category:Quality images", "Category:Foxes_in_winter", "Category:2024-01-05",
    ])
    assert kept == ["Red foxes in Germany", "Foxes in winter"]


def test_parts_joined_in_order_of_worth_and_empty_ones_dropped():
    media = MediaFile(page_id=1, title="File:IMG_1234.jpg", description="  A fox\n in the   snow. ",
                      categories=("Category:Vulpes vulpes", "Category:Self-published work", "Category:Snow"))
    # The file name, then the categories, then the description (its own full stop dropped).
    assert TEXT_ORDER == ("name", "categories", "description")
    assert media_text(media) == "IMG 1234. Vulpes vulpes; Snow. A fox in the snow"
    assert media_text(media, LEGACY_ORDER) == "IMG 1234. A fox in the snow. Vulpes vulpes; Snow"
    assert media_text(media, ("categories", "name", "description")) == "Vulpes vulpes; Snow. IMG 1234. A fox in the snow"
    assert cascade_file_text("File:X.png", "", ["Category:GFDL"]) == "X"
    assert cascade_file_text("File:X.png", "Seen from above", [], ("description", "categories", "name")) == \
        "Seen from above. X"


def test_an_order_must_name_each_part_once():
    assert check_order(["name", "categories", "description"]) == ("name", "categories", "description")
    for bad in (("name", "name", "description"), ("name", "description"), ("title", "name", "description"), ()):
        with pytest.raises(LinkerError, match="must name each of categories, name, description once"):
            check_order(bad)


def _read(tokenizer, text: str, budget: int) -> str:
    """What the pair model reads of ``text`` cut at ``budget`` tokens, lower case without
    spaces (CLIP's tokenizer splits numbers into digits: "3 7 7")."""
    from wikivel_bot.linker.cascade.linker import short_tokens

    tokens = short_tokens(tokenizer, [text], budget)[0].tolist()
    sot, eot = tokens[0], max(tokens)
    return "".join(tokenizer.decode([t for t in tokens if t not in (0, sot, eot)]).split())


def test_a_real_looking_file_keeps_both_categories_within_the_default_budget():
    pytest.importorskip("torch")
    open_clip = pytest.importorskip("open_clip")
    from wikivel_bot.config import CascadeSettings

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    budget = CascadeSettings().text_tokens
    read = _read(tokenizer, media_text(VICTORIA), budget)
    # The name, then both categories whole (the description gets what is left: here nothing).
    assert read == "londonvictoriastation–platform8(2019).londonvictoriastation;southernclass377.", (budget, read)
    # In the old order, name and description first, the same budget cut both categories.
    legacy = _read(tokenizer, media_text(VICTORIA, LEGACY_ORDER), budget)
    assert legacy.startswith("londonvictoriastation–platform8(2019).asouthernclass377train"), legacy
    assert not legacy.endswith("southernclass377") and "station;southern" not in legacy, legacy


def test_a_checkpoint_keeps_the_order_it_was_trained_with(tmp_path):
    """The order is recorded in a cascade checkpoint; one saved before it was gets the old order."""
    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    import dataclasses

    import torch

    from tests.linker_support import tiny_settings
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint, save_cascade_checkpoint
    from wikivel_bot.linker.cascade.pair import DEFAULT_PAIR_ARGS
    from wikivel_bot.linker.clip import backbone_info

    settings = tiny_settings(name="cascade")
    untrained = create_linker("cascade", settings)
    assert untrained.query_text(VICTORIA) == media_text(VICTORIA)  # no checkpoint: the default order

    def saved(path, **order):
        return save_cascade_checkpoint(
            path, spec=untrained.spec.as_dict(), pair=untrained.pair, pair_args=DEFAULT_PAIR_ARGS,
            backbone=backbone_info(untrained.backbone), labelset_hash="0" * 64, first_stage_linker="zero-shot",
            first_stage=None, candidates=5, text_tokens=24, **order)

    custom = ("description", "name", "categories")
    path = saved(tmp_path / "custom.pt", text_order=custom)
    assert load_cascade_checkpoint(path).text_order == custom
    linker = create_linker("cascade", dataclasses.replace(settings, checkpoint=str(path)))
    assert linker.query_text(VICTORIA) == media_text(VICTORIA, custom)
    # A checkpoint written before the order was recorded: read as it was trained.
    old = torch.load(saved(tmp_path / "new.pt"), weights_only=True)
    assert old.pop("text_order") == list(TEXT_ORDER)
    torch.save(old, tmp_path / "old.pt")
    assert load_cascade_checkpoint(tmp_path / "old.pt").text_order == LEGACY_ORDER
    # A damaged order is refused in one line naming the file.
    old["text_order"] = ["name", "name", "categories"]
    torch.save(old, tmp_path / "bad.pt")
    with pytest.raises(LinkerError, match=r"bad\.pt: file-text order 'name,name,categories' must name"):
        load_cascade_checkpoint(tmp_path / "bad.pt")


def test_short_tokens_keep_an_end_of_text_token():
    pytest.importorskip("open_clip")
    import open_clip

    from wikivel_bot.linker.cascade.linker import short_tokens

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    long_text = " ".join(["fox"] * 60)
    tokens = short_tokens(tokenizer, [long_text, "a fox"], 16)
    assert tokens.shape == (2, 16)
    eot = tokenizer(["a"]).max().item()
    assert tokens[0, -1].item() == eot and tokens[0].argmax().item() == 15  # CLIP pools at the argmax
    full = tokenizer(["a fox"])[0]
    assert tokens[1].tolist() == full[:16].tolist()  # short texts are unchanged


def test_length_groups_pad_each_text_to_its_own_kind():
    from wikivel_bot.linker.backbone.text_tower import length_groups

    lengths = [32, 5, 32, 6, 31, 7, 5, 30, 32, 6]
    groups = length_groups(lengths, slack=8, min_group=4)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # every row once
    assert [sorted(lengths[i] for i in g) for g in groups] == [[5, 5, 6, 6, 7], [30, 31, 32, 32, 32]]
    # Too few short texts for a pass of their own ride with the long ones.
    assert len(length_groups([3, 32, 32, 32, 32], slack=8, min_group=4)) == 1
    assert all(len(g) <= 2 for g in length_groups([4] * 5, max_group=2))
    assert length_groups([]) == []


def test_file_texts_of_mixed_lengths_encode_as_each_alone(monkeypatch):
    """Grouped by length, each file text gets the embedding it gets when encoded on its own."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    from tests.linker_support import tiny_settings
    from wikivel_bot.linker import create_linker
    from wikivel_bot.linker.backbone import text_tower
    from wikivel_bot.linker.cascade import linker as cascade
    from wikivel_bot.linker.cascade.linker import encode_file_texts

    backbone = create_linker("fusion", tiny_settings(precision="fp32")).backbone
    long = "Church of Saint Mary in the snow at night, seen from the market square with lights"
    texts = ["Fox", long, "", "A red church", long + " and a tram", "Tram 7", "Bridge", "Owl", "Tram " + long,
             "Snow. " + long]
    widths = []
    real = text_tower.encode_tokens

    def spy(bb, tokens, model=None):
        widths.append(int(text_tower.token_lengths(tokens).max()))
        return real(bb, tokens, model)

    monkeypatch.setattr(cascade, "encode_tokens", spy)
    grouped, present = encode_file_texts(backbone, texts, 16)
    monkeypatch.undo()
    alone = [encode_file_texts(backbone, [t], 16)[0][0] for t in texts]
    assert present.tolist() == [bool(t) for t in texts]
    assert torch.allclose(grouped, torch.stack(alone), atol=1e-5, rtol=1e-4)
    assert grouped[2].abs().sum() == 0  # no text: zeros
    # The short texts were not padded to the long ones' 16 tokens.
    assert sorted(widths) == [5, 16] and len(widths) == 2
