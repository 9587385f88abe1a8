"""The sequence diagram's rows (``sequence.rows``) as Mermaid, for report.md: the
relay and the devices as participants, requests and responses as arrows, and
faults, crashes, alarms and rejections as notes, in trace order. The focus (the
first violation or alarm) is highlighted.

Text is escaped with Mermaid's entity codes (``#35;`` for ``#``): a raw ``#`` or
``;`` ends a message, and ``<``/``>``/``&`` would be read as HTML.
"""

import re
import textwrap

from simkit.report.data import RELAY, Story
from simkit.report.sequence import rows

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
    body: list[tuple[str, str]] = []  # (the participant a line is about, the line)
    for row in rows(story):
        if row.kind == "request":
            body.append((row.who, f"{{{row.who}}}->>{{relay}}: {text(row.stamped)}"))
        elif row.kind == "response":
            arrow = "--x" if row.failed else "-->>"
            body.append((row.who, f"{{relay}}{arrow}{{{row.who}}}: {text(row.stamped)}"))
        else:
            lines = textwrap.wrap(
                text(row.stamped), NOTE_CHARS, break_long_words=False, break_on_hyphens=False
            )
            entry = (row.who, f"Note over {{{row.who}}}: {'<br/>'.join(lines)}")
            body.extend(
                [("", f"rect {HIGHLIGHT}"), entry, ("", "end")] if row.highlight else [entry]
            )
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
