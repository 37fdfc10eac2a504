"""Fixtures for Commons' own evidence (docs/evidence.md): items, statements and files.

The items are part of the bundled fixtures (``make_fixtures`` writes them into
``items.jsonl``); the files are **not** in the bundled upload log, so the poll, fetch and
writer tests keep their inventory. A test that wants them uploads them at run time with
:func:`upload_evidence_files` (``wiki.add_upload`` underneath), on a wiki of its own.

What they exercise:

* category → item, both Commons patterns: the sitelink on the topic item (every fixture item
  links ``Category:<Label>``, e.g. ``Category:Eiffel Tower`` → Q243, ``Category:Paris`` →
  Q90) and a category item with P301 (``Category:Rijksmuseum`` → Q990001, a Wikimedia
  category, P301 → Q190804 Rijksmuseum, which carries P910 back and P373);
* an unlinked category named by an item's P373 (``Category:Westerkerk (Amsterdam)`` →
  Q990007);
* description links: ``[[w:…]]``, ``[[:de:…]]``, ``{{w|…}}``, ``[[d:Q…]]``;
* an identifier template, ``{{Rijksmonument|518452}}`` → Q990006 (P359 = 518452), and one
  whose number two items hold (518453: Westerkerk and Westertoren), which names neither;
* misleading categories: the photographer (``Category:Bob Photographer`` → a person, by
  P373), ``Category:Photographs by Barack Obama`` (a category item whose P301 is Q76, while Q76's
  P910 is ``Category:Barack Obama``: not followed, so no evidence names Obama), an
  event (``Category:2024 Summer Olympics``) and a location (``Category:Paris``);
* items outside the starter label set (Munttoren, Westerkerk, Westertoren, Bob
  Photographer, the 2024 Summer Olympics, Rijksmuseum).

Items with an id from Q990001 up are made up for the fixtures (the category items, the
Amsterdam monuments and the mill De Korenaar); the others carry their real ids and labels.

The bundled uploads carry some evidence of their own (``fixture_files``: a link, a linked
category, an identifier naming De Korenaar), so a newcomer's first run on the offline wiki
shows suggestions made from it; these six files add the harder cases above.
"""
from __future__ import annotations

from typing import Any

from .fixture_items import Row

PROPERTIES: list[tuple[str, str, str, str]] = [
    ('P301', 'wikibase-item', "category's main topic",
     'primary topic of the subject Wikimedia category'),
    ('P910', 'wikibase-item', "topic's main category",
     "main Wikimedia category for this item's topic"),
    ('P359', 'external-id', 'Rijksmonument ID',
     'identifier for a monument assigned by the Rijksdienst voor het Cultureel Erfgoed'),
]

ITEMS: list[Row] = [
    ('Q1656682', 'event', 'temporary and scheduled happening',
     'Ereignis', 'événement', [], ['Q35120'], None),
    ('Q5389', 'Olympic Games', 'major international multi-sport event',
     'Olympische Spiele', 'Jeux olympiques', [], ['Q1656682'], None),
    ('Q995653', '2024 Summer Olympics', 'Games of the XXXIII Olympiad, in Paris',
     'Olympische Sommerspiele 2024', 'Jeux olympiques d\'été de 2024',
     ['Q5389'], [], None),
    ('Q990001', 'Category:Rijksmuseum', 'Wikimedia category', '', '',
     ['Q4167836'], [], None),
    ('Q990002', 'Category:Photographs by Barack Obama', 'Wikimedia category',
     '', '', ['Q4167836'], [], None),
    ('Q990009', 'Category:Barack Obama', 'Wikimedia category', '', '',
     ['Q4167836'], [], None),
    ('Q990003', 'Bob Photographer', 'photographer who uploads to the test wiki',
     '', '', ['Q5'], [], None),
    ('Q990006', 'Munttoren', 'tower in Amsterdam, Netherlands', 'Munttoren',
     'Munttoren', ['Q12518'], [], None),
    ('Q990007', 'Westerkerk', 'church in Amsterdam, Netherlands', 'Westerkerk',
     'Westerkerk', ['Q16970'], [], None),
    ('Q990008', 'Westertoren', 'tower of the Westerkerk in Amsterdam',
     'Westertoren', 'Westertoren', ['Q12518'], [], None),
    # The bundled "Windmill in fields.jpg" carries {{Rijksmonument|990010}}: a made-up mill
    # with a made-up number, so the bundled uploads have an identifier too.
    ('Q990010', 'De Korenaar', 'windmill in the Netherlands', 'De Korenaar', 'De Korenaar',
     ['Q38720'], [], None),
]

