"""The crypto floor: microseconds per construction on this machine.

Every simulated record delivery costs at least one open and one verify, so these
figures are the floor the simulator's own cost is compared with. Verification is
measured with the signature cache off: the floor is the real work.
``receive_floor_us`` is the other floor: a device's whole receive path for one op
once the cache holds the record's verdict.
"""

from typing import NamedTuple

from simkit.bench import BenchRow, per_call_us
from simkit.client.receive import Opened, check_op
from simkit.client.schemas import Registry
from simkit.errors import SimkitError
from simkit.protocol import (
    DeviceKeys,
    SeededEntropy,
    open_record,
    seal_record,
    sign_record,
    unwrap_graph_key,
    verify_record,
    wrap_graph_key,
)
from simkit.protocol.keys import verify_bytes
from simkit.protocol.primitives import PBKDF2_ITERATIONS, pbkdf2_sha256
from simkit.protocol.records import record_signing_bytes
from simkit.protocol.sigcache import SIGNATURES


class _Note(NamedTuple):
    """One typical note, signed and sealed by one device."""

    entropy: SeededEntropy
    device: DeviceKeys
    graph_key: bytes
    record: dict
    signature: str
    envelope: dict
    n: str
    c: str

    @classmethod
    def make(cls) -> "_Note":
        entropy = SeededEntropy("bench-crypto")
        device = DeviceKeys.generate(entropy)
        graph_key = entropy.token_bytes(32)
        record = {
            "id": "note-1",
            "kind": "note",
            "data": {"title": "A typical note", "body": "x" * 200, "tags": ["a", "b"]},
            "at": 1_700_000_000_000,
            "by": "alice",
        }
        signature = sign_record(device.sign_key, "g:team", record)
        envelope = {"v": 1, "r": record, "d": "dev-1", "s": signature}
        n, c = seal_record(graph_key, "g:team", envelope, entropy=entropy)
        return cls(entropy, device, graph_key, record, signature, envelope, n, c)


def run(quick: bool = False, only: tuple[str, ...] = ()) -> list[BenchRow]:
    """Time per construction, µs or (from 10 ms) ms per op (``only``: just these)."""
    entropy, device, graph_key, record, signature, envelope, n, c = _Note.make()
    wrapped = wrap_graph_key(graph_key, device.pub_jwk, entropy=entropy)
    signing_bytes = record_signing_bytes("g:team", record)
    sig_jwk = device.sig_jwk  # a roster entry's JWK, as a receiver holds it
    seconds = 0.05 if quick else 0.3
    cases = {
        "seal": lambda: seal_record(graph_key, "g:team", envelope, entropy=entropy),
        "open": lambda: open_record(graph_key, "g:team", "note-1", n, c),
        "sign": lambda: sign_record(device.sign_key, "g:team", record),
        "verify": lambda: verify_record(sig_jwk, "g:team", record, signature),
        "verify (bytes only)": lambda: verify_bytes(sig_jwk, signing_bytes, signature),
        "wrap": lambda: wrap_graph_key(graph_key, device.pub_jwk, entropy=entropy),
        "unwrap": lambda: unwrap_graph_key(wrapped, device.wrap_key),
        # uncached: the process remembers equal inputs (primitives.pbkdf2_sha256)
        "pbkdf2 (310,000 iterations)": lambda: pbkdf2_sha256.__wrapped__(
            b"passphrase", b"0123456789abcdef", PBKDF2_ITERATIONS, 32
        ),
    }
    with SIGNATURES.switched(False):
        return [
            _row(name, per_call_us(fn, min_seconds=seconds))
            for name, fn in cases.items()
            if not only or name in only
        ]


MS_FROM_US = 10_000
"""From 10,000 µs a figure reads better in milliseconds (PBKDF2: 71.0 ms/op)."""


def _row(name: str, us: float) -> BenchRow:
    if us >= MS_FROM_US:
        return BenchRow("crypto", name, us / 1000, "ms/op")
    return BenchRow("crypto", name, us, "µs/op")


def delivery_floor_us() -> float:
    """Open plus verify (uncached): the least one record delivery can cost."""
    rows = run(quick=True, only=("open", "verify"))
    return sum(row.value * (1000 if row.unit == "ms/op" else 1) for row in rows)


def receive_floor_us() -> float:
    """One op through a device's whole receive path (client rule 2: open, envelope,
    schema, roster, author, signature) with the signature cache warm: what each
    delivery costs a device once another device has verified the record."""
    note = _Note.make()
    op = {"recordId": "note-1", "rev": note.record["at"], "e": 1, "n": note.n, "c": note.c}
    roster = {"dev-1": {"deviceId": "dev-1", "memberId": "alice", "sigJwk": note.device.sig_jwk}}
    registry = Registry()

    def receive() -> object:
        return check_op(
            op, storage_key="g:team", graph_key=note.graph_key, roster=roster,
            registry=registry, verify_signatures=True,
        )  # fmt: skip

    with SIGNATURES.switched(True):
        outcome = receive()  # the first device's verification fills the cache
        if not isinstance(outcome, Opened):
            raise SimkitError(f"the bench record was refused: {outcome}")
        return per_call_us(receive, min_seconds=0.3)
