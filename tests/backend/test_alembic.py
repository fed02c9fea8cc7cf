"""Real Alembic, real engines: init from the template, autogenerate, upgrade, use, downgrade.

On each engine, in a temporary directory and a database of its own:
``seqkeys alembic-init``, a models module using every strategy
(tests/alembic_project/models.py), ``alembic revision --autogenerate``,
``alembic upgrade head``, inserts through the ORM with each strategy, a
second autogenerate that finds nothing, and ``alembic downgrade base``
leaving no seqkeys objects behind.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import WorkerLease, reverse_bits, shard_of, spanner_string
from tests.conftest import ENGINE_NAMES

pytestmark = pytest.mark.backend

MODELS = Path(__file__).parent.parent / "alembic_project" / "models.py"


def run(cwd: Path, url: str, *args: str) -> str:
    env = dict(os.environ, SEQKEYS_DATABASE_URL=url)
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def alembic(cwd: Path, url: str, *args: str) -> str:
    return run(cwd, url, "-m", "alembic", *args)


def load_models(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"seqkeys_models_{uuid.uuid4().hex}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the ORM resolves annotations through it
    spec.loader.exec_module(module)
    return module


def make_engine(url: str) -> sa.Engine:
    # the models have a shard column: this engine fills it (fill_shard_columns)
    engine = sa.create_engine(url, plugins=["seqkeys_shards"])
    if engine.dialect.name.startswith("spanner"):
        from tests._emulator import configure_engine

        configure_engine(engine)
    return engine


def the_script(project: Path, revision_output: str) -> str:
    name = revision_output.split("Generating ")[1].split(" ...")[0]
    return Path(project, name).read_text()


def use_every_strategy(models: ModuleType, engine: sa.Engine) -> None:
    """Inserts through the ORM with each strategy, checking the keys a user relies on.

    One transaction per strategy: the Spanner emulator runs one read-write
    transaction at a time, and the separate and batch modes take their values
    in transactions of their own.
    """

    def add(*objects: Any) -> list[Any]:
        with Session(engine, expire_on_commit=False) as session:
            session.add_all(objects)
            session.commit()
        return list(objects)

    start = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    invoices = add(*(models.Invoice() for _ in range(3)))
    assert [i.id for i in invoices] == [1000, 1001, 1002]
    accounts = add(*(models.Account() for _ in range(3)))
    assert all(a.id > 2**61 for a in accounts)  # outside the skip range
    payments = add(*(models.Payment() for _ in range(2)))
    assert sorted(reverse_bits(p.id) for p in payments) == [1, 2]
    tweets = add(*(models.Tweet() for _ in range(2)))
    assert {models.snowflake.decode(t.id).worker_id for t in tweets} == {7}
    messages = add(*(models.Message() for _ in range(2)))
    assert {m.id.version for m in messages} == {7}
    logs = add(
        *(
            models.AccessLog(LastAccess=start + timedelta(milliseconds=i), UserId=i)
            for i in range(3)
        )
    )
    expected = [shard_of(spanner_string(start + timedelta(milliseconds=i)), 2048) for i in range(3)]
    assert [log.ShardId for log in logs] == expected
    for model in (models.Receipt, models.Order, models.Event, models.Document):
        assert add(model())[0].id is not None
    with WorkerLease(engine, create_table=False) as lease:  # the migrated lease table
        assert lease.worker_id == 0


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_init_autogenerate_upgrade_use_downgrade(name: str, engines: Any, tmp_path: Path) -> None:
    with engines.fresh_database(name, "alembic") as url:
        out = run(tmp_path, url, "-m", "sqlalchemy_seqkeys", "alembic-init", "migrations")
        assert "alembic revision --autogenerate" in out
        shutil.copy(MODELS, tmp_path / "models.py")

        script = the_script(tmp_path, alembic(tmp_path, url, "revision", "--autogenerate"))
        # the seqkeys plugin registers the operations: the script imports nothing for them
        assert "import sqlalchemy_seqkeys.alembic" not in script
        for expected in (
            "op.create_sequences_table()",
            "op.create_worker_lease_table()",
            "op.create_table_sequence('mig_invoice_no', start=1000)",
            "op.create_table_sequence('mig_event_no', start=1)",
            "op.create_table_sequence('mig_counter', start=1)",
            "op.create_bit_reversed_sequence('mig_account_id', start_with_counter=1, "
            "skip_range=(1, 2305843009213693952))",
            "sqlalchemy_seqkeys.spanner_shard_column('ShardId', 'LastAccess', shards=2048",
            "op.drop_bit_reversed_sequence('mig_account_id'",
            "op.drop_table_sequence('mig_invoice_no', start=1000)",
            "op.drop_sequences_table()",
            "op.drop_worker_lease_table()",
        ):
            assert expected in script, expected
        upgrade = script.split("def upgrade")[1]
        # the sequence rows come after the table that holds them
        assert upgrade.index("create_sequences_table") < upgrade.index("create_table_sequence")

        alembic(tmp_path, url, "upgrade", "head")
        models = load_models(tmp_path / "models.py")
        engine = make_engine(url)
        try:
            use_every_strategy(models, engine)
        finally:
            engine.dispose()

        second = the_script(tmp_path, alembic(tmp_path, url, "revision", "--autogenerate"))
        body = second.split("def upgrade")[1].split("def downgrade")[0]
        assert "op." not in body, body  # nothing is missing any more
        assert "pass" in body
        for path in (tmp_path / "migrations" / "versions").glob("*.py"):
            if path.read_text() == second:
                path.unlink()

        alembic(tmp_path, url, "downgrade", "base")
        engine = make_engine(url)
        try:
            with engine.connect() as conn:
                inspector = sa.inspect(conn)
                assert set(inspector.get_table_names()) == {"alembic_version"}
                if engine.dialect.supports_sequences:
                    assert inspector.get_sequence_names() == []
        finally:
            engine.dispose()
