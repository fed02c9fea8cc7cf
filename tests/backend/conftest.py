"""Fixtures of the PooledSequence tests (test_pooled_*.py), and an SQLite file for the
table-sequence tests (``lite``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import PooledSequence
from tests.backend._pooled import SIZE, TABLE, drop_everything, make_model
from tests.backend._seq_review import with_table


@pytest.fixture
def declare(engine: Engine) -> Iterator[Callable[..., tuple[PooledSequence, type[Any]]]]:
    """Declare a pooled sequence and the rows table keyed by it, created anew."""
    names: list[str] = []

    def make(name: str, size: int = SIZE, start: int = 1) -> tuple[PooledSequence, type[Any]]:
        drop_everything(engine, name)
        sequence = PooledSequence(name, batch_size=size, start=start, table=TABLE)
        row, metadata = make_model(sequence)
        metadata.create_all(engine)
        names.append(name)
        return sequence, row

    yield make
    drop_everything(engine, *names)


@pytest.fixture(params=["postgresql", "postgresql18", "mysql"])
def native_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine = engines.get(request.param)
    yield engine
    drop_everything(engine, "seqkeys_pooled_native", "seqkeys_pooled_plain")


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Engine]:
    """An SQLite file with its sequences table, waiting at most 0.2 s for a lock."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'review.db'}", connect_args={"timeout": 0.2})
    with_table(engine)
    yield engine
    engine.dispose()
