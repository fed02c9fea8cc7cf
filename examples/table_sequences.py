"""Invoice numbers and order ids from one sequences table, on any engine.

    python examples/table_sequences.py                      # SQLite
    python examples/table_sequences.py mysql+pymysql://root@127.0.0.1/test

Invoices take gapless numbers in the application's transaction (a rolled back
invoice gives its number back); orders take ids from blocks reserved ahead by
a background thread.
"""

from __future__ import annotations

import sys

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import TableSequence, sequences_table


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)
invoice_no = TableSequence("example_invoice_no", mode="in_transaction", start=1000)
order_id = TableSequence("example_order_id", mode="async_batch", batch_size=50, low_watermark=10)


class Invoice(Base):
    __tablename__ = "example_invoices"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=invoice_no)
    customer: Mapped[str] = mapped_column(sa.String(50))


class Order(Base):
    __tablename__ = "example_seq_orders"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=order_id)
    item: Mapped[str] = mapped_column(sa.String(50))


def main(url: str) -> None:
    engine = sa.create_engine(url)
    if engine.dialect.name.startswith("spanner"):
        engine.dialect.insertmanyvalues_max_parameters = 950  # Spanner's statement limit
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    invoice_no.create(engine)
    order_id.create(engine)
    try:
        with Session(engine) as session:
            session.add(Invoice(customer="rolled back"))
            session.flush()
            session.rollback()  # number 1000 returns to the sequence
            session.add_all(Invoice(customer=c) for c in ("ada", "grace", "edsger"))
            session.add_all(Order(item=f"item {i}") for i in range(5))
            session.commit()
            for invoice in session.scalars(sa.select(Invoice).order_by(Invoice.id)):
                print(f"invoice {invoice.id}: {invoice.customer}")
            for order in session.scalars(sa.select(Order).order_by(Order.id)):
                print(f"order {order.id}: {order.item}")
    finally:
        Base.metadata.drop_all(engine)
        engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///example-sequences.db")
