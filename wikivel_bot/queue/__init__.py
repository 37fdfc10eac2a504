"""The review queue: SQLAlchemy tables, migrations and the store (the only SQL in the code)."""
