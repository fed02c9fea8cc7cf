"""``BlockStore`` (sequences/_allocator.py): a state forgotten while a caller was
looking it up is never served again.

A sequence created or dropped anew makes every store forget its states
(``forget()``); a caller that had just read a former state from the store put
it back in the one-entry cache afterwards, and every later call on the same
engine took values from the former sequence's block: values the new sequence
hands out again.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sqlalchemy_seqkeys.sequences._allocator import Blocks, BlockStore


def test_a_state_forgotten_during_its_lookup_is_not_cached() -> None:
    made: list[Blocks] = []
    store: BlockStore[Blocks] = BlockStore(lambda bind, owner: _new(store, made))
    engine = sa.create_engine("sqlite://")
    first = store.of(engine)  # forgotten while it was made: a drop and create meanwhile
    assert first is made[0]
    again = store.of(engine)
    assert again is not first  # was the forgotten one, for as long as the engine lived
    assert store.of(engine) is again  # and the new one is cached as usual
    engine.dispose()


def _new(store: BlockStore[Blocks], made: list[Blocks]) -> Blocks:
    state = Blocks()
    made.append(state)
    if len(made) == 1:
        store.forget()  # what another thread's drop() and create() do, at this moment
    return state


def test_a_state_looked_up_after_a_forget_is_cached() -> None:
    store: BlockStore[Any] = BlockStore(lambda bind, owner: Blocks())
    engine = sa.create_engine("sqlite://")
    before = store.of(engine)
    store.forget()
    after = store.of(engine)
    assert after is not before
    assert store.of(engine) is after
    engine.dispose()
