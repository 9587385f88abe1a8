"""Operator mutants (``simkit mutate``): every place in a Python file where one of the
classic mutation operators changes the code, each as a source ``Mutant`` that the
campaign machinery fuzzes like the hand-written ones (docs/fuzzing.md, "Mutation
score").

Nobody chose these mutants: they are drawn at random, with a seed, from every site the
operators apply to, so the score they give is a measure of the harness that its
authors did not bias. The operators are the selective set of the literature (relational
and boundary, logical, arithmetic, constant, statement deletion) plus two that catch
what careless edits do (a call dropped around its argument, two arguments swapped).
Sites are read from the ``ast``; each mutant replaces one exact span of the source, so
its diff is one line (or one statement) and the rest of the file is untouched.
"""

import ast
import random
import re
from pathlib import Path

import attrs

from simkit.fuzz.mutants import Mutant

NO_MUTATE = "pragma: no mutate"
"""A comment that keeps the operators off its line (logging, messages, a debug aid)."""

_COMPARISON = {  # operator -> (boundary or negation name, replacement)
    ast.Lt: (("boundary", "<="), ("negated", ">=")),
    ast.LtE: (("boundary", "<"), ("negated", ">")),
    ast.Gt: (("boundary", ">="), ("negated", "<=")),
    ast.GtE: (("boundary", ">"), ("negated", "<")),
    ast.Eq: (("negated", "!="),),
    ast.NotEq: (("negated", "=="),),
    ast.In: (("negated", "not in"),),
    ast.NotIn: (("negated", "in"),),
    ast.Is: (("negated", "is not"),),
    ast.IsNot: (("negated", "is"),),
}
_TOKEN = re.compile(
    r"<=|>=|==|!=|<<=?|>>=?|\*\*=?|//=?|[-+*/%&|^<>]=?"
    r"|\bnot\s+in\b|\bis\s+not\b|\bin\b|\bis\b|\band\b|\bor\b"
)
_ARITHMETIC = {
    ast.Add: "-", ast.Sub: "+", ast.Mult: "//", ast.Div: "*", ast.FloorDiv: "*",
    ast.Mod: "//", ast.BitAnd: "|", ast.BitOr: "&", ast.LShift: ">>", ast.RShift: "<<",
}  # fmt: skip


