"""What a check works with: identities, requests through a target, and small helpers.

Checks see only what HTTP shows: status, headers and bodies. Each identity's
credential comes from the ``--auth`` file (``Authorization: Bearer <token>``).
Answers ``429`` are waited out and retried (client rule 10) unless a check asks
for the raw answer, so the relay's rate limits never fail an unrelated check.
"""

import functools
import json
from collections.abc import Iterable

import attrs

from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.keys import DeviceKeys
from simkit.relay import Request, Response
from simkit.wire.conform.check import Failed, Skipped
from simkit.wire.members import Directory
from simkit.wire.target import Target

NONCE = "bm9uY2Vub25jZTEy"  # 12 bytes, base64url: an op's `n` and a blob's x-blob-nonce
PEERS = tuple(f"peer{i}" for i in range(1, 31))  # members without devices (fresh d: graphs)
MAX_429_RETRIES = 100


@attrs.frozen
class Who:
    """An identity a check acts as, and its bearer token."""

    member: str
    device: str
    token: str

    def __str__(self) -> str:
        return f"{self.member}/{self.device}"


class Answer:
    """A response, with its JSON body parsed on first use."""

    def __init__(self, response: Response, what: str) -> None:
        self.status = response.status
        self.headers = response.headers
        self.body = response.body
        self.what = what

    def json(self) -> object:
        try:
            return json.loads(self.body)
        except ValueError:
            raise Failed(
                f"{self.what}: answer {self.status} is not JSON: {self.body[:80]!r}"
            ) from None

    def field(self, name: str) -> object:
        body = self.json()
        if not isinstance(body, dict) or name not in body:
            raise Failed(f"{self.what}: answer has no {name!r}: {self.show()}")
        return body[name]

    @property
    def code(self) -> object:
        """The ``error`` member of a JSON object body, else ``None``."""
        try:
            body = json.loads(self.body)
        except ValueError:
            return None
        return body.get("error") if isinstance(body, dict) else None

    def show(self) -> str:
        text = self.body[:160].decode("utf-8", "replace")
        return f"{self.status} {text}{'...' if len(self.body) > 160 else ''}"

    def expect(self, status: int, code: str | None = None) -> "Answer":
        """This answer has ``status`` (and error ``code``), else the check fails."""
        if self.status != status or (code is not None and self.code != code):
            wanted = f"{status} {code}" if code else str(status)
            raise Failed(f"{self.what}: expected {wanted}, got {self.show()}")
        return self

    def expect_refused(self) -> "Answer":
        """A 4xx answer (the spec names no status, only that the request is refused)."""
        if not 400 <= self.status < 500:
            raise Failed(f"{self.what}: expected a 4xx refusal, got {self.show()}")
        return self


def op(record_id: str, rev: int, c: str = "Y2lwaGVy", **extra: object) -> dict:
    """A GraphOpIn with a fixed nonce."""
    return {"recordId": record_id, "rev": rev, "n": NONCE, "c": c, **extra}


