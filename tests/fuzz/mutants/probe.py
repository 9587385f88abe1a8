"""Installed as ``sitecustomize`` by ``tests.fuzz.mutants.reach``: records, in every
process of a ``simkit check`` run (pool workers and world copies inherit it through
fork), the first time a line of a mutant's site runs in that process's lineage, with the
sequence being judged then. Standalone on purpose: it loads before ``simkit`` or
``tests`` can be imported. Does nothing unless ``SIMKIT_REACH`` names its settings."""

import json
import os
import sys
import threading


def _install(settings: str) -> None:
    with open(settings, encoding="utf-8") as file:
        config = json.load(file)
    # file -> line -> the sites (indices) that line belongs to
    targets: dict[str, dict[int, list[int]]] = {}
    for index, (path, lines) in enumerate(config["sites"]):
        for line in lines:
            targets.setdefault(path, {}).setdefault(line, []).append(index)
    explore_file = config["explore"]
    out = os.open(config["out"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    seen: set[int] = set()  # sites reached in this lineage (a fork inherits its parent's)
    judging: dict[str, list[int] | None] = {"sequence": None}  # None: outside any share
    # (file, code object) -> it holds a site's line (code objects of two files can be equal)
    holds_site: dict[tuple[str, object], bool] = {}

    def reached(indices: list[int]) -> None:
        new = [i for i in indices if i not in seen]
        if new:
            seen.update(new)
            os.write(out, (json.dumps([new, judging["sequence"]]) + "\n").encode())

    def tracer(lines: dict[int, list[int]]):
        def local(frame, event, arg):
            if event == "line":
                indices = lines.get(frame.f_lineno)
                if indices is not None:
                    reached(indices)
            return local

        return local

    def on_call(frame, event, arg):
        code = frame.f_code
        name = code.co_filename
        if name == explore_file:  # what is being judged now
            if code.co_name == "judge":
                judging["sequence"] = list(frame.f_locals["sequence"])
            elif code.co_name == "_descend_in_copy":
                found = frame.f_locals
                judging["sequence"] = [*found["prefix"], found["letter"]]
            elif code.co_name == "world":
                judging["sequence"] = []
            return None
        lines = targets.get(name)
        if lines is None:
            return None
        holds = holds_site.get((name, code))
        if holds is None:
            holds = any(line in lines for _, _, line in code.co_lines())
            holds_site[name, code] = holds
        return tracer(lines) if holds else None

    threading.settrace(on_call)
    sys.settrace(on_call)


if os.environ.get("SIMKIT_REACH"):
    _install(os.environ["SIMKIT_REACH"])
