"""Wikidata items and properties the fixtures ship (real QIDs and labels).

Each row: (QID, English label, English description, German label, French
label, P31 targets, P279 targets, P18 file name or None).  The class graph is
a trimmed copy of Wikidata's: links point only at items in this table so
hierarchy walks stay inside the fixtures.  ``make_fixtures.py`` turns the rows
into exact Wikibase entity JSON (``items.jsonl``).
"""
from __future__ import annotations

Row = tuple[str, str, str, str, str, list[str], list[str], 'str | None']

PROPERTIES: list[tuple[str, str, str, str]] = [
    # (PID, datatype, label, description)
    ('P31', 'wikibase-item', 'instance of',
     'that class of which this subject is a particular example and member'),
    ('P279', 'wikibase-item', 'subclass of',
     'this item is a subclass of that item'),
    ('P180', 'wikibase-item', 'depicts',
     'entity visually depicted in an image, literarily described in a work, '
     'or otherwise incorporated into an audiovisual or other medium'),
    ('P18', 'commonsMedia', 'image', 'image of relevant illustration of the '
     'subject'),
    ('P171', 'wikibase-item', 'parent taxon',
     'closest parent taxon of the taxon in question'),
    ('P373', 'string', 'Commons category',
     'name of the Wikimedia Commons category containing files related to '
     'this item'),
    ('P17', 'wikibase-item', 'country', 'sovereign state that this item is in'),
    ('P131', 'wikibase-item', 'located in the administrative territorial entity',
     'the item is located on the territory of the following administrative '
     'entity'),
    ('P170', 'wikibase-item', 'creator',
     'maker of this creative work or other object'),
    ('P571', 'time', 'inception', 'time when an entity begins to exist'),
    ('P625', 'globe-coordinate', 'coordinate location',
     'geocoordinates of the subject'),
    ('P6243', 'wikibase-item', 'digital representation of',
     'faithful digitisation of a work'),
    ('P275', 'wikibase-item', 'copyright license',
     'license under which this copyrighted work is released'),
    ('P7482', 'wikibase-item', 'source of file',
     'broad nature of the origin of the file'),
    ('P1163', 'string', 'media type', 'IANA-registered identifier for a file '
     'type'),
    ('P2048', 'quantity', 'height', 'vertical length of an entity'),
]

