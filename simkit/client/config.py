"""What an application chooses about its devices (spec defaults in brackets)."""

from collections.abc import Callable

import attrs

from simkit.client.approval import APPROVE, OBSERVE
from simkit.client.schemas import Registry
from simkit.client.transport import Backoff

MAX_BATCH_OPS = 200
MAX_BATCH_BYTES = 8 * 1024 * 1024
PULL_LIMIT = 500  # the spec's maxPullLimit: a relay serves at most this many per page
LOG_PAGE = 500


@attrs.frozen
class AppConfig:
    registry: Registry = attrs.Factory(Registry)
    verify_signatures: bool = True  # [on]; an app may opt out of authorship checks
    send_metadata: bool = False  # [off]; send k and sh on push
    shard_of: Callable[[dict], str | None] | None = None  # opaque shard label of a record
    approval_mode: str = attrs.field(
        default=OBSERVE, validator=attrs.validators.in_((OBSERVE, APPROVE))
    )
    auto_grant: bool = True  # [on]; fill key gaps of approved devices while syncing
    # Who honours rotationRequired (docs/client.md, "Who rotates"): the revoker at once;
    # if the flag is still set this long after a device first saw it, times one plus the
    # device's rank among the roster's active devices, that device rotates. Staggered,
    # so two devices rarely race to mint one epoch (docs/findings.md, F1). None: only
    # the revoker ever rotates.
    rotate_after_s: float | None = 30.0
    log_verification: bool = True  # [on]
    backoff: Backoff = attrs.Factory(Backoff)
    push_debounce_s: float = 0.25  # [250 ms]
    poke_debounce_s: float = 0.25  # pokes within it join one sync run (docs/client.md)
    poll_interval_s: float = 5.0
    recheck_s: float = 30.0  # how often an idle device asks for keys and key gaps
    # One sync run over every followed graph lasts about this long at most: each graph's
    # push, pull and log read stop between requests once its even share of it has
    # passed, keep what they did, and the device runs again at once. Graphs are synced
    # one after another, so a backlog that takes minutes to read would otherwise hold
    # every other graph's key check and rotation turn back for as long
    # (docs/client.md, "How long a sync run lasts"; docs/findings.md, F30). None: no limit.
    run_budget_s: float | None = 30.0
    max_batch_ops: int = attrs.field(
        default=MAX_BATCH_OPS, validator=attrs.validators.le(MAX_BATCH_OPS)
    )
    max_batch_bytes: int = attrs.field(
        default=MAX_BATCH_BYTES, validator=attrs.validators.le(MAX_BATCH_BYTES)
    )
    pull_limit: int = attrs.field(default=PULL_LIMIT, validator=attrs.validators.ge(1))
    log_page: int = attrs.field(default=LOG_PAGE, validator=attrs.validators.ge(1))
