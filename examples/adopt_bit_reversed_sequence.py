"""A table that already has integer keys adopts a bit-reversed sequence.

    python examples/adopt_bit_reversed_sequence.py                # SQLite
    python examples/adopt_bit_reversed_sequence.py postgresql+psycopg://postgres@127.0.0.1/test

Spanner's migration guide: keep the keys already in use, and create a
bit-reversed sequence whose skip range covers them, so new keys can never
collide with old ones. The migration step is an Alembic operation, run here
through Alembic's ``Operations`` so the script is self-contained; in a
project it is one line of a migration script::

    op.create_bit_reversed_sequence("customer_id", skip_range=(1, 1000))
"""

from __future__ import annotations

import sys

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import BitReversedSequence, sequences_table

# Alembic loads the seqkeys plugin from the package's entry point; a script that
# drives Operations directly makes sure of op.create_bit_reversed_sequence & co.
# with one call (it does nothing where the plugin is loaded already).
sqlalchemy_seqkeys.alembic.register()

LEGACY_ROWS = 1000  # the keys 1 .. 1000 are taken


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)  # where the engine has no sequences, the counter lives here
customer_id = BitReversedSequence("example_customer_id", skip_range=(1, LEGACY_ROWS))


class Customer(Base):
    __tablename__ = "example_customers"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=customer_id, autoincrement=False
    )
    name: Mapped[str] = mapped_column(sa.String(50))


def main(url: str) -> None:
    engine = sa.create_engine(url)
    if engine.dialect.name.startswith("spanner"):
        engine.dialect.insertmanyvalues_max_parameters = 950  # Spanner's statement limit
    Base.metadata.drop_all(engine)
    customer_id.drop(engine, checkfirst=True)
    Base.metadata.create_all(engine)
    try:
        # the legacy data: keys 1 .. 1000, as an auto-increment column left them
        with engine.begin() as conn:
            conn.execute(
                sa.insert(Customer.__table__),
                [{"id": i, "name": f"legacy {i}"} for i in range(1, LEGACY_ROWS + 1)],
            )
        with engine.connect() as conn:
            highest = conn.scalar(sa.select(sa.func.max(Customer.id)))
        assert highest is not None

        # the migration: a bit-reversed sequence that skips every key in use
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            op = Operations(MigrationContext.configure(conn))
            op.create_bit_reversed_sequence(  # type: ignore[attr-defined]
                "example_customer_id", skip_range=(1, highest)
            )
        print(f"keys 1 .. {highest} are in use; the sequence skips them")

        with Session(engine) as session:
            new = [Customer(name=n) for n in ("ada", "grace", "edsger")]
            session.add_all(new)
            session.commit()
            for customer in new:
                assert customer.id > highest
                print(f"new customer {customer.name:7} id {customer.id}")
            total = session.scalar(sa.select(sa.func.count()).select_from(Customer))
        print(f"{total} customers, no key used twice")
    finally:
        Base.metadata.drop_all(engine)
        customer_id.drop(engine, checkfirst=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///adopt_bit_reversed.db")