ITEMS: list[Row] = [
    # --- top of the class tree ---------------------------------------------
    ('Q35120', 'entity', 'anything that can be considered, discussed, or observed',
     'Entität', 'entité', [], [], None),
    ('Q488383', 'object', 'anything that may be observed or examined',
     'Objekt', 'objet', [], ['Q35120'], None),
    ('Q223557', 'physical object', 'singular aggregation of substance(s) such '
     'as matter or radiation, with overall properties such as mass, position '
     'or momentum', 'physisches Objekt', 'objet physique', [], ['Q488383'], None),
    ('Q7239', 'organism', 'individual living system, such as an animal, plant, '
     'fungus or micro-organism', 'Lebewesen', 'organisme', [], ['Q223557'], None),
    ('Q16521', 'taxon', 'group of one or more organism(s), which a taxonomist '
     'adjudges to be a unit', 'Taxon', 'taxon', [], ['Q35120'], None),
    ('Q729', 'animal', 'kingdom of multicellular eukaryotic organisms',
     'Tiere', 'animal', ['Q16521'], ['Q7239'], None),
    ('Q756', 'plant', 'multicellular eukaryote of the kingdom Plantae',
     'Pflanze', 'plante', ['Q16521'], ['Q7239'], None),
    ('Q55983715', 'organisms known by a particular common name',
     'grouping of organisms by a common name', 'Organismen mit einem '
     'Trivialnamen', 'organismes désignés par un même nom vernaculaire',
     [], ['Q7239'], None),
    ('Q7377', 'mammal', 'class of vertebrates', 'Säugetiere', 'mammifère',
     ['Q16521'], ['Q729'], None),
    ('Q5113', 'bird', 'class of tetrapods', 'Vögel', 'oiseau', ['Q16521'],
     ['Q729'], None),
    ('Q152', 'fish', 'vertebrate animal that lives in water and (typically) '
     'breathes with gills', 'Fische', 'poisson', ['Q55983715'], ['Q729'], None),
    ('Q10811', 'reptile', 'class of animals', 'Reptilien', 'reptile',
     ['Q16521'], ['Q729'], None),
    ('Q10908', 'amphibian', 'class of vertebrates', 'Amphibien', 'amphibien',
     ['Q16521'], ['Q729'], None),
    ('Q1390', 'insect', 'class of arthropods', 'Insekten', 'insecte',
     ['Q16521'], ['Q729'], None),
    ('Q39201', 'pet', 'animal kept for companionship', 'Haustier',
     'animal de compagnie', [], ['Q729'], None),
    ('Q57814795', 'domesticated animal', 'animal that has been domesticated '
     'by humans', 'domestiziertes Tier', 'animal domestique', [], ['Q729'], None),
    # --- animals ---------------------------------------------------------------
    ('Q146', 'house cat', 'domesticated feline', 'Hauskatze',
     'chat domestique', ['Q55983715'], ['Q39201', 'Q57814795', 'Q7377'],
     'Black_cat_on_sofa.jpg'),
    ('Q144', 'dog', 'domestic animal', 'Haushund', 'chien', ['Q55983715'],
     ['Q39201', 'Q57814795', 'Q7377'], 'Dog_in_the_park.jpg'),
    ('Q726', 'horse', 'domesticated four-footed mammal from the equine family',
     'Hauspferd', 'cheval', ['Q55983715'], ['Q57814795', 'Q7377'], None),
    ('Q830', 'cattle', 'large domesticated ungulate', 'Hausrind',
     'bovin domestique', ['Q55983715'], ['Q57814795', 'Q7377'], None),
    ('Q7368', 'sheep', 'domesticated ruminant bred for meat, wool, and milk',
     'Hausschaf', 'mouton', ['Q55983715'], ['Q57814795', 'Q7377'], None),
    ('Q2934', 'goat', 'domesticated mammal raised for milk and meat',
     'Hausziege', 'chèvre', ['Q55983715'], ['Q57814795', 'Q7377'], None),
    ('Q787', 'pig', 'domesticated omnivorous even-toed hoofed mammal',
     'Hausschwein', 'cochon', ['Q55983715'], ['Q57814795', 'Q7377'], None),
    ('Q780', 'chicken', 'domesticated bird', 'Haushuhn', 'poulet',
     ['Q55983715'], ['Q57814795', 'Q5113'], None),
    ('Q140', 'lion', 'species of big cat', 'Löwe', 'lion', ['Q16521'],
     ['Q7377'], None),
    ('Q19939', 'tiger', 'species of big cat', 'Tiger', 'tigre', ['Q16521'],
     ['Q7377'], None),
    ('Q7378', 'elephant', 'large terrestrial mammals with trunks',
     'Elefanten', 'éléphant', ['Q55983715'], ['Q7377'], None),
    ('Q18498', 'wolf', 'species of mammal', 'Wolf', 'loup gris', ['Q16521'],
     ['Q7377'], None),
    ('Q3736439', 'duck', 'common name for many species in the bird family '
     'Anatidae', 'Ente', 'canard', ['Q55983715'], ['Q5113'], None),
    ('Q25348', 'mallard', 'species of bird', 'Stockente', 'canard colvert',
     ['Q16521'], ['Q3736439'], 'Mallard_on_pond.jpg'),
    ('Q25334', 'European robin', 'species of bird', 'Rotkehlchen',
     'rougegorge familier', ['Q16521'], ['Q5113'], None),
    ('Q14683', 'house sparrow', 'species of bird', 'Haussperling',
     'moineau domestique', ['Q16521'], ['Q5113'], None),
    ('Q25307', 'Eurasian magpie', 'species of bird', 'Elster', 'pie bavarde',
     ['Q16521'], ['Q5113'], None),
    ('Q25756', 'tawny owl', 'species of bird', 'Waldkauz', 'chouette hulotte',
     ['Q16521'], ['Q5113'], None),
    ('Q25404', 'Eurasian blue tit', 'species of bird', 'Blaumeise',
     'mésange bleue', ['Q16521'], ['Q5113'], None),
    ('Q25485', 'great tit', 'species of bird', 'Kohlmeise',
     'mésange charbonnière', ['Q16521'], ['Q5113'], None),
    ('Q26209', 'great spotted woodpecker', 'species of bird', 'Buntspecht',
     'pic épeiche', ['Q16521'], ['Q5113'], None),
    ('Q25385', 'common buzzard', 'species of bird', 'Mäusebussard',
     'buse variable', ['Q16521'], ['Q5113'], None),
    ('Q9147', 'penguin', 'family of birds', 'Pinguine', 'manchot',
     ['Q16521'], ['Q5113'], None),
    # --- plants ------------------------------------------------------------------
    ('Q10884', 'tree', 'perennial woody plant', 'Baum', 'arbre',
     [], ['Q756'], None),
    ('Q506', 'flower', 'reproductive structure in flowering plants', 'Blüte',
     'fleur', [], ['Q223557'], None),
    ('Q171497', 'common sunflower', 'species of plant', 'Sonnenblume',
     'tournesol', ['Q16521'], ['Q756'], 'Sunflower_field.jpg'),
    ('Q1364', 'fruit', 'seed-bearing part of a flowering plant', 'Frucht',
     'fruit', [], ['Q223557'], None),
    ('Q11004', 'vegetable', 'edible plant or part of a plant', 'Gemüse',
     'légume', [], ['Q2095'], None),
    ('Q89', 'apple', 'fruit of the apple tree', 'Apfel', 'pomme', [],
     ['Q1364'], 'Red_apple.png'),
    ('Q503', 'banana', 'elongated, edible fruit', 'Banane', 'banane', [],
     ['Q1364'], None),
    # --- people ------------------------------------------------------------------
    ('Q215627', 'person', 'being that has certain capacities or attributes '
     'constituting personhood', 'Person', 'personne', [], ['Q35120'], None),
    ('Q5', 'human', 'any member of Homo sapiens, unique extant species of the '
     'genus Homo', 'Mensch', 'être humain', ['Q55983715'],
     ['Q215627', 'Q7377'], None),
]

