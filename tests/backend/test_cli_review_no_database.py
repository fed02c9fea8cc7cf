"""A MySQL/MariaDB URL that names no database (``mysql+pymysql://root@host:3306/``).

SQLAlchemy's MySQL dialect cannot look up a table without a schema there
(``has_table`` asserts ``schema is not None``: the dialect's
``default_schema_name``, read when the engine first connects, is None).
``seqkeys doctor``, ``demo`` and ``resync`` refuse such a ``--url`` with exit 2
and a message that says to add a database, never a traceback; ``doctor()``,
``doctor_async()`` and ``demo.run()`` raise :class:`SeqKeysError`. A database given
another way (a query argument) is used; a PostgreSQL URL that names its database is
never refused for an empty ``search_path``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import TableSequence, demo, sequences_table
from sqlalchemy_seqkeys.doctor import doctor, doctor_async
from sqlalchemy_seqkeys.errors import SeqKeysError

pytestmark = pytest.mark.backend

MODELS = """\
import sqlalchemy as sa
from sqlalchemy_seqkeys import TableSequence, sequences_table

metadata = sa.MetaData()
sequences_table(metadata)
invoice_no = TableSequence("invoice_no", mode="batch", metadata=metadata)
sa.Table("invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=invoice_no))
"""

COMMANDS = {
    "doctor": ["--models", "nodb_models:metadata"],
    "resync": ["--sequence", "invoice_no", "--table", "invoices", "--column", "id"],
    "demo": ["--rows", "1"],
}


def _metadata() -> sa.MetaData:
    """The models of MODELS, for the calls from Python."""
    metadata = sa.MetaData()
    sequences_table(metadata)
    invoice_no = TableSequence("invoice_no", mode="batch", metadata=metadata)
    sa.Table(
        "invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=invoice_no)
    )
    return metadata


def _server(engines: Any, query: str = "") -> tuple[str, str]:
    """The MariaDB server's URL naming no database (``.../`` and ``query``), and this run's
    database (skips when the server is unreachable)."""
    engines.get("mysql")
    url = sa.make_url(engines.url("mysql"))
    assert url.database
    bare = url.set(database="", query={}).render_as_string(hide_password=False)
    assert bare.endswith("/"), bare
    return bare + (f"?{query}" if query else ""), url.database


def _run(tmp_path: Path, command: str, url: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "nodb_models.py").write_text(MODELS)
    return subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", command, "--url", url, *COMMANDS[command]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("query", ["", "charset=utf8mb4"])
def test_each_command_refuses_a_url_without_a_database(
    command: str, query: str, engines: Any, tmp_path: Path
) -> None:
    url, _ = _server(engines, query)
    result = _run(tmp_path, command, url)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    said = "seqkeys doctor: " if command == "doctor" else "seqkeys: "
    assert result.stderr.startswith(f"{said}cannot use --url: {url} names no database"), (
        result.stderr
    )
    hint = url.replace("/?", "/DBNAME?") if query else f"{url}DBNAME"
    assert f"add one: {hint}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "AssertionError" not in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "nodb_models.py"]  # the demo wrote no file


def test_the_refusal_hides_the_password(engines: Any) -> None:
    """A URL with a password (``user:password@`` and ``?password=``); the connection is the
    creator's (root has no password on the test server)."""
    pymysql = pytest.importorskip("pymysql")
    url, _ = _server(engines)
    plain = sa.make_url(url)
    secret = plain.set(password="S3CRET").update_query_dict({"password": "S3CRET"})

    def connect() -> Any:
        return pymysql.connect(host=plain.host, port=plain.port, user=plain.username)

    engine = sa.create_engine(secret, creator=connect)
    try:
        with pytest.raises(SeqKeysError, match="names no database") as caught:
            doctor(engine, _metadata())
    finally:
        engine.dispose()
    said = str(caught.value)
    assert "S3CRET" not in said, said
    assert ":***@" in said, said
    assert "/DBNAME?password=***" in said, said


def test_a_database_given_as_a_query_argument_is_used(engines: Any, tmp_path: Path) -> None:
    url, database = _server(engines, "")
    result = _run(tmp_path, "doctor", f"{url}?database={database}")
    assert result.returncode == 1, result.stderr  # the models' tables are not there
    assert "names no database" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    assert "table 'invoices' does not exist" in result.stdout, result.stdout


def test_doctor_raises_seqkeys_error(engines: Any) -> None:
    url, _ = _server(engines)
    engine = sa.create_engine(url)
    try:
        with pytest.raises(SeqKeysError, match="names no database") as caught:
            doctor(engine, _metadata())
        assert f"add one: {url}DBNAME" in str(caught.value)
        with engine.connect() as conn, pytest.raises(SeqKeysError, match="names no database"):
            doctor(conn, _metadata())
    finally:
        engine.dispose()


@pytest.mark.parametrize("driver", ["aiomysql", "asyncmy"])
def test_doctor_async_raises_seqkeys_error(driver: str, engines: Any) -> None:
    pytest.importorskip(driver)
    from sqlalchemy.ext.asyncio import create_async_engine

    url, _ = _server(engines)
    url = url.replace("+pymysql:", f"+{driver}:")

    async def check() -> None:
        engine = create_async_engine(url)
        try:
            await doctor_async(engine, _metadata())
        finally:
            await engine.dispose()

    with pytest.raises(SeqKeysError, match="names no database"):
        asyncio.run(check())


def test_a_database_a_connect_listener_selects_is_refused_too(engines: Any) -> None:
    """SQLAlchemy reads the database once, when the engine first connects (before a
    listener's USE): its reflection would still assert, so doctor says to name it."""
    url, database = _server(engines)
    engine = sa.create_engine(url)

    @sa.event.listens_for(engine, "connect")
    def use(dbapi_connection: Any, record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"USE `{database}`")
        cursor.close()

    try:
        with pytest.raises(SeqKeysError, match="names no database"):
            doctor(engine, _metadata())
    finally:
        engine.dispose()


def test_demo_run_raises_seqkeys_error(engines: Any) -> None:
    url, _ = _server(engines)
    lines: list[str] = []
    with pytest.raises(SeqKeysError, match="names no database"):
        demo.run(url, rows=1, echo=lines.append)
    assert lines == []


def test_postgresql_without_a_schema_on_the_search_path_is_not_refused(engines: Any) -> None:
    """The URL names its database; PostgreSQL's reflection needs no default schema, and
    doctor reports the tables it cannot see."""
    engines.get("postgresql")
    url = sa.make_url(engines.url("postgresql")).update_query_dict({"options": "-csearch_path="})
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.dialect.default_schema_name is None
            report = doctor(conn, _metadata())
    finally:
        engine.dispose()
    assert ("schema", "invoices.id") in [(f.check, f.subject) for f in report.problems]