class Context:
    """One conformance run against one target."""

    def __init__(self, target: Target, auth: Directory) -> None:
        self.target = target
        self.auth = auth
        self._registered: set[str] = set()
        self._peers: dict[str, list[str]] = {}
        self._revoked: Who | None = None

    # --- identities ---------------------------------------------------------------

    def who(self, member: str, device: str) -> Who:
        token = self.auth.token_for(member, device)
        if token is None:
            raise Skipped(f"the --auth file has no token for {member}/{device}")
        return Who(member, device, token)

    @staticmethod
    @functools.cache
    def keys(device: str) -> DeviceKeys:
        """The device's keypairs: real P-256 keys, the same for the same device ID."""
        return DeviceKeys.generate(SeededEntropy("simkit-conform", device))

    def device_body(self, who: Who, generation: int = 0) -> dict:
        keys = self.keys(who.device if not generation else f"{who.device}/{generation}")
        self_sig = keys.self_sig(who.member)
        return {"pubJwk": keys.pub_jwk, "sigJwk": keys.sig_jwk, "selfSig": self_sig}

    def registered(self, who: Who) -> Who:
        """``who`` with its device registered (once per run)."""
        if str(who) not in self._registered:
            path = f"/devices/{who.device}"
            self.call(who, "PUT", path, json_body=self.device_body(who)).expect(200)
            self._registered.add(str(who))
        return who

    def member(self, member: str, device: str) -> Who:
        """A registered identity."""
        return self.registered(self.who(member, device))

    def revoked(self) -> Who:
        """alice's device a6: registered, then revoked by a1 (once per run)."""
        if self._revoked is None:
            a1, a6 = self.member("alice", "a1"), self.member("alice", "a6")
            self.call(a1, "POST", "/devices/a6/revoke").expect(200)
            self._revoked = a6
        return self._revoked

    def fresh_pair(self, who: Who) -> str:
        """A pairwise graph ``d:peerN`` this run has not used for ``who``'s member yet."""
        used = self._peers.setdefault(who.member, [])
        free = [p for p in PEERS if p not in used]
        if not free:
            raise Skipped(f"all {len(PEERS)} peers of {who.member} are used")
        used.append(free[0])
        return f"d:{free[0]}"

    # --- requests -----------------------------------------------------------------

    def call(
        self,
        who: Who | None,
        method: str,
        path: str,
        *,
        json_body: object = None,
        body: bytes = b"",
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
    ) -> Answer:
        """Send one request as ``who`` (``None``: no credential). A 429 is waited out
        and retried unless ``raw``."""
        sent = dict(headers or {})
        if who is not None:
            sent["authorization"] = f"Bearer {who.token}"
        if json_body is not None:
            body = json.dumps(json_body).encode()
            sent.setdefault("content-type", "application/json")
        request = Request(method, path, query, sent, body)
        what = f"{method} {path}" + (f" as {who}" if who else "")
        for _ in range(MAX_429_RETRIES):
            answer = Answer(self.target.send(request), what)
            if answer.status != 429 or raw:
                return answer
            self.target.wait(retry_after_ms(answer))
        raise Failed(f"{what}: still 429 after {MAX_429_RETRIES} waits")

    def push(self, who: Who, gid: str, ops: list[dict]) -> Answer:
        return self.call(who, "POST", f"/graphs/{gid}/push", json_body={"ops": ops})

    def pushed(self, who: Who, gid: str, ops: list[dict]) -> dict:
        """Push in batches of at most 200 ops; the last answer's body."""
        answer: dict = {}
        for start in range(0, max(len(ops), 1), 200):
            batch = ops[start : start + 200]
            answer = self.push(who, gid, batch).expect(200).json()
        return answer

    def pull(self, who: Who, gid: str, **query: str) -> dict:
        return self.call(who, "GET", f"/graphs/{gid}/pull", query=query).expect(200).json()

    def pull_all(self, who: Who, gid: str, after: int = 0) -> list[dict]:
        """Every op above ``after``, page by page."""
        ops: list[dict] = []
        for _ in range(10_000):
            page = self.pull(who, gid, after=str(after))
            ops += page["ops"]
            if not page["more"]:
                return ops
            after = page["cursor"]
        raise Failed(f"pull of {gid} never ends (more stays true)")

    def log(self, who: Who, gid: str, **query: str) -> dict:
        return self.call(who, "GET", f"/graphs/{gid}/log", query=query).expect(200).json()

    def now(self, who: Who, gid: str) -> int:
        """The relay's clock, from the ``now`` of an empty push."""
        now = self.push(who, gid, []).expect(200).field("now")
        if not isinstance(now, int):
            raise Failed(f"push answer's now is not an integer: {now!r}")
        return now

    def put_keys(
        self, who: Who, gid: str, epoch: int, wraps: dict[str, str], **extra: object
    ) -> Answer:
        body = {"epoch": epoch, "wraps": [{"deviceId": d, "wrapped": w} for d, w in wraps.items()]}
        return self.call(who, "POST", f"/graphs/{gid}/keys", json_body=body | extra)

    def get_keys(self, who: Who, gid: str) -> dict:
        return self.call(who, "GET", f"/graphs/{gid}/keys").expect(200).json()

    def eligible(self, who: Who, gid: str) -> list[str]:
        """Device IDs a new epoch must reach: the roster's active devices (the check's
        graphs have only current members in their roster)."""
        roster = self.call(who, "GET", f"/graphs/{gid}/devices").expect(200).field("devices")
        return [d["deviceId"] for d in roster if d.get("revokedAt") is None]

    def init_keys(self, who: Who, gid: str, epoch: int = 1) -> dict[str, str]:
        """Mint ``epoch`` wrapping every eligible device; the wraps sent."""
        wraps = {device: f"w{epoch}-{device}" for device in self.eligible(who, gid)}
        self.put_keys(who, gid, epoch, wraps).expect(200)
        return wraps

    def upload(
        self, who: Who, gid: str, blob_id: str, data: bytes, raw: bool = False, **query: str
    ) -> Answer:
        headers = {"content-type": "application/octet-stream", "x-blob-nonce": NONCE}
        path = f"/graphs/{gid}/blobs/{blob_id}"
        return self.call(who, "POST", path, body=data, query=query, headers=headers, raw=raw)


def retry_after_ms(answer: Answer) -> int:
    """How long a 429 asks to wait: ``retryAfterMs`` if given, else ``retry-after`` seconds."""
    try:
        wait = json.loads(answer.body).get("retryAfterMs")
        if isinstance(wait, int) and 0 <= wait <= 60_000:
            return max(wait, 1)
    except (ValueError, AttributeError):
        pass
    try:
        return min(max(int(answer.headers.get("retry-after", "1")), 0), 60) * 1000 or 1
    except ValueError:
        return 1000


def unmentioned(answer: Answer, values: Iterable[str]) -> list[str]:
    """Which of ``values`` the answer's body does not mention (as JSON strings)."""
    text = answer.body.decode("utf-8", "replace")
    return [v for v in values if json.dumps(v) not in text]
