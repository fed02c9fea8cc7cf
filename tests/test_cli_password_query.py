"""A password given in a URL's query (``?password=``, ``?passwd=``, ``?sslpassword=``, which
libpq and PyMySQL take) is never printed by ``seqkeys``, as one in ``user:password@`` is not:
``render_as_string(hide_password=True)`` masks only the latter. Through the real command line,
on PostgreSQL (whose trust login takes any password) and MariaDB.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys._urls import has_password, shown

SECRET = "S3CRETPW"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://app@db/shop", "postgresql+psycopg://app@db/shop"),
        ("postgresql+psycopg://app:S3CRETPW@db/shop", "postgresql+psycopg://app:***@db/shop"),
        (
            "postgresql+psycopg://app@db/shop?sslmode=require&password=S3CRETPW",
            "postgresql+psycopg://app@db/shop?password=***&sslmode=require",
        ),
        (
            "postgresql+psycopg://app@db/shop?sslpassword=S3CRETPW",
            "postgresql+psycopg://app@db/shop?sslpassword=***",
        ),
        ("mysql+pymysql://root@db/x?passwd=S3CRETPW", "mysql+pymysql://root@db/x?passwd=***"),
        ("mysql+pymysql://root@db/x?PASSWORD=S3CRETPW", "mysql+pymysql://root@db/x?PASSWORD=***"),
        (
            "mysql+pymysql://root:a@db/x?passwd=S3CRETPW&passwd=other",
            "mysql+pymysql://root:***@db/x?passwd=***",
        ),
        ("sqlite:///app.db?password=S3CRETPW", "sqlite:///app.db?password=***"),
        # no parseable URL (a port that is no number): masked as text
        ("mysql://root:S3CRETPW@db:abc/x?passwd=S3CRETPW", "mysql://root:***@db:abc/x?passwd=***"),
    ],
)
def test_shown_hides_every_password(url: str, expected: str) -> None:
    assert shown(url) == expected
    assert has_password(url) == ("***" in expected)
    if ":abc" not in url:
        assert shown(sa.make_url(url)) == expected


def _seqkeys(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command line, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.backend
@pytest.mark.parametrize("key", ["password", "sslpassword"])
def test_demo_on_postgresql_hides_a_query_password(key: str, engines: Any) -> None:
    with engines.fresh_database("postgresql", "pwq") as url:
        result = _seqkeys("demo", "--rows", "1", "--url", f"{url}?{key}={SECRET}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert SECRET not in output, output
    assert f"seqkeys demo on {shown(url)}?{key}=***" in result.stdout, result.stdout
    assert f"stay on {shown(url)}?{key}=***" in result.stdout, result.stdout


@pytest.mark.backend
@pytest.mark.parametrize("key", ["password", "passwd"])
def test_demo_on_mariadb_refused_login_hides_a_query_password(key: str, engines: Any) -> None:
    """root has no password here: one given is refused, and the error prints none."""
    with engines.fresh_database("mysql", "pwq") as url:
        result = _seqkeys("demo", "--rows", "1", "--url", f"{url}?{key}={SECRET}")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Access denied" in result.stderr, output
    assert SECRET not in output, output


def test_demo_on_sqlite_hides_a_query_password(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    result = _seqkeys("demo", "--rows", "1", "--url", f"{url}?password={SECRET}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert SECRET not in output, output
    assert f"seqkeys demo on {url}?password=***" in result.stdout, result.stdout


DOCTOR_MODELS = """\
import sqlalchemy as sa
from sqlalchemy_seqkeys import TableSequence, sequences_table

metadata = sa.MetaData()
sequences_table(metadata)
invoice_no = TableSequence("invoice_no", mode="batch", metadata=metadata)
sa.Table("invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=invoice_no))
"""


@pytest.mark.backend
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_doctor_hides_a_query_password_and_its_fix_names_database_url(
    as_json: bool, engines: Any, tmp_path: Path
) -> None:
    """A sequence behind its table's keys: the report, its URL and the resync fix it prints."""
    (tmp_path / "pw_models.py").write_text(DOCTOR_MODELS)
    with engines.fresh_database("postgresql", "pwq") as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    "CREATE TABLE sequences "
                    "(name VARCHAR(255) PRIMARY KEY, next_value BIGINT NOT NULL)"
                )
                conn.exec_driver_sql("INSERT INTO sequences VALUES ('invoice_no', 1)")
                conn.exec_driver_sql("CREATE TABLE invoices (id BIGINT PRIMARY KEY)")
                conn.exec_driver_sql("INSERT INTO invoices VALUES (5000)")
        finally:
            engine.dispose()
        secret_url = f"{url}?password={SECRET}"
        args = ["doctor", "--url", secret_url, "--models", "pw_models:metadata"]
        result = _seqkeys(*args, *(["--json"] if as_json else []), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # the sequence is behind: a problem
    assert SECRET not in output, output
    assert "seqkeys resync --url" in output, output
    assert '"$DATABASE_URL"' in output or r"\"$DATABASE_URL\"" in output, output
