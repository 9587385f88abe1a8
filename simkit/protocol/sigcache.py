"""The signature-verification cache: one process-wide memo of ECDSA verdicts.

Verifying is a pure function of (public key, bytes, signature), so when a hundred
devices receive the same record, the first one's verdict serves the other
ninety-nine: no outcome changes, only the wall time. It is on by default;
``simkit ... --no-crypto-cache`` turns it off and reports say which was used.
Eviction is first-in first-out, which, for a pure function, is as correct as any.
"""

import contextlib
from collections.abc import Iterator

import attrs


@attrs.define
class SignatureCache:
    enabled: bool = True
    max_entries: int = 1 << 18
    hits: int = 0
    misses: int = 0
    _verdicts: dict = attrs.Factory(dict)

    def lookup(self, key: tuple) -> bool | None:
        """The remembered verdict for ``key``, or None (also when disabled)."""
        if not self.enabled:
            return None
        verdict = self._verdicts.get(key)
        if verdict is None:
            self.misses += 1
        else:
            self.hits += 1
        return verdict

    def remember(self, key: tuple, verdict: bool) -> None:
        if not self.enabled:
            return
        if len(self._verdicts) >= self.max_entries:
            del self._verdicts[next(iter(self._verdicts))]
        self._verdicts[key] = verdict

    def configure(self, enabled: bool) -> None:
        """Turn the cache on or off, forgetting every verdict and count."""
        self.enabled = enabled
        self.hits = self.misses = 0
        self._verdicts.clear()

    def describe(self) -> str:
        return "on" if self.enabled else "off"

    @contextlib.contextmanager
    def switched(self, enabled: bool) -> Iterator[None]:
        """Run a block with the cache on or off, then restore the setting."""
        before = self.enabled
        self.configure(enabled)
        try:
            yield
        finally:
            self.configure(before)


SIGNATURES = SignatureCache()