class _Source:
    """A file's text with the ast's (line, UTF-8 byte column) positions turned into
    character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = re.split(r"(?<=\n)", text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + len(self.lines[line - 1].encode()[:column].decode())

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)
        return start, self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        return next(i for i, start in enumerate(self.starts[1:], 1) if start > offset)


class _Sites(ast.NodeVisitor):
    """Every (start, end, replacement, operator, what) the operators apply to."""

    def __init__(self, source: _Source) -> None:
        self.src = source
        self.found: list[tuple[int, int, str, str, str]] = []
        self.skip: set[int] = set()  # ids of nodes never mutated (docstrings, annotations)
        self.effects: set[int] = set()  # ids of calls made as statements

    def add(self, start: int, end: int, new: str, operator: str) -> None:
        old = self.src.text[start:end]
        if old != new and NO_MUTATE not in self.src.lines[self.src.line_of(start) - 1]:
            self.found.append((start, end, new, operator, f"{_short(old)} -> {_short(new)}"))

    def token(self, left: ast.AST, right: ast.AST, new: str, operator: str) -> None:
        """Replace the operator token between ``left`` and ``right`` with ``new``."""
        gap_start, gap_end = self.src.span(left)[1], self.src.span(right)[0]
        match = _TOKEN.search(self.src.text, gap_start, gap_end)
        if match:
            self.add(match.start(), match.end(), new, operator)

    def visit(self, node: ast.AST) -> None:
        if id(node) not in self.skip:  # before any visitor: an annotation's ``|`` too
            super().visit(node)

    # -- what is never mutated -------------------------------------------------------

    def _body(self, body: list[ast.stmt]) -> None:
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            self.skip.add(id(first))  # a docstring

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node.body)
        self.generic_visit(node)

    def visit_FunctionDef(self, node) -> None:
        self._body(node.body)
        self.skip.update(id(a.annotation) for a in ast.walk(node.args) if isinstance(a, ast.arg))
        if node.returns is not None:
            self.skip.add(id(node.returns))
        self.skip.update(id(d) for d in node.decorator_list)
        self._statements(node.body)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._body(node.body)
        self.skip.update(id(d) for d in node.decorator_list)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.skip.add(id(node.annotation))
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        pass  # an f-string: a message

    def visit_Raise(self, node: ast.Raise) -> None:
        pass  # its message and type are what the raise is for; removing it is tried

    # -- the operators ----------------------------------------------------------------

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            for kind, new in _COMPARISON[type(op)]:
                self.token(operands[i], operands[i + 1], new, f"comparison {kind}")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        new = "or" if isinstance(node.op, ast.And) else "and"
        for left, right in zip(node.values, node.values[1:], strict=False):
            self.token(left, right, new, "logical and/or")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            start, end = self.src.span(node)
            self.add(start, end, f"({self.src.segment(node.operand)})", "logical not removed")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        new = _ARITHMETIC.get(type(node.op))
        if new is not None:
            self.token(node.left, node.right, new, "arithmetic")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        new = _ARITHMETIC.get(type(node.op))
        if new is not None:
            self.token(node.target, node.value, new + "=", "arithmetic")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value, (start, end) = node.value, self.src.span(node)
        if isinstance(value, bool):
            self.add(start, end, str(not value), "constant")
        elif isinstance(value, int):
            self.add(start, end, str({0: 1, 1: 0}.get(value, value + 1)), "constant")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):  # a call for its effect: statement deletion
            self.effects.add(id(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        """A function's result used in place of its argument (``sorted(x)``: ``x``), and
        the first two arguments swapped."""
        args = node.args
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        wraps = isinstance(node.func, ast.Name) and id(node) not in self.effects
        if plain and len(args) == 1 and wraps:
            start, end = self.src.span(node)
            self.add(start, end, f"({self.src.segment(args[0])})", "call removed")
        if plain and len(args) >= 2:
            (a0, a1), (b0, b1) = self.src.span(args[0]), self.src.span(args[1])
            text = self.src.text
            self.add(a0, b1, text[b0:b1] + text[a1:b0] + text[a0:a1], "arguments swapped")
        self.generic_visit(node)

    def _statements(self, body: list[ast.stmt]) -> None:
        """Statement deletion: a call made for its effect, an assignment into an object,
        a raise, a break or a continue becomes ``pass``."""
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call | ast.Await):
                removable = True
            elif isinstance(stmt, ast.Assign | ast.AugAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                removable = all(isinstance(t, ast.Attribute | ast.Subscript) for t in targets)
            else:
                removable = isinstance(stmt, ast.Raise | ast.Break | ast.Continue | ast.Delete)
            if removable:
                self.add(*self.src.span(stmt), "pass", "statement removed")
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and not isinstance(stmt, ast.FunctionDef):
                    self._statements([s for s in inner if isinstance(s, ast.stmt)])
                    for handler in (h for h in inner if isinstance(h, ast.ExceptHandler)):
                        self._statements(handler.body)


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:57] + "..."


def sites(text: str) -> list[tuple[int, int, str, str, str]]:
    """Every mutation of ``text``: (start, end, replacement, operator, what), in order."""
    source = _Source(text)
    visitor = _Sites(source)
    tree = ast.parse(text)
    visitor.visit(tree)
    return sorted(set(visitor.found))


def mutants_of(path: Path, name: str, root: str = "") -> list[Mutant]:
    """Every operator mutant of the file at ``path``, named ``NAME:LINE operator``;
    ``name`` is its path under ``root`` ("" for the simkit package)."""
    text = path.read_text(encoding="utf-8")
    source = _Source(text)
    out = []
    for start, end, new, operator, what in sites(text):
        line = source.line_of(start)
        out.append(
            Mutant(
                name=f"{name}:{line} {operator}", path=name, old=text[start:end], new=new,
                rule=f"{operator}: {what}", offset=start, root=root,
            )
        )  # fmt: skip
    return out


def sample(mutants: list[Mutant], count: int, seed: int, sources: dict[str, str]) -> list[Mutant]:
    """``count`` mutants drawn at random with ``seed`` (all, if fewer), each one that
    still compiles and changes the code's meaning as Python reads it (a mutant that
    parses to the same tree is equivalent by construction; one that does not compile
    is no program), named uniquely, in the order drawn."""
    order = list(range(len(mutants)))
    random.Random(seed).shuffle(order)
    chosen: list[Mutant] = []
    for index in order:
        if len(chosen) == count:
            break
        mutant = mutants[index]
        text = sources[mutant.path]
        try:
            changed = ast.dump(ast.parse(mutant.patched(text))) != ast.dump(ast.parse(text))
        except SyntaxError:
            continue
        if changed:
            chosen.append(mutant)
    seen: dict[str, int] = {}
    named = []
    for mutant in chosen:
        seen[mutant.name] = seen.get(mutant.name, 0) + 1
        suffix = f" #{seen[mutant.name]}" if seen[mutant.name] > 1 else ""
        named.append(attrs.evolve(mutant, name=mutant.name + suffix))
    return named
