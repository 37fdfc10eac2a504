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
    summary and how a batch is undone. Review it, then paste it into the request
    (docs/deploy.md, "Bot approval on Commons")."""
    from wikivel_bot.commons.bot_request import pywikibot_limits, request_text

    click.echo(request_text(obj.settings, pywikibot_limits()), nl=False)
