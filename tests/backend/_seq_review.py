"""What the table-sequence tests share: a sequences table created on an engine (the
``lite`` fixture in conftest.py uses it too)."""

from __future__ import annotations

import sqlalchemy as sa

from sqlalchemy_seqkeys import sequences_table


def with_table(engine: sa.Engine) -> sa.Table:
    """The sequences table, created on ``engine`` (if it is not there)."""
    metadata = sa.MetaData()
    table = sequences_table(metadata)
    metadata.create_all(engine)
    return table
