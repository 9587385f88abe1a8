"""The README and docs/ stand on their own: every link and every docs page they name is
in this repository (a clone of it alone has everything a reader is sent to)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # a Markdown link's target
PAGE = re.compile(r"(?<![\w/.-])((?:docs/)?(?:(?:lab|guides)/)?[\w-]+\.md)\b")  # a page named
WRITTEN = {"report.md", "compare.md"}  # pages simkit writes (docs/reports.md, reviewing.md)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_a_page_sends_its_reader_nowhere_outside_the_repository(page):
    text = page.read_text(encoding="utf-8")
    assert "../" not in text, f"{page.name} points outside the repository"
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        assert (page.parent / target).exists() or (ROOT / target).exists(), (page.name, target)
    for name in set(PAGE.findall(text)) - WRITTEN:
        exists = (ROOT / name).exists() or (ROOT / "docs" / name).exists()
        assert exists, f"{page.name} names {name}, which is not in the repository"
