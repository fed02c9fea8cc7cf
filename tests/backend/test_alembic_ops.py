"""The seqkeys Alembic operations on a live engine: bad input fails before anything changes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    BitReversedSequence,
    InvalidBitReversalError,
    LeaseTableOutdatedError,
    MigrationError,
    SequenceAllocationError,
    Snowflake,
    TableSequence,
    WorkerLease,
    create_table_sequence,
    reverse_bits,
    sequences_table,
    workers_table,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend


@pytest.fixture
def op(engine: Engine) -> Iterator[Operations]:
    """Alembic's ``op`` on an autocommit connection (Spanner's DDL is not transactional)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in ("seqkeys_ops_sequences", "seqkeys_ops_workers", "seqkeys_ops_rows"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        BitReversedSequence("seqkeys_ops_br", table="seqkeys_ops_sequences").drop(
            conn, checkfirst=True
        )
        yield Operations(MigrationContext.configure(conn))
        for table in ("seqkeys_ops_sequences", "seqkeys_ops_workers", "seqkeys_ops_rows"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        BitReversedSequence("seqkeys_ops_br", table="seqkeys_ops_sequences").drop(
            conn, checkfirst=True
        )


TABLE = "seqkeys_ops_sequences"


def test_operations_and_their_refusals(op: Operations, engine: Engine) -> None:
    conn = op.get_bind()
    with pytest.raises(MigrationError, match=r"run op.create_sequences_table\('seqkeys_ops_seq"):
        op.create_table_sequence("invoice_no", start=1000, table=TABLE)
    assert not sa.inspect(conn).has_table(TABLE)

    op.create_sequences_table(TABLE)
    with pytest.raises(MigrationError, match="already exists; nothing was created"):
        op.create_sequences_table(TABLE)

    op.create_table_sequence("invoice_no", start=1000, table=TABLE)
    with pytest.raises(MigrationError, match="'invoice_no' already exists"):
        op.create_table_sequence("invoice_no", start=5, table=TABLE)
    assert read_next_value(conn, "invoice_no", table=TABLE) == 1000  # left as it was

    with pytest.raises(MigrationError, match="'nope' does not exist"):
        op.drop_table_sequence("nope", table=TABLE)
    with pytest.raises(MigrationError, match="start must be an int"):
        op.create_table_sequence("bad", start=-1, table=TABLE)
    with pytest.raises(InvalidBitReversalError, match="skip_range"):
        op.create_bit_reversed_sequence("bad", skip_range=(5, 1))

    op.create_bit_reversed_sequence(
        "seqkeys_ops_br", start_with_counter=7, skip_range=(1, 10), table=TABLE
    )
    with pytest.raises(MigrationError, match="already exists"):
        op.create_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)
    sequence = BitReversedSequence("seqkeys_ops_br", start=7, table=TABLE)
    assert sequence.next_value(engine) == reverse_bits(7)
    op.drop_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)
    with pytest.raises(MigrationError, match="nothing to drop"):
        op.drop_bit_reversed_sequence("seqkeys_ops_br", table=TABLE)

    op.create_worker_lease_table("seqkeys_ops_workers")
    with pytest.raises(MigrationError, match="already exists"):
        op.create_worker_lease_table("seqkeys_ops_workers")
    op.drop_worker_lease_table("seqkeys_ops_workers")
    with pytest.raises(MigrationError, match="no worker-lease table"):
        op.drop_worker_lease_table("seqkeys_ops_workers")

    op.drop_table_sequence("invoice_no", table=TABLE)
    op.drop_sequences_table(TABLE)
    assert not sa.inspect(conn).has_table(TABLE)
    with pytest.raises(MigrationError, match="no sequences table"):
        op.drop_sequences_table(TABLE)


def _compare_only(conn: sa.Connection, models: sa.MetaData) -> MigrationContext:
    """An autogenerate context that looks at the tables of ``models`` only."""

    def include_name(name: str | None, type_: str, parent: object) -> bool:
        return type_ != "table" or name in models.tables

    return MigrationContext.configure(
        conn,
        opts={
            "target_metadata": models,
            "include_name": include_name,
            "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
        },
    )


