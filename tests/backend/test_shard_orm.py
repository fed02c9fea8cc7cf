"""ShardId as a primary-key prefix through the ORM, on every engine."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import InvalidShardError, NaiveDatetimeError, ShardId, spanner_string

pytestmark = pytest.mark.backend


def test_shard_id_default_fills_the_key_prefix(engine: Engine) -> None:
    shard = ShardId("user_id", "last_access", shards=64)

    class Base(DeclarativeBase):
        pass

    class Access(Base):
        __tablename__ = "seqkeys_shard_access"
        shard_id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=shard, autoincrement=False
        )
        user_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
        last_access: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), primary_key=True)

    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    start = datetime(2024, 3, 10, 9, 0, tzinfo=timezone.utc)  # around a DST change in LA
    rows = [(u, start + timedelta(minutes=17 * u, milliseconds=u)) for u in range(-50, 150)]
    try:
        with Session(engine) as session:
            session.add_all(Access(user_id=u, last_access=t) for u, t in rows)
            session.commit()
            stored = {(a.user_id, a.shard_id) for a in session.scalars(sa.select(Access))}
        assert stored == {(u, shard.of(u, t)) for u, t in rows}
        assert any(s < 0 for _, s in stored)  # Spanner's MOD keeps the sign
    finally:
        Base.metadata.drop_all(engine)


def test_canonical_forms_and_refusals() -> None:
    assert spanner_string(datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)) == (
        "2024-01-01 19:04:05.678-08"
    )
    assert spanner_string(datetime(2024, 7, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)) == (
        "2024-07-01 20:04:05.123456-07"
    )
    with pytest.raises(NaiveDatetimeError):
        spanner_string(datetime(2024, 1, 1))
    with pytest.raises(InvalidShardError, match="cannot hash NULL"):
        spanner_string(None)
    with pytest.raises(InvalidShardError, match="cannot hash a float"):
        spanner_string(1.5)
    with pytest.raises(InvalidShardError, match="at least one column"):
        ShardId(shards=4)
