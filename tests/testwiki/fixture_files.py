"""The fixture files: one dict per file, in upload order.

Keys: name, scene/kind, size, minute (offset from 2024-05-01T08:00Z; equal
minutes = identical upload timestamps), user, desc {lang: text}, cats
(visible categories), license, hidden (extra hidden categories), depicts
[(QID or 'somevalue', rank)], caption, sdc_extra, protection, prefix (text
before the description, e.g. {{nobots}}), extra (wikitext after the {{Information}}
block, e.g. an identifier template), deleted, overwrite, location, flags.
Page ids (from 10001) and log ids (from 50001) follow list order.

Commons' own evidence (docs/evidence.md) on some of them, so that a newcomer's first
suggestions on the offline wiki say why they were made: a description link to an item
outside the starter label set (the cat's ``[[w:Couch|sofa]]``), a linked category (the
bridge's ``Rhine``), a link to an item of the label set (the village church's
``[[w:Church building|church]]``) and an identifier template (the windmill's
``{{Rijksmonument|990010}}``, a made-up number that ``fixture_evidence`` gives a made-up
mill). The links keep the visible description as it was: the link text reads the same.
"""
from __future__ import annotations

from typing import Any

USERS: list[dict[str, Any]] = [
    {'name': 'Admin', 'userid': 1, 'groups': ['sysop', 'bureaucrat'],
     'registration': '2019-01-01T00:00:00Z'},
    {'name': 'Maintenance script', 'userid': 2, 'groups': ['bot']},
    {'name': 'Alice Uploader', 'userid': 101, 'groups': ['autoconfirmed'],
     'registration': '2021-03-14T09:26:53Z'},
    {'name': 'Bob Photographer', 'userid': 102, 'groups': ['autoconfirmed'],
     'registration': '2022-07-01T12:00:00Z'},
    {'name': 'Carla Archiv', 'userid': 103, 'groups': ['autoconfirmed'],
     'registration': '2020-11-11T11:11:11Z'},
    {'name': 'SDC Helper', 'userid': 104, 'groups': ['autoconfirmed']},
    {'name': 'Concurrent Editor', 'userid': 105, 'groups': ['autoconfirmed']},
    {'name': 'WikivelBot', 'userid': 4242, 'groups': ['bot'],
     'registration': '2024-04-01T00:00:00Z'},
]

# key → (template, hidden categories it adds, licence item for P275)
LICENSES: dict[str, tuple[str, list[str], str]] = {
    'self': ('{{self|cc-by-sa-4.0}}', ['CC-BY-SA-4.0', 'Self-published work'],
             'Q18199165'),
    'ccby': ('{{cc-by-4.0}}', ['CC-BY-4.0'], 'Q20007257'),
    'cc0': ('{{self|cc-zero}}', ['CC-Zero', 'Self-published work'], 'Q6938433'),
    'pd': ('{{PD-old-100-expired}}', ['PD-old-100-expired'], 'Q19652'),
}

_B = {'user': 'Bob Photographer'}
_C = {'user': 'Carla Archiv', 'license': 'pd'}