# People (all P31 human): (QID, label, description, de, fr)
PEOPLE: list[tuple[str, str, str, str, str]] = [
    ('Q42', 'Douglas Adams', 'English writer and humorist (1952–2001)',
     'Douglas Adams', 'Douglas Adams'),
    ('Q762', 'Leonardo da Vinci', 'Italian Renaissance polymath (1452–1519)',
     'Leonardo da Vinci', 'Léonard de Vinci'),
    ('Q5582', 'Vincent van Gogh', 'Dutch post-impressionist painter '
     '(1853–1890)', 'Vincent van Gogh', 'Vincent van Gogh'),
    ('Q5598', 'Rembrandt', 'Dutch painter and printmaker (1606–1669)',
     'Rembrandt van Rijn', 'Rembrandt'),
    ('Q296', 'Claude Monet', 'French impressionist painter (1840–1926)',
     'Claude Monet', 'Claude Monet'),
    ('Q5592', 'Michelangelo', 'Italian Renaissance sculptor, painter and '
     'architect (1475–1564)', 'Michelangelo', 'Michel-Ange'),
    ('Q41264', 'Johannes Vermeer', 'Dutch painter (1632–1675)',
     'Jan Vermeer', 'Johannes Vermeer'),
    ('Q5432', 'Francisco Goya', 'Spanish painter and printmaker (1746–1828)',
     'Francisco de Goya', 'Francisco de Goya'),
    ('Q5593', 'Pablo Picasso', 'Spanish painter and sculptor (1881–1973)',
     'Pablo Picasso', 'Pablo Picasso'),
    ('Q41406', 'Edvard Munch', 'Norwegian painter (1863–1944)',
     'Edvard Munch', 'Edvard Munch'),
    ('Q5669', 'Sandro Botticelli', 'Italian painter (1445–1510)',
     'Sandro Botticelli', 'Sandro Botticelli'),
    ('Q937', 'Albert Einstein', 'German-born theoretical physicist '
     '(1879–1955)', 'Albert Einstein', 'Albert Einstein'),
    ('Q1035', 'Charles Darwin', 'English naturalist and biologist (1809–1882)',
     'Charles Darwin', 'Charles Darwin'),
    ('Q7186', 'Marie Curie', 'Polish-French physicist and chemist '
     '(1867–1934)', 'Marie Curie', 'Marie Curie'),
    ('Q692', 'William Shakespeare', 'English playwright and poet (1564–1616)',
     'William Shakespeare', 'William Shakespeare'),
    ('Q255', 'Ludwig van Beethoven', 'German composer (1770–1827)',
     'Ludwig van Beethoven', 'Ludwig van Beethoven'),
    ('Q254', 'Wolfgang Amadeus Mozart', 'Austrian composer (1756–1791)',
     'Wolfgang Amadeus Mozart', 'Wolfgang Amadeus Mozart'),
    ('Q1339', 'Johann Sebastian Bach', 'German composer (1685–1750)',
     'Johann Sebastian Bach', 'Jean-Sébastien Bach'),
    ('Q7259', 'Ada Lovelace', 'English mathematician, considered the first '
     'computer programmer (1815–1852)', 'Ada Lovelace', 'Ada Lovelace'),
    ('Q7251', 'Alan Turing', 'English computer scientist (1912–1954)',
     'Alan Turing', 'Alan Turing'),
    ('Q8016', 'Winston Churchill', 'Prime Minister of the United Kingdom '
     '(1874–1965)', 'Winston Churchill', 'Winston Churchill'),
    ('Q9439', 'Queen Victoria', 'Queen of the United Kingdom (1837–1901)',
     'Victoria', 'Victoria'),
    ('Q91', 'Abraham Lincoln', 'president of the United States from 1861 to '
     '1865', 'Abraham Lincoln', 'Abraham Lincoln'),
    ('Q23', 'George Washington', 'Founding Father and first president of the '
     'United States (1732–1799)', 'George Washington', 'George Washington'),
    ('Q76', 'Barack Obama', 'president of the United States from 2009 to 2017',
     'Barack Obama', 'Barack Obama'),
    ('Q1048', 'Julius Caesar', 'Roman general and dictator (100–44 BC)',
     'Gaius Iulius Caesar', 'Jules César'),
    ('Q517', 'Napoleon', 'French military leader and emperor (1769–1821)',
     'Napoleon Bonaparte', 'Napoléon Ier'),
    ('Q8023', 'Nelson Mandela', 'President of South Africa from 1994 to 1999',
     'Nelson Mandela', 'Nelson Mandela'),
    ('Q1001', 'Mahatma Gandhi', 'Indian independence activist (1869–1948)',
     'Mahatma Gandhi', 'Mahatma Gandhi'),
    ('Q8409', 'Alexander the Great', 'king of Macedon (356–323 BC)',
     'Alexander der Große', 'Alexandre le Grand'),
    ('Q935', 'Isaac Newton', 'English mathematician and physicist (1642–1727)',
     'Isaac Newton', 'Isaac Newton'),
    ('Q307', 'Galileo Galilei', 'Italian astronomer and physicist '
     '(1564–1642)', 'Galileo Galilei', 'Galilée'),
    ('Q868', 'Aristotle', 'Classical Greek philosopher (384–322 BC)',
     'Aristoteles', 'Aristote'),
    ('Q913', 'Socrates', 'classical Greek philosopher (c. 470–399 BC)',
     'Sokrates', 'Socrate'),
    ('Q859', 'Plato', 'Classical Greek philosopher (428/427–348/347 BC)',
     'Platon', 'Platon'),
    ('Q9682', 'Elizabeth II', 'Queen of the United Kingdom from 1952 to 2022',
     'Elisabeth II.', 'Élisabeth II'),
    ('Q5879', 'Johann Wolfgang von Goethe', 'German writer (1749–1832)',
     'Johann Wolfgang von Goethe', 'Johann Wolfgang von Goethe'),
]
