"""``python -m wikivel_bot`` is the same as the ``wikivel-bot`` command."""

from wikivel_bot.cli import run

if __name__ == "__main__":
    run()
