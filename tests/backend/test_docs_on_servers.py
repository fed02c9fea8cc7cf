"""The documentation's examples that need a server, run against this run's servers.

The docs runner (``tests/test_docs.py``) runs every example on SQLite and leaves a
block marked ``<!-- not-run: ... -->`` alone; a block whose reason says it names
servers is run here instead, its URLs pointed at this run's PostgreSQL and
MariaDB databases, and what it promises is checked on a live connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests._markdown import code_blocks

pytestmark = pytest.mark.backend

DOCS = Path(__file__).parent.parent.parent / "docs"


def _server_blocks(page: str) -> list[str]:
    return [
        b.code
        for b in code_blocks(DOCS / page)
        if b.lang == "python" and (b.not_run or "").startswith("the engines name")
    ]


def test_every_server_example_is_run_here() -> None:
    pages = {
        b.page.name
        for page in DOCS.rglob("*.md")
        for b in code_blocks(page)
        if b.lang == "python" and (b.not_run or "").startswith("the engines name")
    }
    assert pages == {"production.md"}, "a new server example needs its test here"
    assert len(_server_blocks("production.md")) == 1


def test_the_lease_engines_timeouts_apply(engines: Any) -> None:
    """production.md's lease engines: each connection waits 5 s for a lock, at most."""
    (code,) = _server_blocks("production.md")
    postgresql = engines.get("postgresql").url.render_as_string(hide_password=False)
    mariadb = engines.get("mysql").url.render_as_string(hide_password=False)
    code = code.replace("postgresql+psycopg://app@db.internal/app", postgresql)
    code = code.replace("mysql+pymysql://app@db.internal/app", mariadb)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/production.md", "exec"), namespace)
    pg, maria = namespace["pg_lease_engine"], namespace["mariadb_lease_engine"]
    try:
        with pg.connect() as conn:
            assert conn.scalar(sa.text("SHOW lock_timeout")) == "5s"
        with maria.connect() as conn:
            assert conn.scalar(sa.text("SELECT @@SESSION.innodb_lock_wait_timeout")) == 5
    finally:
        pg.dispose()
        maria.dispose()