FILES: list[dict[str, Any]] = [
    {'name': 'Black_cat_on_sofa.jpg', 'scene': 'cat', 'size': (800, 600),
     'minute': 0, 'desc': {'en': 'A black cat resting on a grey [[w:Couch|sofa]].',
                           'de': 'Eine schwarze Katze auf einem grauen Sofa.'},
     'cats': ['Black cats', 'Cats on sofas'], 'depicts': [('Q146', 'normal')],
     'caption': 'Black cat on a sofa', 'sdc_extra': True},
    {'name': 'Dog_in_the_park.jpg', 'scene': 'dog', 'size': (1024, 768),
     'minute': 7, **_B, 'desc': {'en': 'A brown dog standing on the grass of '
                                 'a city park.', 'fr': 'Un chien brun dans un parc.'},
     'cats': ['Dogs in parks'], 'depicts': [('Q144', 'preferred'),
                                            ('Q22698', 'normal')],
     'location': (52.5145, 13.3501)},
    {'name': 'Red_bridge_over_river.jpg', 'scene': 'bridge',
     'size': (1280, 853), 'minute': 14, 'desc': {
         'en': 'A red steel bridge over a wide river.',
         'de': 'Eine rote Stahlbrücke über einen breiten Fluss.'},
     'cats': ['Bridges', 'Rivers', 'Rhine'], 'depicts': [('Q12280', 'preferred'),
                                                ('Q4022', 'normal')]},
    {'name': 'Village_church.png', 'scene': 'church', 'size': (600, 800),
     'minute': 21, **_C, 'desc': {'de': 'Dorfkirche mit Turm im Sommer.',
                                  'en': 'Village [[w:Church building|church]] with a tower.'},
     'cats': ['Churches in Germany']},
    {'name': 'Mallard_on_pond.jpg', 'scene': 'duck', 'size': (640, 427),
     'minute': 28, 'desc': {'en': 'Male mallard swimming on a pond.'},
     'cats': ['Anas platyrhynchos (males)'], 'depicts': [('Q25348', 'normal')]},
    {'name': 'Sunflower_field.jpg', 'scene': 'sunflower', 'size': (900, 600),
     'minute': 35, **_B, 'desc': {'en': 'A field of sunflowers in July.',
                                  'fr': 'Un champ de tournesols en juillet.'},
     'cats': ['Helianthus annuus', 'Fields of sunflowers'],
     'depicts': [('Q171497', 'normal')]},
    {'name': 'Red_apple.png', 'scene': 'apple', 'size': (300, 300),
     'minute': 42, 'license': 'cc0', 'desc': {'en': 'A single red apple.'},
     'cats': ['Red apples'], 'depicts': [('Q89', 'normal')]},
    {'name': 'Snowy_mountain_peak.jpg', 'scene': 'mountain',
     'size': (1600, 1067), 'minute': 49, **_B,
     'desc': {'en': 'Snow-covered mountain peak above a green valley.',
              'de': 'Schneebedeckter Berggipfel über einem grünen Tal.'},
     'cats': ['Mountains of the Alps'], 'location': (45.8326, 6.8652)},
    {'name': 'Castle_on_a_hill.jpg', 'scene': 'castle', 'size': (1200, 800),
     'minute': 56, **_C, 'desc': {'de': 'Burg auf einem Hügel.',
                                  'en': 'Castle on a hill.'},
     'cats': ['Castles in Germany'], 'depicts': [('Q23413', 'normal')]},
    {'name': 'Lighthouse_at_dusk.jpg', 'scene': 'lighthouse',
     'size': (600, 900), 'minute': 63, 'desc': {
         'en': 'Red and white lighthouse at dusk.'},
     'cats': ['Lighthouses', 'Dusk']},
    {'name': 'Red_car_on_street.jpg', 'scene': 'car', 'size': (1024, 683),
     'minute': 70, **_B, 'desc': {'en': 'A red car parked on a street.'},
     'cats': ['Red automobiles'], 'depicts': [('Q1420', 'preferred'),
                                              ('Q79007', 'normal')]},
    {'name': 'Sailing_boat_at_sea.jpg', 'scene': 'boat', 'size': (800, 533),
     'minute': 77, 'license': 'ccby', 'desc': {
         'en': 'A small sailing boat on the open sea.',
         'es': 'Un pequeño velero en alta mar.'},
     'cats': ['Sailboats']},
    {'name': 'Landscape_painting_study.jpg', 'scene': 'painting',
     'size': (700, 500), 'minute': 84, **_C, 'desc': {
         'en': 'Study of a landscape, oil on canvas, 19th century.',
         'de': 'Landschaftsstudie, Öl auf Leinwand, 19. Jahrhundert.'},
     'cats': ['Landscape paintings in Germany'],
     'depicts': [('Q107425', 'normal')]},
    {'name': 'Bicycle_icon.png', 'size': (128, 128), 'minute': 91,
     'license': 'cc0', 'desc': {'en': 'Simple bicycle icon.'},
     'cats': ['Bicycle icons']},
    {'name': 'Small_red_circle.png', 'size': (48, 48), 'minute': 98,
     'license': 'cc0', 'desc': {'en': 'Small red circle.'},
     'cats': ['Red circles']},
    {'name': 'Tiny_blue_square.png', 'size': (16, 16), 'minute': 105,
     'license': 'cc0', 'desc': {'en': 'Tiny blue square.'},
     'cats': ['Blue squares']},
    {'name': 'Sunset_thumbnail_sized.jpg', 'size': (150, 100), 'minute': 112,
     **_B, 'desc': {'en': 'Sunset over the sea (small version).'},
     'cats': ['Sunsets']},
    {'name': 'Animated_traffic_light.gif', 'kind': 'gif', 'size': (120, 240),
     'minute': 119, 'license': 'cc0', 'desc': {
         'en': 'Animated traffic light cycling red, yellow, green.'},
     'cats': ['Animated traffic lights']},
    {'name': 'Green_leaf.webp', 'size': (400, 300), 'minute': 126,
     'desc': {'en': 'A green leaf on a white background.'},
     'cats': ['Leaves']},
    {'name': 'Scanned_city_map.tif', 'size': (500, 400), 'minute': 133, **_C,
     'desc': {'en': 'Scanned historical city map.',
              'de': 'Gescannter historischer Stadtplan.'},
     'cats': ['Historical maps of cities']},
    {'name': 'Truncated_upload.jpg', 'kind': 'truncated', 'size': (800, 600),
     'minute': 140, 'desc': {'en': 'A photo whose upload was interrupted.'},
     'cats': ['Cats'], 'flags': ['truncated']},
    {'name': 'Decompression_bomb.png', 'kind': 'bomb', 'minute': 147,
     'license': 'cc0', 'desc': {'en': 'A PNG that claims enormous dimensions.'},
     'cats': ['Test images'], 'flags': ['decompression-bomb']},
    {'name': 'Wikivel_logo.svg', 'kind': 'svg', 'size': (200, 200),
     'minute': 154, 'license': 'cc0', 'desc': {'en': 'Logo of the Wikivel '
                                                      'project.'},
     'cats': ['SVG logos']},
    {'name': 'Annual_report_2023.pdf', 'kind': 'pdf', 'minute': 161, **_C,
     'license': 'ccby', 'desc': {'en': 'Annual report 2023 (PDF).',
                                 'de': 'Jahresbericht 2023 (PDF).'},
     'cats': ['Annual reports']},
    {'name': 'Bird_in_flight.webm', 'kind': 'video', 'minute': 168, **_B,
     'desc': {'en': 'Short video of a bird in flight.'},
     'cats': ['Videos of birds in flight']},
    {'name': 'Protected_logo.png', 'size': (256, 256), 'minute': 175,
     'license': 'cc0', 'desc': {'en': 'Logo used on the Main Page; '
                                      'protected.'},
     'cats': ['Logos'], 'protection': [
         {'type': 'edit', 'level': 'sysop', 'expiry': 'infinity'},
         {'type': 'move', 'level': 'sysop', 'expiry': 'infinity'},
         {'type': 'upload', 'level': 'sysop', 'expiry': 'infinity'}],
     'flags': ['protected']},
    {'name': 'Nobots_example.jpg', 'scene': 'cat', 'size': (640, 480),
     'minute': 182, 'prefix': '{{nobots}}', 'desc': {
         'en': 'A cat photo whose uploader does not want bot edits.'},
     'cats': ['Cats'], 'flags': ['nobots']},
    {'name': 'Bots_deny_wikivel.jpg', 'scene': 'dog', 'size': (640, 480),
     'minute': 189, 'prefix': '{{bots|deny=WikivelBot}}', 'desc': {
         'en': 'A dog photo that denies WikivelBot.'},
     'cats': ['Dogs'], 'flags': ['bots-deny']},
    {'name': 'Deleted_after_upload.jpg', 'size': (640, 480), 'minute': 196,
     'deleted': True, 'desc': {'en': 'A copyright violation, deleted.'},
     'cats': ['Cats'], 'flags': ['deleted']},
    # An UploadWizard batch: five files with one identical timestamp.
    {'name': 'Fruit_stall_at_market.jpg', 'scene': 'apple', 'size': (800, 600),
     'minute': 240, 'desc': {'en': 'Fruit stall at the weekly market.'},
     'cats': ['Market stalls'], 'flags': ['batch']},
    {'name': 'Bread_at_bakery_stall.jpg', 'size': (800, 600), 'minute': 240,
     'desc': {'en': 'Bread loaves at a bakery stall.'},
     'cats': ['Bread'], 'flags': ['batch']},
    {'name': 'Tram_in_the_old_town.jpg', 'size': (800, 600), 'minute': 240,
     'desc': {'en': 'A tram passing through the old town.'},
     'cats': ['Trams'], 'depicts': [('Q5639', 'normal')], 'flags': ['batch']},
    {'name': 'Fountain_on_market_square.jpg', 'size': (800, 600),
     'minute': 240, 'desc': {'en': 'Fountain on the market square.'},
     'cats': ['Fountains'], 'flags': ['batch']},
    {'name': 'Street_musician_with_cat.jpg', 'scene': 'cat', 'size': (800, 600),
     'minute': 240, 'desc': {'en': 'Street musician with a cat.'},
     'cats': ['Street musicians'], 'flags': ['batch']},
    # Two uploaders at the same second.
    {'name': 'Cathedral_facade.jpg', 'scene': 'church', 'size': (700, 1000),
     'minute': 250, **_B, 'desc': {'en': 'Facade of a gothic cathedral.'},
     'cats': ['Gothic cathedrals'], 'depicts': [('Q2977', 'normal')]},
    {'name': 'Windmill_in_fields.jpg', 'size': (900, 600), 'minute': 250, **_C,
     'desc': {'nl': 'Molen tussen de velden.', 'en': 'Windmill among fields.'},
     'extra': '{{Rijksmonument|990010}}', 'cats': ['Windmills']},
    {'name': 'Horse_in_meadow.jpg', 'scene': 'horse', 'size': (1000, 667),
     'minute': 260, **_B, 'desc': {'en': 'A dark horse grazing in a meadow.'},
     'cats': ['Horses'], 'depicts': [('Q726', 'preferred')], 'sdc_extra': True},
    {'name': 'Cows_grazing.jpg', 'scene': 'horse', 'size': (1000, 667),
     'minute': 267, 'desc': {'en': 'Cattle grazing on a hillside.'},
     'cats': ['Cattle'], 'depicts': [('Q830', 'normal'), ('Q726', 'deprecated')]},
    {'name': 'Overwritten_photo.jpg', 'size': (640, 480), 'minute': 274,
     'desc': {'en': 'A photo that was later replaced by a cropped version.'},
     'cats': ['Cats'], 'overwrite': True, 'flags': ['overwritten']},
    {'name': 'Cat_and_dog_together.jpg', 'scene': 'dog', 'size': (900, 600),
     'minute': 281, 'desc': {'en': 'A cat and a dog lying together.'},
     'cats': ['Cats and dogs'], 'depicts': [('Q146', 'normal'),
                                            ('Q144', 'normal'),
                                            ('Q729', 'normal')]},
    {'name': 'Eiffel_Tower_at_night.jpg', 'size': (683, 1024), 'minute': 288,
     **_B, 'desc': {'en': 'The Eiffel Tower illuminated at night.',
                    'fr': 'La tour Eiffel illuminée la nuit.'},
     'cats': ['Eiffel Tower at night'], 'depicts': [('Q243', 'preferred')],
     'sdc_extra': True, 'location': (48.8584, 2.2945)},
    {'name': 'Portrait_of_a_scientist.jpg', 'size': (600, 800), 'minute': 295,
     **_C, 'desc': {'en': 'Portrait photograph of a scientist, about 1920.'},
     'cats': ['Portrait photographs'], 'depicts': [('Q5', 'normal')]},
    {'name': 'Pizza_margherita.jpg', 'size': (800, 800), 'minute': 302,
     'desc': {'en': 'Pizza margherita on a wooden board.',
              'it': 'Pizza margherita su un tagliere di legno.'},
     'cats': ['Pizza margherita']},
    {'name': 'Unknown_bird_species.jpg', 'scene': 'duck', 'size': (640, 480),
     'minute': 309, **_B, 'desc': {'en': 'A bird I could not identify.'},
     'cats': ['Unidentified birds'], 'depicts': [('somevalue', 'normal')]},
    {'name': 'Owl_on_branch.jpg', 'size': (640, 800), 'minute': 316,
     'desc': {'en': 'Tawny owl sitting on a branch.'},
     'cats': ['Strix aluco'], 'depicts': [('Q25756', 'normal')]},
    {'name': 'Lake_in_the_mountains.jpg', 'scene': 'mountain',
     'size': (1200, 800), 'minute': 323, **_C,
     'desc': {'en': 'A lake surrounded by mountains.',
              'de': 'Ein See, umgeben von Bergen.'},
     'cats': ['Lakes of the Alps']},
]
