"""What the async table-sequence tests share: the sequence modes, and the ``db`` and
``server_db`` fixtures (an async database with a fresh sequences table). A test module
takes the fixtures by importing them (``import sequences_db, sequences_server_db``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from sqlalchemy_seqkeys import SequenceMode, sequences_table
from tests._helpers import fresh_table

if TYPE_CHECKING:
    from tests.conftest import AsyncDatabase

MODES = [m.value for m in SequenceMode]


@pytest.fixture(name="db")
def sequences_db(async_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    """``async_database`` (every async driver) with a fresh sequences table."""
    with fresh_table(async_database.sync, sequences_table):
        yield async_database


@pytest.fixture(name="server_db")
def sequences_server_db(async_server_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    """``async_server_database`` (PostgreSQL and MariaDB) with a fresh sequences table."""
    with fresh_table(async_server_database.sync, sequences_table):
        yield async_server_database
