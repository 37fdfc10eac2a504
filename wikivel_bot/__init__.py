"""wikivel-bot: proposes Wikidata items a Commons file depicts and writes approved ones."""

__version__ = "0.1.0"
