"""Opaque public ids: show a time-ordered key to the outside without its creation time.

:class:`UuidV47` maps a UUIDv7 key to a version 4 UUID with its timestamp masked
and back (the UUIDv47 scheme: SipHash-2-4 under the application's secret; the
key's other 74 bits, a counter in new_uuid7's keys, show as they are);
:class:`OpaqueBigint` does the same for Snowflake and other BIGINT keys (NIST
FF1, the ``fpe`` extra). The key stays ordered in the index.

User guide (what each protects against, and what it does not): docs/ids-in-apis.md.
"""

from __future__ import annotations

import importlib.util
import math
import uuid
from collections.abc import Callable, Sequence

from ._validate import parse_uuid
from .errors import InvalidOpaqueIdError, MissingExtraError

__all__ = ["OpaqueBigint", "UuidV47", "ff1_decrypt", "ff1_encrypt", "siphash24"]

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


def _sip_rounds(rounds: int, v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    """``rounds`` SipRounds of the state (v0, v1, v2, v3), each word kept to 64 bits."""
    m = _MASK64
    for _ in range(rounds):
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
    return v0, v1, v2, v3


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
    for word in words:
        v3 ^= word
        v0, v1, v2, v3 = _sip_rounds(2, v0, v1, v2, v3)  # c = 2
        v0 ^= word
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sip_rounds(4, v0, v1, v2, v3)  # d = 4
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
    guid = parse_uuid(value)
    if guid is None:
        raise InvalidOpaqueIdError(
            f"{what} takes a uuid.UUID or its text form, not {type(value).__name__} {value!r:.80}"
        )
    return guid


#: UuidV47's refusals of a UUID of the other version ({guid}; {version}: the one it has)
_NOT_A_KEY = (
    "UuidV47.encode takes a UUIDv7 (a key minted by new_uuid7 or server_uuid7()), "
    "not {guid} (version {version})"
)
_NOT_A_PUBLIC_ID = (
    "{guid} is not a public id of UuidV47 (those are version 4 UUIDs, this is "
    "version {version}): was the stored key passed instead?"
)


class UuidV47:
    """The UUIDv47 mapping under one secret: UUIDv7 keys to v4-looking public ids and back.

    Only the 48-bit timestamp is masked, as in the reference ``uuidv47.h``: the
    key's other 74 bits are shown as they are, and so is what its minter put
    there. :func:`~sqlalchemy_seqkeys.new_uuid7` keeps a counter there, so the
    public ids of keys minted within one millisecond show their order and count;
    keys with 74 random bits show neither (the user guide's "Ids in APIs" page,
    section "Hiding creation time").

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

    def _swap(self, guid: uuid.UUID, version: int) -> uuid.UUID:
        """``guid`` with its 48-bit timestamp XORed with the mask and its version set.

        The mask reads only bits the XOR leaves alone (the random ones), so the
        same step maps a key to its public id (``version=4``) and back (``7``).
        """
        value = guid.int
        timestamp = (value >> 80) ^ self._mask(value)
        value = (value & ~(_MASK48 << 80) & ~(0xF << _VERSION_SHIFT)) | (timestamp << 80)
        return uuid.UUID(int=value | (version << _VERSION_SHIFT))

    def _parse(self, value: object, method: str, version: int, refusal: str) -> uuid.UUID:
        """``value`` as a UUID of ``version`` (RFC 4122 variant), for ``UuidV47.<method>``.

        Anything else raises InvalidOpaqueIdError: not a UUID, as :func:`_as_uuid`
        words it; another version or variant, ``refusal`` with ``{guid}`` and
        ``{version}`` (the one it has) filled in.
        """
        guid = _as_uuid(value, f"UuidV47.{method}")
        if guid.version != version or guid.variant != uuid.RFC_4122:
            raise InvalidOpaqueIdError(refusal.format(guid=guid, version=guid.version))
        return guid

    def encode(self, key: uuid.UUID) -> uuid.UUID:
        """The public id of the UUIDv7 ``key``: a version 4 UUID, the timestamp hidden.

        :param key: a UUIDv7 (a ``uuid.UUID`` or its text).
        :raises InvalidOpaqueIdError: ``key`` is not a UUIDv7.

        Example::

            >>> public = UuidV47(bytes(16))
            >>> public.encode(uuid.UUID("00000000-0000-7000-8000-000000000000")).version
            4
        """
        return self._swap(self._parse(key, "encode", 7, _NOT_A_KEY), version=4)

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
        return self._swap(self._parse(public, "decode", 4, _NOT_A_PUBLIC_ID), version=7)


# -- FF1 (NIST SP 800-38G): a keyed permutation of BIGINT keys -----------------------


def _aes_ecb(key: bytes) -> Callable[[bytes], bytes]:
    """Encryption of 16-byte blocks with AES under ``key`` (16, 24 or 32 bytes)."""
    if importlib.util.find_spec("cryptography") is None:
        raise MissingExtraError(
            "FF1 needs AES from the cryptography package: pip install 'sqlalchemy-seqkeys[fpe]'"
        )
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if not isinstance(key, (bytes, bytearray)) or len(key) not in (16, 24, 32):
        shown = f"{len(key)} bytes" if isinstance(key, (bytes, bytearray)) else type(key).__name__
        raise InvalidOpaqueIdError(
            f"an FF1 key is an AES key of 16, 24 or 32 bytes, not {shown}: generate one with "
            "secrets.token_bytes(32) and keep it with the application's other secrets"
        )
    # ECB on single blocks: the CBC-MAC of FF1 is chained here, block by block
    return Cipher(algorithms.AES(bytes(key)), modes.ECB()).encryptor().update


class _FF1:
    """FF1 of one key, radix, length and tweak, on numbers (NUM_radix of the numeral strings)."""

    __slots__ = (
        "_b",
        "_cipher",
        "_d",
        "_mask_p",
        "_n",
        "_one_block",
        "_radix",
        "_tweak",
        "_u",
        "_v",
    )

    def __init__(self, key: bytes, tweak: bytes, radix: int, n: int) -> None:
        self._cipher = _aes_ecb(key)
        if not isinstance(tweak, (bytes, bytearray)):
            raise InvalidOpaqueIdError(f"an FF1 tweak is bytes, not {type(tweak).__name__}")
        if isinstance(radix, bool) or not isinstance(radix, int) or not 2 <= radix <= 2**16:
            raise InvalidOpaqueIdError(f"FF1 takes a radix from 2 to 65536, not {radix!r:.40}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 2 or radix**n < 1_000_000:
            raise InvalidOpaqueIdError(
                f"FF1 needs at least a million values (radix ** length >= 10**6): "
                f"radix {radix}, length {n!r:.40}"
            )
        self._radix, self._tweak = radix, bytes(tweak)
        self._u = n // 2
        self._v = n - self._u
        self._b = math.ceil(math.ceil(self._v * math.log2(radix)) / 8)
        self._d = 4 * math.ceil(self._b / 4) + 4
        t = len(self._tweak)
        p = (
            bytes([1, 2, 1])
            + radix.to_bytes(3, "big")
            + bytes([10, self._u % 256])
            + n.to_bytes(4, "big")
            + t.to_bytes(4, "big")
        )
        # P is the first block of every round's CBC-MAC: encrypt it once
        self._mask_p = int.from_bytes(self._cipher(p), "big")
        # Q in one block and S within R (a 63-bit key, a short tweak): the fast path of
        # _round, with the tweak's bits folded into the first block once
        self._one_block: tuple[int, int] | None = None
        if t + self._b + 1 <= 16 and self._d <= 16:
            tweak_bits = int.from_bytes(self._tweak, "big") << (8 * (16 - t)) if t else 0
            self._one_block = (self._mask_p ^ tweak_bits, 8 * (16 - self._d))

    def _round(self, i: int, b_value: int) -> int:
        """y of round i: NUM(S), S the first d bytes of the PRF output and its extensions."""
        if self._one_block is not None:
            first, shift = self._one_block
            block = (first ^ (i << (8 * self._b)) ^ b_value).to_bytes(16, "big")
            return int.from_bytes(self._cipher(block), "big") >> shift
        q = (
            self._tweak
            + bytes((-len(self._tweak) - self._b - 1) % 16)
            + bytes([i])
            + b_value.to_bytes(self._b, "big")
        )
        cipher = self._cipher
        r = self._mask_p
        for j in range(0, len(q), 16):  # CBC-MAC over P || Q, P's block already done
            r = int.from_bytes(
                cipher((r ^ int.from_bytes(q[j : j + 16], "big")).to_bytes(16, "big")), "big"
            )
        s = r.to_bytes(16, "big")
        for j in range(1, math.ceil(self._d / 16)):
            s += cipher((r ^ j).to_bytes(16, "big"))
        return int.from_bytes(s[: self._d], "big")

    def encrypt(self, a: int, b: int) -> tuple[int, int]:
        radix, u, v = self._radix, self._u, self._v
        for i in range(10):
            m = u if i % 2 == 0 else v
            a, b = b, (a + self._round(i, b)) % radix**m
        return a, b

    def decrypt(self, a: int, b: int) -> tuple[int, int]:
        radix, u, v = self._radix, self._u, self._v
        for i in range(9, -1, -1):
            m = u if i % 2 == 0 else v
            a, b = (b - self._round(i, a)) % radix**m, a
        return a, b


def _digits_to_int(digits: Sequence[int], radix: int) -> int:
    value = 0
    for digit in digits:
        if isinstance(digit, bool) or not isinstance(digit, int) or not 0 <= digit < radix:
            raise InvalidOpaqueIdError(f"{digit!r:.40} is not a digit in radix {radix}")
        value = value * radix + digit
    return value


def _int_to_digits(value: int, radix: int, length: int) -> list[int]:
    digits = [0] * length
    for k in range(length - 1, -1, -1):
        value, digits[k] = divmod(value, radix)
    return digits


def _ff1(key: bytes, tweak: bytes, radix: int, digits: Sequence[int], decrypt: bool) -> list[int]:
    if isinstance(digits, (str, bytes)) or not isinstance(digits, Sequence):
        raise InvalidOpaqueIdError("FF1 takes a sequence of int digits (most significant first)")
    ff1 = _FF1(key, tweak, radix, len(digits))
    u = len(digits) // 2
    a, b = _digits_to_int(digits[:u], radix), _digits_to_int(digits[u:], radix)
    a, b = ff1.decrypt(a, b) if decrypt else ff1.encrypt(a, b)
    return _int_to_digits(a, radix, u) + _int_to_digits(b, radix, len(digits) - u)


def ff1_encrypt(key: bytes, tweak: bytes, radix: int, digits: Sequence[int]) -> list[int]:
    """FF1 encryption (NIST SP 800-38G) of a numeral string, as a list of digits.

    :param key: the AES key, 16, 24 or 32 bytes.
    :param tweak: the tweak, any bytes (``b""`` for none).
    :param radix: the base of the digits, 2 to 65536.
    :param digits: the numeral string, most significant digit first; radix ** len >= 10**6.

    Example (NIST's FF1 sample 1)::

        >>> key = bytes.fromhex("2B7E151628AED2A6ABF7158809CF4F3C")
        >>> ff1_encrypt(key, b"", 10, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        [2, 4, 3, 3, 4, 7, 7, 4, 8, 4]
    """
    return _ff1(key, tweak, radix, digits, decrypt=False)


def ff1_decrypt(key: bytes, tweak: bytes, radix: int, digits: Sequence[int]) -> list[int]:
    """FF1 decryption, the inverse of :func:`ff1_encrypt` under the same key and tweak.

    :param key: the AES key, 16, 24 or 32 bytes.
    :param tweak: the tweak used to encrypt.
    :param radix: the base of the digits, 2 to 65536.
    :param digits: the encrypted numeral string, most significant digit first.

    Example::

        >>> key = bytes.fromhex("2B7E151628AED2A6ABF7158809CF4F3C")
        >>> ff1_decrypt(key, b"", 10, [2, 4, 3, 3, 4, 7, 7, 4, 8, 4])
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    return _ff1(key, tweak, radix, digits, decrypt=True)


class OpaqueBigint:
    """A keyed permutation of ``bits``-bit integers: public numbers for BIGINT keys.

    Snowflake ids start with their timestamp, and sequence keys count rows: a
    key shown as it is tells when a row was made or how many there are. This
    maps each key to another integer of the same width and back, with NIST's
    FF1 format-preserving encryption (SP 800-38G, AES) over the key's bits
    (radix 2): a 63-bit key gives a 63-bit public number (a non-negative
    ``BIGINT``), a 53-bit one stays exact in JavaScript. Needs the ``fpe`` extra
    (the cryptography package, for AES).

    :param key: the secret AES key, 16, 24 or 32 bytes (``secrets.token_bytes(32)``).
    :param bits: the width of the keys and of the public numbers, 20 to 64.
    :param tweak: FF1's tweak (``b""`` for none): a different tweak gives a
        different permutation under the same key, e.g. one per table.

    Example::

        public = OpaqueBigint(settings.PUBLIC_ID_KEY)  # 32 bytes, kept secret
        body = {"id": str(public.encode(tweet.id))}  # no timestamp inside
        # request_id is text: int() alone also reads "+n", " n ", "1_0" and other
        # scripts' digits, so many spellings would name one tweet. ASCII digits only:
        if not (request_id.isascii() and request_id.isdigit() and len(request_id) <= 20):
            raise NotFound(request_id)
        tweet = session.get(Tweet, public.decode(int(request_id)))

    ``decode`` raises :class:`~sqlalchemy_seqkeys.InvalidOpaqueIdError` for a
    number of more than ``bits`` bits. In a pydantic model, or a FastAPI
    parameter, ``Annotated[int, IdBits(63, as_string=True)]``
    (:mod:`sqlalchemy_seqkeys.pydantic`) reads the text as strictly.
    """

    __slots__ = ("_ff1", "bits")

    def __init__(self, key: bytes, *, bits: int = 63, tweak: bytes = b"") -> None:
        if isinstance(bits, bool) or not isinstance(bits, int) or not 20 <= bits <= 64:
            raise InvalidOpaqueIdError(
                f"OpaqueBigint(bits=...) takes 20 to 64 (FF1 needs a million values), "
                f"not {bits!r:.40}"
            )
        self.bits = bits
        self._ff1 = _FF1(key, tweak, 2, bits)

    def __repr__(self) -> str:
        return f"OpaqueBigint(<secret key>, bits={self.bits})"  # never the key

    def _check(self, value: object, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**self.bits:
            raise InvalidOpaqueIdError(
                f"OpaqueBigint.{what} takes an int from 0 to 2**{self.bits} - 1, not {value!r:.40}"
            )
        return value

    def encode(self, key: int) -> int:
        """The public number of ``key``, from 0 to ``2**bits - 1``.

        :param key: the stored key, from 0 to ``2**bits - 1``.

        Example::

            >>> public = OpaqueBigint(bytes(32))
            >>> public.decode(public.encode(1234567890123456789))
            1234567890123456789
        """
        value = self._check(key, "encode")
        low = self.bits - self.bits // 2
        a, b = self._ff1.encrypt(value >> low, value & ((1 << low) - 1))
        return (a << (self.bits - self.bits // 2)) | b

    def decode(self, public: int) -> int:
        """The stored key whose public number is ``public`` (the reverse of :meth:`encode`).

        Like any decoding of a permutation it does not authenticate: every
        number decodes to some key, which most likely matches no row.

        :param public: a public number, from 0 to ``2**bits - 1``.

        Example::

            >>> public = OpaqueBigint(bytes(32), bits=53)
            >>> public.encode(42) < 2**53
            True
        """
        value = self._check(public, "decode")
        low = self.bits - self.bits // 2
        a, b = self._ff1.decrypt(value >> low, value & ((1 << low) - 1))
        return (a << low) | b
