"""Opaque public ids: show a UUIDv7 key to the outside without its creation time.

A UUIDv7 key starts with the millisecond it was minted, so anyone who sees it
reads when the row was created (a user's sign-up time, an order's). The
UUIDv47 scheme (https://github.com/stateless-me/uuidv47) keeps the key a
UUIDv7 in the database, where it sorts and indexes well, and shows the outside
a UUID that looks like a random version 4 one:

- ``encode``: the 48-bit timestamp is XORed with 48 bits of SipHash-2-4 of the
  key's 74 random bits under a secret 128-bit key, and the version nibble
  becomes 4. The random bits are kept as they are;
- ``decode``: the same mask (the random bits are unchanged, so it can be
  computed again) restores the timestamp, and the version becomes 7.

The mapping is exact and invertible, and the same as the reference C
implementation's (the tests check its published vectors), so ids can cross
services written in other languages::

    >>> import uuid
    >>> from sqlalchemy_seqkeys import UuidV47
    >>> k0, k1 = 0x0123456789ABCDEF, 0xFEDCBA9876543210  # the reference's test key
    >>> facade = UuidV47(k0.to_bytes(8, "little") + k1.to_bytes(8, "little"))
    >>> key = uuid.UUID("018f2d9f-9a2a-7def-8c3f-7b1a2c4d5e6f")
    >>> facade.encode(key)
    UUID('2463c780-7fca-4def-8c3f-7b1a2c4d5e6f')
    >>> facade.decode(facade.encode(key)) == key
    True

What it protects: the creation time (and so the order and the rate of
creation) of keys an outsider sees, as long as the secret stays secret;
SipHash-2-4 is a keyed pseudo-random function, and its key cannot be recovered
from ids. What it does not: it is not encryption of the key. The 74 random
bits are shown unchanged, so the facade is as unique and as guessable as the
key itself, and one key's facade identifies the row as well as the key does
(authorise every access as you would with the key). Decoding does not
authenticate: any version 4 UUID decodes to some UUIDv7, which most likely
matches no row. Two keys with the same random bits (a duplicate in 2**74)
would reveal the XOR of their timestamps. Rotating the secret changes every
external id: keep old secrets for decoding (store which one an id was issued
under) or accept that old links break.
"""

from __future__ import annotations

import uuid

from .errors import InvalidOpaqueIdError

__all__ = ["UuidV47", "siphash24"]

_MASK64 = 0xFFFFFFFFFFFFFFFF
_MASK48 = 0xFFFFFFFFFFFF
#: the bits of a UUID's version nibble and variant (bits 76-79 and 62-63)
_VERSION_SHIFT = 76
_RANDOM_A = 0x0FFF << 64  # rand_a: 12 bits under the version nibble
_RANDOM_B = (1 << 62) - 1  # rand_b: 62 bits under the variant


def _check_key(key: object) -> tuple[int, int]:
    if not isinstance(key, (bytes, bytearray)) or len(key) != 16:
        shown = f"{len(key)} bytes" if isinstance(key, (bytes, bytearray)) else type(key).__name__
        raise InvalidOpaqueIdError(
            f"the secret key is 16 bytes (128 bits), not {shown}: generate one with "
            "secrets.token_bytes(16) and keep it with the application's other secrets"
        )
    return int.from_bytes(key[:8], "little"), int.from_bytes(key[8:], "little")


