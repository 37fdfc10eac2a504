"""``wikivel-bot run``: the daemon that keeps up with Commons.

    scheduler.py   APScheduler jobs (poll, fetch+link, write, maintenance), signals, kill switch,
                   heartbeat: the :class:`Daemon`
    parts.py       its stages as callables (``Parts``), built from Settings
    promotions.py  a promoted or rolled-back model links from the next batch, no restart
    outage.py      while the queue database is down: one line a minute, no tracebacks
    stop.py        the bounded stop (within 10 s of SIGTERM)

The room's front door imports nothing; the CLI imports ``daemon.scheduler`` lazily.
"""
