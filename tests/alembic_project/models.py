"""A models module that uses every key strategy; the Alembic tests migrate it.

Copied into a fresh ``seqkeys alembic-init`` project as ``models.py``.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    CombGuid,
    Snowflake,
    TableSequence,
    new_comb_guid,
    new_uuid7,
    sequences_table,
    spanner_shard_column,
    workers_table,
)


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)
workers_table(Base.metadata)

invoice_no = TableSequence("mig_invoice_no", mode="in_transaction", start=1000)
receipt_no = TableSequence("mig_receipt_no", mode="separate", start=1)
order_no = TableSequence("mig_order_no", mode="batch", batch_size=20)
event_no = TableSequence("mig_event_no", mode="async_batch", batch_size=20, low_watermark=5)
counter = TableSequence("mig_counter", mode="batch", batch_size=20, start=1)
account_id = BitReversedSequence(
    "mig_account_id", start=1, skip_range=(1, 2**61), metadata=Base.metadata
)
snowflake = Snowflake(worker_id=7)

Timestamp = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


class Invoice(Base):
    __tablename__ = "mig_invoices"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=invoice_no)


class Receipt(Base):
    __tablename__ = "mig_receipts"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=receipt_no)


class Order(Base):
    __tablename__ = "mig_orders"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=order_no)


class Event(Base):
    __tablename__ = "mig_events"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=event_no)


class Account(Base):
    __tablename__ = "mig_accounts"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=account_id, autoincrement=False
    )


class Payment(Base):
    __tablename__ = "mig_payments"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=BitReversed(counter), autoincrement=False
    )


class Document(Base):
    __tablename__ = "mig_documents"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)


class Message(Base):
    __tablename__ = "mig_messages"
    id: Mapped[uuid.UUID] = mapped_column(
        CombGuid(binary=True), primary_key=True, default=new_uuid7
    )


class Tweet(Base):
    __tablename__ = "mig_tweets"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=snowflake, autoincrement=False
    )


class AccessLog(Base):
    __tablename__ = "mig_access_logs"
    ShardId: Mapped[int] = spanner_shard_column(
        "ShardId", "LastAccess", shards=2048, primary_key=True
    )
    LastAccess: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    UserId: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
