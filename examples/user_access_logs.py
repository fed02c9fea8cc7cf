"""Spanner's UserAccessLogs, keyed by (ShardId, LastAccess, UserId), on any engine.

    python examples/user_access_logs.py                      # SQLite
    python examples/user_access_logs.py postgresql+psycopg://postgres@127.0.0.1/test

The schema from Spanner's schema design guide: a timestamp-first key would
send every insert to the end of the table, so a shard id hashed from the
timestamp goes first. On Spanner the shard id is a stored generated column
(``MOD(FARM_FINGERPRINT(CAST(LastAccess AS STRING)), 2048)``); on the other
engines the library computes the same value on insert, so data moves between
engines with the same keys. Users get bit-reversed ids that equal what a
Spanner bit_reversed_positive sequence would give them.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    reverse_bits,
    sequences_table,
    shard_of,
    spanner_shard_column,
    spanner_string,
)


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)  # holds the user id counter where there are no sequences
user_id = BitReversedSequence("example_user_id", start=1, metadata=Base.metadata)


class User(Base):
    __tablename__ = "ExampleUsers"
    UserId: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=user_id, autoincrement=False
    )
    Name: Mapped[str] = mapped_column(sa.String(100))


# MySQL's DATETIME drops fractions of a second unless asked for 6 digits: the
# stored timestamp must be the one that was hashed
Timestamp = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


class UserAccessLog(Base):
    __tablename__ = "UserAccessLogs"
    ShardId: Mapped[int] = spanner_shard_column(
        "ShardId", "LastAccess", shards=2048, primary_key=True
    )
    LastAccess: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    UserId: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)


def main(url: str) -> None:
    engine = sa.create_engine(url, plugins=["seqkeys_shards"])
    if engine.dialect.name.startswith("spanner"):
        engine.dialect.insertmanyvalues_max_parameters = 950  # Spanner's statement limit
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    try:
        start = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
        with Session(engine) as session:
            users = [User(Name=name) for name in ("ada", "grace", "edsger", "barbara", "ken")]
            session.add_all(users)
            session.flush()
            # five users about a millisecond apart, as in the guide's picture
            logs = [
                UserAccessLog(LastAccess=start + timedelta(milliseconds=i), UserId=u.UserId)
                for i, u in enumerate(users)
            ]
            session.add_all(logs)
            session.commit()
            for u in users:
                print(f"user {u.Name:8} id {u.UserId:>20} (counter {reverse_bits(u.UserId)})")
            stamps = {log.UserId: start + timedelta(milliseconds=i) for i, log in enumerate(logs)}
            for log in session.scalars(sa.select(UserAccessLog).order_by(UserAccessLog.ShardId)):
                stamp = stamps[log.UserId]
                assert log.ShardId == shard_of(spanner_string(stamp), 2048)
                print(f"shard {log.ShardId:>5}  {spanner_string(stamp)}  user {log.UserId}")
    finally:
        Base.metadata.drop_all(engine)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///user_access_logs.db")