def _siphash24(k0: int, k1: int, data: bytes) -> int:
    v0 = 0x736F6D6570736575 ^ k0
    v1 = 0x646F72616E646F6D ^ k1
    v2 = 0x6C7967656E657261 ^ k0
    v3 = 0x7465646279746573 ^ k1
    n = len(data)
    end = n - n % 8
    # the message words, then the last block: the length's low byte over the tail
    words = [int.from_bytes(data[i : i + 8], "little") for i in range(0, end, 8)]
    words.append(((n & 0xFF) << 56) | int.from_bytes(data[end:], "little"))
    m = _MASK64
    for word in words:
        v3 ^= word
        for _ in range(2):  # SipRound, c = 2
            v0 = (v0 + v1) & m
            v1 = ((v1 << 13) | (v1 >> 51)) & m ^ v0
            v0 = ((v0 << 32) | (v0 >> 32)) & m
            v2 = (v2 + v3) & m
            v3 = ((v3 << 16) | (v3 >> 48)) & m ^ v2
            v0 = (v0 + v3) & m
            v3 = ((v3 << 21) | (v3 >> 43)) & m ^ v0
            v2 = (v2 + v1) & m
            v1 = ((v1 << 17) | (v1 >> 47)) & m ^ v2
            v2 = ((v2 << 32) | (v2 >> 32)) & m
        v0 ^= word
    v2 ^= 0xFF
    for _ in range(4):  # SipRound, d = 4
        v0 = (v0 + v1) & m
        v1 = ((v1 << 13) | (v1 >> 51)) & m ^ v0
        v0 = ((v0 << 32) | (v0 >> 32)) & m
        v2 = (v2 + v3) & m
        v3 = ((v3 << 16) | (v3 >> 48)) & m ^ v2
        v0 = (v0 + v3) & m
        v3 = ((v3 << 21) | (v3 >> 43)) & m ^ v0
        v2 = (v2 + v1) & m
        v1 = ((v1 << 17) | (v1 >> 47)) & m ^ v2
        v2 = ((v2 << 32) | (v2 >> 32)) & m
    return v0 ^ v1 ^ v2 ^ v3


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 of ``data`` under the 16-byte ``key``, as the 64-bit integer it defines.

    Pure Python, checked against the reference vectors of the SipHash paper
    (Aumasson and Bernstein, 2012) and its reference implementation. The
    paper writes the output as 8 little-endian bytes: ``value.to_bytes(8, "little")``.

    :param key: 16 bytes; the paper's ``k0`` is the first 8 read little-endian.
    :param data: the message, any length.

    Example (the paper's Appendix A)::

        >>> hex(siphash24(bytes(range(16)), bytes(range(15))))
        '0xa129ca6149be45e5'
    """
    k0, k1 = _check_key(key)
    if not isinstance(data, (bytes, bytearray)):
        raise InvalidOpaqueIdError(
            f"siphash24 hashes bytes, not {type(data).__name__}; encode text first"
        )
    return _siphash24(k0, k1, bytes(data))


def _as_uuid(value: object, what: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise InvalidOpaqueIdError(
        f"{what} takes a uuid.UUID or its text form, not {type(value).__name__} {value!r:.80}"
    )


class UuidV47:
    """The UUIDv47 mapping under one secret: UUIDv7 keys to v4-looking public ids and back.

    :param key: the secret, 16 bytes (``secrets.token_bytes(16)``). The
        reference implementations take it as two 64-bit words ``k0, k1``:
        ``k0.to_bytes(8, "little") + k1.to_bytes(8, "little")``.

    Example::

        import secrets
        public = UuidV47(settings.PUBLIC_ID_KEY)  # 16 bytes, kept secret
        body = {"id": str(public.encode(order.id))}  # no timestamp inside
        order = session.get(Order, public.decode(request_id))
    """

    __slots__ = ("_k0", "_k1")

    def __init__(self, key: bytes) -> None:
        self._k0, self._k1 = _check_key(key)

    def __repr__(self) -> str:
        return "UuidV47(<secret key>)"  # never the key

    def _mask(self, value: int) -> int:
        # SipHash of the 74 random bits, as the reference lays them out in 10 bytes:
        # [rand_a's high nibble][rand_a's low byte][rand_b's top 6 bits][rand_b's other 7 bytes]
        message = value & (_RANDOM_A | _RANDOM_B)
        return _siphash24(self._k0, self._k1, message.to_bytes(10, "big")) & _MASK48

    def encode(self, key: uuid.UUID) -> uuid.UUID:
        """The public id of the UUIDv7 ``key``: a version 4 UUID, the timestamp hidden.

        :param key: a UUIDv7 (a ``uuid.UUID`` or its text).
        :raises InvalidOpaqueIdError: ``key`` is not a UUIDv7.

        Example::

            >>> public = UuidV47(bytes(16))
            >>> public.encode(uuid.UUID("00000000-0000-7000-8000-000000000000")).version
            4
        """
        guid = _as_uuid(key, "UuidV47.encode")
        if guid.version != 7 or guid.variant != uuid.RFC_4122:
            raise InvalidOpaqueIdError(
                f"UuidV47.encode takes a UUIDv7 (a key minted by new_uuid7 or uuidv7()), "
                f"not {guid} (version {guid.version})"
            )
        value = guid.int
        timestamp = (value >> 80) ^ self._mask(value)
        value = (value & ~(_MASK48 << 80) & ~(0xF << _VERSION_SHIFT)) | (timestamp << 80)
        return uuid.UUID(int=value | (4 << _VERSION_SHIFT))

    def decode(self, public: uuid.UUID | str) -> uuid.UUID:
        """The UUIDv7 key whose public id is ``public`` (the reverse of :meth:`encode`).

        It does not authenticate: any version 4 UUID decodes to some UUIDv7,
        which then matches no row unless it was issued.

        :param public: a public id (a ``uuid.UUID`` or its text, as a client sends it).
        :raises InvalidOpaqueIdError: ``public`` is not a version 4 UUID.

        Example::

            >>> public = UuidV47(bytes(16))
            >>> key = uuid.UUID("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10")
            >>> public.decode(str(public.encode(key))) == key
            True
        """
        guid = _as_uuid(public, "UuidV47.decode")
        if guid.version != 4 or guid.variant != uuid.RFC_4122:
            raise InvalidOpaqueIdError(
                f"{guid} is not a public id of UuidV47 (those are version 4 UUIDs, this is "
                f"version {guid.version}): was the stored key passed instead?"
            )
        value = guid.int
        timestamp = (value >> 80) ^ self._mask(value)
        value = (value & ~(_MASK48 << 80) & ~(0xF << _VERSION_SHIFT)) | (timestamp << 80)
        return uuid.UUID(int=value | (7 << _VERSION_SHIFT))
