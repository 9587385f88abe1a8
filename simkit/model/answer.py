"""What the model expects a relay to answer, and how an actual answer is held against it.

An ``Expected`` names the spec rules that decided it, by their catalogue IDs
(simkit/model/catalogue.toml), so every mismatch reads as a sentence about the spec
("pipeline step 4: expected 403 device-not-registered, got 404 not-found") and carries
the rules it is about (``Mismatch.rules``): what a variant's declaration is held against.
"""

import json

import attrs

from simkit.errors import EncodingError
from simkit.model.catalogue import rule_id
from simkit.protocol.canonical import compact_json, parse_json
from simkit.protocol.http import Response

JSON = "application/json"


def _ids(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(rule_id(r) for r in ((value,) if isinstance(value, str) else value))


class Mismatch(str):
    """A model finding: its sentence, and the catalogue IDs of the rules it is about.
    A ``str``, so that it prints, joins and compares as its sentence wherever findings
    are read; ``rules`` is what a declaration is matched against (exactly, by ID)."""

    rules: tuple[str, ...]

    def __new__(cls, text: str, rules: tuple[str, ...] = ()) -> "Mismatch":
        self = super().__new__(cls, text)
        self.rules = tuple(rules)
        return self


@attrs.frozen
class Expected:
    """One predicted answer.

    ``rules``: the catalogue IDs of the rules that decided it; ``note``: which part of
    them, in words; ``members``: for a JSON success, the rules that decide a body member
    when they are not all of ``rules`` (a push answer's ``now`` is ``push: now``).
    ``body``: for a JSON success every member of the answer; for an error the
    members a client acts on (``error`` and the documented extras such as
    ``need``), while ``message`` is a free choice and never compared. ``raw``:
    the bytes of a blob download. ``headers``: the headers that matter.
    ``encoded``: a JSON success's body as the relay encodes its answers
    (``compact_json``); equal bytes are the same answer, whatever else is walked.
    """

    status: int
    rules: tuple[str, ...] = attrs.field(converter=_ids)
    note: str | None = None
    _body: dict | None = None
    raw: bytes | None = None
    headers: dict[str, str] = attrs.Factory(dict)
    encoded: bytes | None = None
    members: dict[str, tuple[str, ...]] = attrs.Factory(dict)

    @property
    def rule(self) -> str:
        """The rules as a finding's sentence begins: ``push rule 1, push rule 4 (...)``."""
        named = ", ".join(self.rules)
        return f"{named} ({self.note})" if self.note else named

    @property
    def body(self) -> dict | None:
        return self._body if self.encoded is None else parse_json(self.encoded)

    @property
    def error(self) -> str | None:
        return None if self.status == 200 or self._body is None else self._body.get("error")

    def rules_of(self, member: str | None) -> tuple[str, ...]:
        """The rules that decide a body member (all of them for the answer as a whole)."""
        return self.members.get(member, self.rules) if member else self.rules


def ok(
    rules: str | tuple[str, ...], body: dict, note: str | None = None,
    members: dict[str, str | tuple[str, ...]] | None = None,
) -> Expected:  # fmt: skip
    """A JSON success, kept encoded: later changes to the model cannot reach it, and an
    answer the relay encoded the same way is recognised by its bytes."""
    encoded = compact_json(body).encode("ascii")
    by_member = {name: _ids(ids) for name, ids in (members or {}).items()}
    return Expected(200, rules, note, headers={"content-type": JSON}, encoded=encoded,
                    members=by_member)  # fmt: skip


class Refuse(Exception):
    """A step of the model refuses the request; carries the expected error answer."""

    def __init__(
        self, status: int, code: str, rules: str | tuple[str, ...], note: str | None = None,
        headers: dict | None = None, **extra: object,
    ) -> None:  # fmt: skip
        self.expected = Expected(
            status,
            rules,
            note,
            {"error": code, **extra},
            headers={"content-type": JSON, **(headers or {})},
        )
        super().__init__(f"{self.expected.rule}: {status} {code}")


def invalid(rules: str | tuple[str, ...], note: str | None = None) -> Refuse:
    """The spec's ``400 invalid``: the request does not fit its schema."""
    return Refuse(400, "invalid", rules, note)


_SORTED = json.JSONEncoder(sort_keys=True, check_circular=False).encode


def same(a: object, b: object) -> bool:
    """JSON equality: one number type, but ``true`` is not ``1``. Values that Python
    calls equal and that encode to the same text are the same (C code, the usual
    case); anything else is walked."""
    try:
        if a == b and _SORTED(a) == _SORTED(b):
            return True
    except (TypeError, ValueError):
        pass
    return _walk(a, b)


def _walk(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_walk(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_walk(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def show(value: object, width: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def first_difference(where: str, want: object, got: object) -> str | None:
    """The path of the first place two JSON values differ, with both values there."""
    if same(want, got):
        return None
    if isinstance(want, dict) and isinstance(got, dict):
        for name in sorted(want.keys() | got.keys()):
            if name not in got:
                return f"{where} lacks {name!r} (expected {show(want[name])})"
            if name not in want:
                return f"{where} has unexpected {name!r} = {show(got[name])}"
            found = first_difference(f"{where}.{name}", want[name], got[name])
            if found:
                return found
    if isinstance(want, list) and isinstance(got, list):
        for i, (x, y) in enumerate(zip(want, got, strict=False)):
            found = first_difference(f"{where}[{i}]", x, y)
            if found:
                return found
        return f"{where} has {len(got)} items, expected {len(want)}"
    return f"{where} expected {show(want)}, got {show(got)}"


def _error_code(response: Response) -> str:
    try:
        body = parse_json(response.body)
    except EncodingError:
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""


def compare(expected: Expected, response: Response) -> list[Mismatch]:
    """The mismatches between a predicted and an actual answer (empty when they agree),
    each naming the rules that decide what differs."""
    rule = expected.rule

    def found(text: str, member: str | None = None) -> Mismatch:
        return Mismatch(f"{rule}: {text}", expected.rules_of(member))

    if response.status != expected.status:
        want = f"{expected.status} {expected.error or ''}".strip()
        got = f"{response.status} {_error_code(response)}".strip()
        return [found(f"expected {want}, got {got}")]
    findings = []
    headers = {name.lower(): value for name, value in response.headers.items()}
    for name, value in expected.headers.items():
        got = headers.get(name)
        if name == "content-type" and got is not None:
            got = got.split(";")[0].strip().lower()
        if got != value:
            findings.append(found(f"header {name} expected {value!r}, got {got!r}"))
    if response.body == expected.encoded:
        return findings
    if expected.raw is not None:
        if response.body != expected.raw:
            findings.append(found(
                f"body expected {len(expected.raw)} bytes "
                f"{show(expected.raw, 40)}, got {len(response.body)} {show(response.body, 40)}"
            ))  # fmt: skip
        return findings
    try:
        body = parse_json(response.body)
    except EncodingError as exc:
        return [*findings, found(f"the answer is not JSON ({exc})")]
    if not isinstance(body, dict):
        return [*findings, found(f"the answer is {show(body)}, not a JSON object")]
    want = expected.body or {}
    if expected.status != 200:  # an error: only the members a client acts on
        body = {name: body[name] for name in want if name in body}
    for name in sorted(want.keys() | body.keys()):  # the first member that differs
        difference = first_difference("body", {name: want.get(name)} if name in want else {},
                                      {name: body[name]} if name in body else {})  # fmt: skip
        if difference:
            return [*findings, found(difference, name)]
    return findings