def test_names_made_case_sensitive(op: Operations, engine: Engine) -> None:
    """A sequences table of version 0.1: refused at first use, converted, then exact."""
    # a pool of its own: what the fixture's pool learnt of an earlier table of that name
    # (the library asks once per pool) must not answer for the one made here
    engine = sa.create_engine(engine.url)
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    op = Operations(MigrationContext.configure(conn))
    if engine.dialect.name == "mysql":  # the old DDL: the database's case-insensitive collation
        conn.execute(
            sa.text(
                f"CREATE TABLE {TABLE} (name VARCHAR(64) NOT NULL, next_value BIGINT NOT NULL, "
                "PRIMARY KEY (name)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
            )
        )
        conn.execute(sa.text(f"INSERT INTO {TABLE} VALUES ('Invoice_A', 10)"))
        old = TableSequence("Invoice_A", mode="separate", table=TABLE)
        with pytest.raises(SequenceAllocationError, match="make_sequence_names_case_sensitive"):
            old.next_value(engine)
        with pytest.raises(MigrationError, match="make_sequence_names_case_sensitive"):
            op.create_table_sequence("invoice_a", table=TABLE)
        # a DELETE by name would remove 'Invoice_A' there: refused, the row kept
        with pytest.raises(MigrationError, match="make_sequence_names_case_sensitive"):
            op.drop_table_sequence("invoice_a", table=TABLE)
        assert read_next_value(conn, "Invoice_A", table=TABLE) == 10
        # autogenerate proposes the conversion for a sequences table the models declare
        models = sa.MetaData()
        sequences_table(models, TABLE)
        migration = produce_migrations(_compare_only(conn, models), models)
        assert render_python_code(migration.upgrade_ops).splitlines()[1].strip() == (
            f"op.make_sequence_names_case_sensitive({TABLE!r})"
        )
        assert render_python_code(migration.downgrade_ops).splitlines()[1].strip() == (
            f"op.make_sequence_names_case_insensitive({TABLE!r})"
        )
    else:
        op.create_sequences_table(TABLE)
        op.create_table_sequence("Invoice_A", start=10, table=TABLE)
    op.make_sequence_names_case_sensitive(TABLE)  # a no-op where names are exact already
    models = sa.MetaData()
    sequences_table(models, TABLE)
    migration = produce_migrations(_compare_only(conn, models), models)
    assert migration.upgrade_ops.is_empty()  # nothing more to do
    op.make_sequence_names_case_sensitive(TABLE)  # and running it again is harmless
    assert read_next_value(conn, "Invoice_A", table=TABLE) == 10  # the row kept its value
    assert TableSequence("Invoice_A", mode="separate", table=TABLE).next_value(engine) == 10
    op.create_table_sequence("invoice_a", start=500, table=TABLE)
    assert TableSequence("invoice_a", mode="separate", table=TABLE).next_value(engine) == 500
    assert read_next_value(conn, "Invoice_A", table=TABLE) == 11

    if engine.dialect.name == "mysql":
        with pytest.raises(MigrationError, match=r"differ only in case.*nothing was changed"):
            op.make_sequence_names_case_insensitive(TABLE)
        op.drop_table_sequence("invoice_a", table=TABLE)
        op.make_sequence_names_case_insensitive(TABLE)
        with pytest.raises(SequenceAllocationError, match="case-insensitively"):
            TableSequence("Invoice_A", mode="separate", table=TABLE).next_value(engine)
    else:
        op.make_sequence_names_case_insensitive(TABLE)  # a no-op as well
    with pytest.raises(MigrationError, match="does not exist"):
        op.make_sequence_names_case_sensitive("seqkeys_ops_nothing_here")
    conn.close()
    engine.dispose()


def test_resync_operation(op: Operations, engine: Engine) -> None:
    conn = op.get_bind()
    with pytest.raises(MigrationError, match="create_sequences_table"):
        op.resync_table_sequence("rows_id", "seqkeys_ops_rows", "id", sequences_table=TABLE)
    op.create_sequences_table(TABLE)
    with pytest.raises(MigrationError, match=r"op.create_table_sequence\('rows_id'\)"):
        op.resync_table_sequence("rows_id", "seqkeys_ops_rows", "id", sequences_table=TABLE)
    create_table_sequence(conn, "rows_id", table=TABLE)
    with pytest.raises(MigrationError, match="no table 'seqkeys_ops_rows'"):
        op.resync_table_sequence("rows_id", "seqkeys_ops_rows", "id", sequences_table=TABLE)
    op.create_table(
        "seqkeys_ops_rows",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
    )
    op.bulk_insert(sa.table("seqkeys_ops_rows", sa.column("id")), [{"id": 3}, {"id": 77}])
    op.resync_table_sequence("rows_id", "seqkeys_ops_rows", "id", sequences_table=TABLE)
    assert read_next_value(conn, "rows_id", table=TABLE) == 78
    with pytest.raises(NotImplementedError):  # never moved back, so no downgrade
        sqlalchemy_seqkeys.alembic.ResyncTableSequenceOp(
            "rows_id", "seqkeys_ops_rows", "id"
        ).reverse()


