"""COMB GUID primary keys through the ORM.

Run it on any engine (SQLite by default):

    python examples/comb_guid_orders.py
    python examples/comb_guid_orders.py postgresql+psycopg://postgres@127.0.0.1/test

The keys are minted client-side, in the layout the engine sorts by, so the
server's ORDER BY returns orders in the order they were created.
"""

from __future__ import annotations

import sys
import uuid
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import CombGuid, comb_timestamp, new_comb_guid


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "example_orders"

    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)
    customer: Mapped[str] = mapped_column(sa.String(50))
    placed_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), default=lambda: datetime.now(timezone.utc)
    )


def main(url: str) -> None:
    engine = sa.create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all(Order(customer=name) for name in ("ada", "grace", "edsger"))
            session.commit()
            layout = new_comb_guid.layout_for(engine.dialect)
            for order in session.scalars(sa.select(Order).order_by(Order.id)):
                minted = comb_timestamp(order.id, layout).isoformat() if layout else "random v4"
                print(f"{order.id}  {order.customer:8}  minted {minted}")
    finally:
        Base.metadata.drop_all(engine)
        engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///example-orders.db")
