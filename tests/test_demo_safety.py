"""``seqkeys demo --url URL`` touches only what it creates, in a database that has an application.

A new user points the demo at the database they already use. That database
holds the application's ``sequences`` table (with its rows), the
application's own tables (one even named like an old demo table) and, where
the engine has them, a native sequence. The demo, run twice, must leave all of
it exactly as it was: same tables, same rows, same sequences. Everything the
demo adds is named ``seqkeys_demo_...``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import demo, sequences_table
from sqlalchemy_seqkeys.cli import main

APP_SEQUENCE_ROWS = [
    {"name": "invoice_id", "next_value": 1234},
    # the names the demo used to give its own sequences
    {"name": "demo_in_transaction", "next_value": 5000},
    {"name": "demo_batch", "next_value": 77},
    {"name": "demo_account_id", "next_value": 9},
]


def app_schema() -> sa.MetaData:
    metadata = sa.MetaData()
    sequences_table(metadata)
    sa.Table(
        "orders",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("customer", sa.String(40)),
    )
    sa.Table(  # an application's table that happens to carry a demo-like name
        "demo_comb",
        metadata,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("note", sa.String(40)),
    )
    sa.Sequence("demo_account_id", metadata=metadata)  # where the engine has sequences
    return metadata


def fill(engine: sa.Engine, metadata: sa.MetaData) -> None:
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(metadata.tables["sequences"].insert(), APP_SEQUENCE_ROWS)
        conn.execute(
            metadata.tables["orders"].insert(),
            [{"id": 1, "customer": "ada"}, {"id": 2, "customer": "grace"}],
        )
        conn.execute(
            metadata.tables["demo_comb"].insert(), [{"id": "app-row-1", "note": "ours, not yours"}]
        )


def snapshot(engine: sa.Engine) -> dict[str, Any]:
    """Every table but the demo's, with its rows; and the sequences."""
    inspector = sa.inspect(engine)
    found: dict[str, Any] = {}
    with engine.connect() as conn:
        for name in inspector.get_table_names():
            if name.startswith("seqkeys_demo_"):
                continue
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            rows = conn.execute(sa.select(table)).all()
            found[name] = sorted(tuple(r) for r in rows)
    if engine.dialect.supports_sequences:
        names = inspector.get_sequence_names()
        found["(sequences)"] = sorted(n for n in names if not n.startswith("seqkeys_demo_"))
    return found


@contextmanager
def database(name: str, engines: Any, tmp_path: Path) -> Iterator[str]:
    if name == "sqlite":
        yield f"sqlite:///{tmp_path / 'app.db'}"
    else:
        with engines.fresh_database(name, "demo") as url:
            yield url


@pytest.mark.parametrize(
    "name",
    [
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.backend),
        pytest.param("mysql", marks=pytest.mark.backend),
    ],
)
def test_the_demo_leaves_an_applications_database_as_it_was(
    name: str, engines: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with database(name, engines, tmp_path) as url:
        engine = sa.create_engine(url)
        try:
            fill(engine, app_schema())
            before = snapshot(engine)
            assert before["sequences"] == sorted(
                (r["name"], r["next_value"]) for r in APP_SEQUENCE_ROWS
            )
            for _ in range(2):  # a second run replaces only its own tables
                assert main(["demo", "--url", url]) == 0
            out = capsys.readouterr().out
            assert "TableSequence mode='batch'" in out
            assert snapshot(engine) == before
            added = set(sa.inspect(engine).get_table_names()) - set(before)
            assert added, "the demo created its tables"
            assert all(t.startswith("seqkeys_demo_") for t in added), added
        finally:
            engine.dispose()


def test_every_name_the_demo_creates_carries_its_prefix(tmp_path: Path) -> None:
    """In an empty SQLite database: every table the demo leaves, and every row of its sequences
    table (its sequences there, the bit-reversed one included)."""
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    demo.run(url, echo=lambda line: None)
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        tables = inspector.get_table_names()
        assert f"{demo.PREFIX}sequences" in tables
        assert all(name.startswith(demo.PREFIX) for name in tables), tables
        with engine.connect() as conn:
            rows = conn.scalars(sa.text(f"SELECT name FROM {demo.PREFIX}sequences")).all()
        assert len(rows) >= 2, rows  # the TableSequence modes and the bit-reversed account id
        assert all(name.startswith(demo.PREFIX) for name in rows), rows
    finally:
        engine.dispose()
