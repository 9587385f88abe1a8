"""The Mermaid sequence diagram of the window that matters (``data.window``): the
relay and the devices as participants, requests and responses as arrows, and
faults, crashes, alarms and rejections as notes, in trace order. The focus (the
first violation or alarm) is highlighted.

Text is escaped with Mermaid's entity codes (``#35;`` for ``#``): a raw ``#`` or
``;`` ends a message, and ``<``/``>``/``&`` would be read as HTML.
"""

import re
import textwrap

from simkit.report.data import RELAY, Story, label, window

_ENTITIES = str.maketrans({c: f"#{ord(c)};" for c in '#;<>&%"{}'})
_KEYWORDS = frozenset(
    {
        "participant", "actor", "as", "note", "over", "left", "right", "of", "loop", "alt",
        "else", "opt", "par", "and", "rect", "critical", "break", "box", "end", "autonumber",
        "activate", "deactivate", "create", "destroy", "title",
    }
)  # fmt: skip
HIGHLIGHT = "rgb(255, 224, 224)"
NOTE_CHARS = 72  # a note's lines are broken (with <br/>) to stay about this wide


def text(value: str) -> str:
    """One line of diagram text, safe anywhere after a ``:``."""
    return " ".join(value.split()).translate(_ENTITIES)


def _ident(name: str) -> str:
    """A participant ID Mermaid cannot misread (declared with ``as name`` if it differs)."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII)
    if not ident[:1].isalpha() or ident.lower() in _KEYWORDS:
        ident = f"p_{ident}"
    return ident


def sequence_diagram(story: Story) -> str:
    chosen, lo, hi = window(story)
    by_seq = {x.seq: x for x in chosen}
    by_end = {x.end_seq: x for x in chosen if x.end_seq is not None}
    by_key = {(x.device, x.xid): x for x in chosen}
    moments = {m.seq: m for m in story.moments}
    focus = story.focus
    body: list[tuple[str, str]] = []  # (the participant a line is about, the line)

    def note(over: str, line: str, highlight: bool = False) -> None:
        lines = textwrap.wrap(
            text(line), NOTE_CHARS, break_long_words=False, break_on_hyphens=False
        )
        entry = (over, f"Note over {{{over}}}: {'<br/>'.join(lines)}")
        body.extend([("", f"rect {HIGHLIGHT}"), entry, ("", "end")] if highlight else [entry])

    for e in story.events[lo : hi + 1]:
        stamp = f"[{e.t:.3f}]"
        key = (e.fields.get("device", e.actor), e.fields.get("xid"))
        if e.seq in by_seq:
            x = by_seq[e.seq]
            body.append(
                (x.device, f"{{{x.device}}}->>{{relay}}: {text(f'{stamp} {x.method} {x.path}')}")
            )
        elif e.kind == "response" and e.seq in by_end:
            x = by_end[e.seq]
            arrow = "-->>" if x.status < 400 else "--x"
            line = text(f"{stamp} {x.status}, {e.fields.get('size')} bytes")
            body.append((x.device, f"{{relay}}{arrow}{{{x.device}}}: {line}"))
        elif e.kind == "fault" and key in by_key:
            x = by_key[key]
            note(x.device, f"{stamp} {label(e)}: {x.method} {x.path}")
        elif e.seq in moments:
            m = moments[e.seq]
            line = f"{stamp} {m.category}: {m.what} {m.actor} {m.detail}"
            note(m.actor, line, highlight=e.seq == focus.seq and focus.kind != "violation")
        if e.seq == focus.seq and focus.kind == "violation":
            note("*", f"{stamp} {focus.text}: {focus.violation}", highlight=True)
    return _render(story, body)


def _render(story: Story, body: list[tuple[str, str]]) -> str:
    devices = sorted({who for who, _ in body if who in story.devices})
    names = [RELAY, *devices]
    ident = {name: _ident(name) for name in names}
    lines = ["sequenceDiagram"]
    for name in names:
        alias = "" if ident[name] == name else f" as {text(name)}"
        lines.append(f"    participant {ident[name]}{alias}")
    span = ident[RELAY] if not devices else f"{ident[RELAY]},{ident[devices[-1]]}"
    for _, line in body:
        line = re.sub(r"\{([^{}]+)\}", lambda m: ident.get(m.group(1), span), line, count=2)
        lines.append(f"    {line}")
    return "\n".join(lines)