WORKERS = "seqkeys_ops_workers"


def test_an_old_lease_table_is_upgraded(op: Operations, engine: Engine) -> None:
    """A lease table made before high_water_ms: refused, proposed, upgraded, used, reversed."""
    conn = op.get_bind()
    old = sa.Table(
        WORKERS,
        sa.MetaData(),
        sa.Column("worker_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
    )
    old.create(conn)
    conn.execute(sa.insert(old).values(worker_id=3, owner="released", expires_at=0))
    with pytest.raises(
        LeaseTableOutdatedError,
        match=r"op\.upgrade_worker_lease_table\(table='seqkeys_ops_workers'\)",
    ):
        WorkerLease(engine, ttl=10, table=WORKERS, create_table=False).start()

    # autogenerate proposes the operation, not a NOT NULL add_column without a default
    models = sa.MetaData()
    workers_table(models, WORKERS)
    migration = produce_migrations(_compare_only(conn, models), models)
    upgrade = render_python_code(migration.upgrade_ops)
    assert upgrade.splitlines()[1].strip() == f"op.upgrade_worker_lease_table(table={WORKERS!r})"
    assert "add_column" not in upgrade
    assert render_python_code(migration.downgrade_ops).splitlines()[1].strip() == (
        f"op.downgrade_worker_lease_table(table={WORKERS!r})"
    )

    op.upgrade_worker_lease_table(table=WORKERS)
    t = workers_table(sa.MetaData(), WORKERS)
    assert conn.execute(sa.select(t.c.worker_id, t.c.high_water_ms)).all() == [(3, 0)]
    assert produce_migrations(_compare_only(conn, models), models).upgrade_ops.is_empty()
    op.upgrade_worker_lease_table(table=WORKERS)  # a no-op once current
    with WorkerLease(engine, ttl=10, table=WORKERS, create_table=False) as lease:
        assert lease.worker_id == 3  # the old row, which holds no mark
        Snowflake(worker_id=lease)()

    op.downgrade_worker_lease_table(table=WORKERS)
    assert "high_water_ms" not in {c["name"] for c in sa.inspect(conn).get_columns(WORKERS)}
    op.downgrade_worker_lease_table(table=WORKERS)  # a no-op once gone
    with pytest.raises(MigrationError, match=r"no worker-lease table 'seqkeys_ops_nothing'"):
        op.upgrade_worker_lease_table(table="seqkeys_ops_nothing")
    with pytest.raises(
        MigrationError, match=r"table must be a non-empty str.*it names the worker-lease table"
    ):
        op.upgrade_worker_lease_table(table="")


def test_autogenerate_sees_a_table_sequence_attached_to_metadata(
    op: Operations, engine: Engine
) -> None:
    """A TableSequence attached with ``metadata=`` and used by no column still gets its row."""
    conn = op.get_bind()
    op.create_sequences_table(TABLE)
    models = sa.MetaData()
    sequences_table(models, TABLE)
    TableSequence("seqkeys_ops_attached", mode="separate", table=TABLE, start=70, metadata=models)
    upgrade = render_python_code(
        produce_migrations(_compare_only(conn, models), models).upgrade_ops
    )
    assert upgrade.splitlines()[1].strip() == (
        f"op.create_table_sequence('seqkeys_ops_attached', start=70, table={TABLE!r})"
    )
    op.create_table_sequence("seqkeys_ops_attached", start=70, table=TABLE)
    assert produce_migrations(_compare_only(conn, models), models).upgrade_ops.is_empty()

    # models that declare no sequence: no diff
    bare = sa.MetaData()
    sequences_table(bare, TABLE)
    assert produce_migrations(_compare_only(conn, bare), bare).upgrade_ops.is_empty()