# Per item: statements added ({pid: [value]}: an item id or a string) and the Commons
# sitelink ("commons": a title, or None for none) instead of "Category:<Label>".
OVERRIDES: dict[str, dict[str, Any]] = {
    'Q990001': {'claims': {'P301': ['Q190804']}, 'commons': 'Category:Rijksmuseum'},
    'Q190804': {'claims': {'P910': ['Q990001'], 'P373': ['Rijksmuseum']}, 'commons': None},
    # Its P301 names Obama, but Obama's own main category (P910) is Q990009: a file in it
    # is a photo *by* him, and the resolver does not follow it (see _agrees).
    'Q990002': {'claims': {'P301': ['Q76']},
                'commons': 'Category:Photographs by Barack Obama'},
    'Q990009': {'claims': {'P301': ['Q76']}, 'commons': 'Category:Barack Obama'},
    'Q76': {'claims': {'P910': ['Q990009']}, 'commons': None},
    'Q990003': {'claims': {'P373': ['Bob Photographer']}, 'commons': None},
    'Q990006': {'claims': {'P359': ['518452'], 'P17': ['Q55']}, 'commons': None},
    'Q990007': {'claims': {'P359': ['518453'], 'P373': ['Westerkerk (Amsterdam)'],
                           'P17': ['Q55']}, 'commons': None},
    'Q990008': {'claims': {'P359': ['518453'], 'P17': ['Q55']}, 'commons': None},
    'Q990010': {'claims': {'P359': ['990010'], 'P17': ['Q55']}, 'commons': None},
}

# Files uploaded by upload_evidence_files (keys as in fixture_files.FILES; "extra" is
# wikitext put after the {{Information}} block).
FILES: list[dict[str, Any]] = [
    {'name': 'Eiffel_Tower_from_the_Champ_de_Mars.jpg', 'scene': 'tower',
     'desc': {'en': 'The [[w:Eiffel Tower]] seen from the Champ de Mars in {{w|Paris}}.',
              'de': 'Der [[:de:Eiffelturm]] vom Marsfeld aus.'},
     'cats': ['Eiffel Tower', 'Paris']},
    {'name': 'Rijksmuseum_facade.jpg', 'scene': 'museum',
     'desc': {'en': 'Front of the Rijksmuseum, home of '
                    '{{w|The Night Watch|the Night Watch}}.'},
     'cats': ['Rijksmuseum']},
    {'name': 'Munttoren_tower.jpg', 'scene': 'tower',
     'desc': {'en': 'The Munttoren on the Muntplein.'},
     'extra': '{{Rijksmonument|518452}}', 'cats': ['Munttoren']},
    {'name': 'Westerkerk_from_the_canal.jpg', 'scene': 'church',
     'desc': {'en': 'The Westerkerk seen from the Prinsengracht.'},
     'extra': '{{Rijksmonument|518453}}', 'cats': ['Westerkerk (Amsterdam)']},
    {'name': 'Street_scene_by_Bob.jpg', 'scene': 'street', 'user': 'Bob Photographer',
     'desc': {'en': 'A street during the games, [[d:Q995653]].'},
     'cats': ['Bob Photographer', 'Photographs by Barack Obama', '2024 Summer Olympics']},
    {'name': 'Unlinked_category_only.jpg', 'scene': 'dog',
     'desc': {'en': 'A dog, see [[w:en:No such article here]].'},
     'cats': ['Dogs sleeping in baskets']},
]

# What each file's evidence must resolve to: (kind, source, qid).
EXPECTED: dict[str, list[tuple[str, str, str]]] = {
    'Eiffel_Tower_from_the_Champ_de_Mars.jpg': [
        ('category', 'Category:Eiffel Tower', 'Q243'),
        ('category', 'Category:Paris', 'Q90'),
        ('link', '[[w:en:Eiffel Tower]]', 'Q243'),
        ('link', '[[w:en:Paris]]', 'Q90'),
        ('link', '[[w:de:Eiffelturm]]', 'Q243'),
    ],
    'Rijksmuseum_facade.jpg': [
        ('category', 'Category:Rijksmuseum', 'Q190804'),
        ('link', '[[w:en:The Night Watch]]', 'Q219831'),
    ],
    'Munttoren_tower.jpg': [('identifier', '{{Rijksmonument|518452}}', 'Q990006')],
    'Westerkerk_from_the_canal.jpg': [
        ('category', 'Category:Westerkerk (Amsterdam)', 'Q990007')],
    'Street_scene_by_Bob.jpg': [
        ('category', 'Category:Bob Photographer', 'Q990003'),
        ('category', 'Category:2024 Summer Olympics', 'Q995653'),
        ('link', '[[d:Q995653]]', 'Q995653'),
    ],
    'Unlinked_category_only.jpg': [],
}


def wikitext(spec: dict[str, Any]) -> str:
    """The description page of one evidence file (the bundled files' layout)."""
    from .make_fixtures import wikitext as page

    return page(dict(spec, minute=400), '{{self|cc-by-sa-4.0}}')


def upload_evidence_files(wiki: Any) -> dict[str, int]:
    """Upload :data:`FILES` to a running test wiki (and give their categories pages, as
    the loader does); returns {name with underscores: page id}."""
    from .loader import create_category_pages

    out = {}
    for spec in FILES:
        result = wiki.add_upload(spec['name'].replace('_', ' '), wikitext=wikitext(spec),
                                 user=spec.get('user', 'Alice Uploader'), width=800,
                                 height=600)
        out[spec['name']] = result.pageid
    create_category_pages(wiki.store, '2024-05-02T00:00:00Z')
    return out
