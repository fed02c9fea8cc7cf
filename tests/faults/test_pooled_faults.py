"""A pooled sequence's block never reaches a child forked by libc ``fork()``.

uWSGI without ``lazy-apps``, C extensions and ``ctypes`` fork through libc,
which runs none of Python's ``os.register_at_fork`` hooks: the child starts
with its parent's blocks in memory. Both would then hand out the same keys
from the block the parent was using. The child notices the fork by the fork
marker of ``sqlalchemy_seqkeys.comb`` (a page the kernel wipes for children,
or the process id) and takes blocks of its own. Here the parent holds most of
a block, a libc-forked child takes keys, and none may lie in that block.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import PooledSequence
from tests._forking import libc_fork_when_quiet as _libc_fork
from tests._forking import no_stragglers  # noqa: F401 - a fixture
from tests._helpers import in_forked_child

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.backend,
    pytest.mark.usefixtures("no_stragglers"),  # a hung child is killed, and fails its test
]

SIZE = 50
NAME = "seqkeys_pooled_libc_fork"


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    # NullPool: the child opens connections of its own and keeps the parent's pool
    # object, so nothing but the fork marker can tell it the blocks are not its own
    engine = sa.create_engine(engines.get(request.param).url, poolclass=sa.pool.NullPool)
    PooledSequence(NAME, batch_size=SIZE).drop(engine, checkfirst=True)
    try:
        yield engine
    finally:
        PooledSequence(NAME, batch_size=SIZE).drop(engine, checkfirst=True)
        engine.dispose()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_libc_forked_child_never_hands_out_the_parents_block(
    server_engine: Engine, fork_marker: str
) -> None:
    sequence = PooledSequence(NAME, batch_size=SIZE)
    sequence.create(server_engine)
    before = sequence.next_values(server_engine, 10)  # the parent holds 11 .. 50
    text = in_forked_child(
        lambda: " ".join(map(str, sequence.next_values(server_engine, 60))), fork=_libc_fork
    )
    assert text[:1].isdigit(), f"the child failed to take keys: {text}"
    child = [int(v) for v in text.split()]
    parent = sequence.next_values(server_engine, 60)
    assert before == list(range(1, 11))
    assert len(child) == 60
    assert not set(child) & set(range(1, SIZE + 1)), "the child handed out the parent's block"
    assert not set(child) & set(parent)
    assert parent[:40] == list(range(11, 51))  # the parent's block stays its own
