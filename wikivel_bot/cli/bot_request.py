"""``wikivel-bot config bot-request``: the Commons:Bots/Requests text from the configuration."""

from __future__ import annotations

import click

from wikivel_bot.cli.context import CliContext


@click.command("bot-request")
@click.pass_obj
def bot_request(obj: CliContext) -> None:
    """Print the request for the bot flag at Commons:Bots/Requests (wikitext), filled in from
    the settings and pywikibot's user-config.py: operator, task, edit rate (put_throttle and
    write.batch_size per daemon.link_interval_s), maxlag, the stop page, an example edit
    summary and how a batch is undone. A placeholder still in the text (no bot account, no
    operator, no stop page) gets a warning on stderr naming the setting to fill in. Review
    it, then paste it into the request (docs/deploy.md, "Bot approval on Commons")."""
    from wikivel_bot.commons.bot_request import placeholders, pywikibot_limits, request_text

    limits = pywikibot_limits()
    click.echo(request_text(obj.settings, limits), nl=False)
    # After the text, on stderr: the text on stdout stays exactly what is to be pasted.
    for line in placeholders(obj.settings, limits):
        click.echo(f"warning: {line}", err=True)
