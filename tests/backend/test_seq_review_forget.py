"""A sequence dropped and created anew makes every holder of that name forget its
blocks and what it received, whatever the table's spelling (SQLite compares table
names without case) and whatever engine (URL) created it.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    TableSequence,
)
from sqlalchemy_seqkeys.sequences.table import create_table_sequence, drop_table_sequence
from tests.backend._seq_review import with_table

pytestmark = pytest.mark.backend


def test_recreated_through_another_table_spelling_forgets_the_blocks(lite: sa.Engine) -> None:
    # SQLite: "sequences" and "Sequences" are one table
    old = TableSequence("spelled", mode="batch", batch_size=10, table="sequences")
    old.create(lite)
    assert old.next_value(lite) == 1
    assert drop_table_sequence(lite, "spelled", table="Sequences")
    assert create_table_sequence(lite, "spelled", table="Sequences")
    new = TableSequence("spelled", mode="batch", batch_size=10, table="Sequences")
    from_old = [old.next_value(lite) for _ in range(5)]
    from_new = [new.next_value(lite) for _ in range(5)]
    assert not set(from_old) & set(from_new), (from_old, from_new)


def test_recreated_through_another_url_starts_afresh(engines: Any) -> None:
    url = engines.get("postgresql").url
    app = sa.create_engine(url)
    migrations = sa.create_engine(url.update_query_dict({"application_name": "migrations"}))
    try:
        with_table(app)
        sequence = TableSequence("review_other_url", mode="batch", batch_size=5)
        sequence.drop(app, checkfirst=True)
        sequence.create(app)
        assert [sequence.next_value(app) for _ in range(6)] == [1, 2, 3, 4, 5, 6]
        assert sequence.drop(migrations)
        assert sequence.create(migrations)
        assert sequence.next_value(app) == 1  # created anew: afresh, as the docs say
        sequence.drop(app)
    finally:
        app.dispose()
        migrations.dispose()
