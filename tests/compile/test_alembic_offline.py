"""``alembic upgrade head --sql``: the exact SQL of every seqkeys operation, per dialect.

A project made by ``seqkeys alembic-init`` runs the scripts of
tests/alembic_project/versions/ (0001: every operation; 0002: an old
worker-lease table upgraded) offline for each dialect; the upgrade and downgrade
SQL must equal the snapshots in tests/alembic_project/snapshots/. Set
``SEQKEYS_UPDATE_SNAPSHOTS=1`` to rewrite them after a deliberate change
(and read the diff).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent.parent / "alembic_project"
SNAPSHOTS = PROJECT / "snapshots"
URLS = {
    "sqlite": "sqlite://",
    "postgresql": "postgresql+psycopg://",
    "mariadb": "mariadb+pymysql://",
    "mysql": "mysql+pymysql://",
    "spanner": "spanner+spanner:///projects/p/instances/i/databases/d",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("offline")
    subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", "alembic-init", "migrations"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    shutil.copy(PROJECT / "models.py", root / "models.py")
    for script in sorted((PROJECT / "versions").glob("*.py")):
        shutil.copy(script, root / "migrations" / "versions")
    return root


def offline_sql(project: Path, url: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "alembic", *args, "--sql"],
        cwd=project,
        env=dict(os.environ, SEQKEYS_DATABASE_URL=url),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name", list(URLS))
def test_offline_sql_matches_the_snapshot(project: Path, name: str) -> None:
    sql = offline_sql(project, URLS[name], "upgrade", "head")
    sql += offline_sql(project, URLS[name], "downgrade", "head:base")
    snapshot = SNAPSHOTS / f"{name}.sql"
    if os.environ.get("SEQKEYS_UPDATE_SNAPSHOTS"):
        snapshot.write_text(sql)
    assert _own(sql) == _own(snapshot.read_text())


def _own(sql: str) -> str:
    """``sql`` less Alembic's bookkeeping that SQLAlchemy versions write differently.

    SQLAlchemy 2.1 adds ``RETURNING`` to the version row's INSERT on MariaDB, 2.0 does not.
    """
    return sql.replace(" RETURNING alembic_version.version_num;", ";")


def test_the_snapshots_say_what_each_engine_gets() -> None:
    spanner = (SNAPSHOTS / "spanner.sql").read_text()
    assert (
        "CREATE SEQUENCE order_id OPTIONS (sequence_kind = 'bit_reversed_positive', "
        "start_with_counter = 1000, skip_range_min = 1, skip_range_max = 99999);" in spanner
    )
    assert "AS (MOD(FARM_FINGERPRINT(CAST(`LastAccess` AS STRING)), 2048)) STORED" in spanner
    assert ") PRIMARY KEY ();" in spanner  # the version table, without a key column
    for name, nocache in (("postgresql", ""), ("mariadb", " NOCACHE")):
        assert (
            f"CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1{nocache};"
            in (SNAPSHOTS / f"{name}.sql").read_text()
        )
    for name in ("sqlite", "mysql"):  # no sequences: a row of the sequences table
        text = (SNAPSHOTS / f"{name}.sql").read_text()
        assert "INSERT INTO sequences (name, next_value) VALUES ('order_id', 1000);" in text
        assert "CREATE SEQUENCE" not in text
