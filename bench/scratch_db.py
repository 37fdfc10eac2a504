"""A fresh queue database for one benchmark run, on any backend; the benchmarks share it.

    from bench.scratch_db import Scratch      # scripts put the repository root on sys.path

SQLite: a file in ``workdir``. PostgreSQL / MariaDB: a database of its own on the server
named by ``WIKIVEL_TEST_POSTGRES_URL`` / ``WIKIVEL_TEST_MYSQL_URL`` (defaults: the local
services), created here and dropped by :meth:`Scratch.drop`, so runs never see each other's
rows or a developer's.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

SERVER_URLS = {
    "postgresql": os.environ.get("WIKIVEL_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
    "mysql": os.environ.get("WIKIVEL_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test"),
}


class Scratch:
    """A fresh database: a temp SQLite file or a scratch database on a server.

    :param backend: ``sqlite``, ``postgresql`` or ``mysql``.
    :param workdir: where a SQLite file goes.
    :param prefix: the start of the file's or database's name (says which benchmark left it).
    """

    def __init__(self, backend: str, workdir: Path, prefix: str = "bench") -> None:
        self.backend, self.admin, self.name = backend, None, ""
        if backend == "sqlite":
            self.path = workdir / f"{prefix}-{uuid.uuid4().hex[:8]}.sqlite"
            self.url = f"sqlite:///{self.path}"
            return
        if backend not in SERVER_URLS:
            raise SystemExit(f"unknown backend {backend!r} (use sqlite, {', '.join(SERVER_URLS)})")
        admin_url = make_url(SERVER_URLS[backend])
        self.name = f"wikivel_{prefix}_{uuid.uuid4().hex[:8]}"
        self.admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {self.name}"))
        self.url = admin_url.set(database=self.name).render_as_string(hide_password=False)

    def drop(self) -> None:
        if self.admin is None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return
        with self.admin.connect() as conn:
            force = " WITH (FORCE)" if self.backend == "postgresql" else ""
            conn.execute(text(f"DROP DATABASE IF EXISTS {self.name}{force}"))
        self.admin.dispose()
