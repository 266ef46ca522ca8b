"""The documentation cannot rot: README.md and docs/*.md are checked as a reader uses them.

- every ```python block runs as pasted, in a fresh namespace, from the repository root
  (one test per block, id ``file:line``); ```bash and ```text blocks are not run;
- every relative link ``[text](path)``, ``[text](path#anchor)`` and ``[text](#anchor)``
  names a file that exists and, for an anchor, a heading of that file (GitHub's rule:
  lowercase, punctuation other than ``-`` and ``_`` dropped, spaces to ``-``, a repeated
  heading gets ``-1``, ``-2``...);
- README.md is a front page: at most 200 lines, opening with the two set-up commands
  that ``.ci/run`` takes from its first ```bash block.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`]*`")


def _blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line of the opening fence, language, code) for every fenced block of a page."""
    found: list[tuple[int, str, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, fence, lang = i + 1, m.group(1), m.group(2)
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start}: unclosed code fence")
        found.append((start, lang, "\n".join(body) + "\n"))
        i += 1
    return found


def _prose(path: Path) -> list[tuple[int, str]]:
    """The lines outside code fences, inline code blanked out, with their numbers."""
    out: list[tuple[int, str]] = []
    fence = ""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if fence:
            if line.rstrip() == fence:
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        out.append((n, _INLINE_CODE.sub("", line)))
    return out


def _slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for _, line in _prose_with_code(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _prose_with_code(path: Path) -> list[tuple[int, str]]:
    """The lines outside code fences as written (a heading's inline code counts)."""
    keep = {n for n, _ in _prose(path)}
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, lines[n - 1]) for n in sorted(keep)]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


PYTHON_BLOCKS = [pytest.param(page, line, code, id=f"{_rel(page)}:{line}")
                 for page in PAGES for line, lang, code in _blocks(page) if lang == "python"]

def _links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link outside code; a link's text may wrap across lines."""
    kept = dict(_prose(path))
    total = len(path.read_text(encoding="utf-8").splitlines())
    text = "\n".join(kept.get(n, "") for n in range(1, total + 1))
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _LINK.finditer(text)]


LINKS = [(page, n, target) for page in PAGES for n, target in _links(page)
         if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto: ...


@pytest.mark.parametrize(("page", "line", "code"), PYTHON_BLOCKS)
def test_python_block_runs_as_pasted(page, line, code, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile's folder: this test's own
    monkeypatch.setattr("tempfile.tempdir", None)
    np.random.seed(0)  # noqa: NPY002 - a seeded start for code that draws from the globals
    random.seed(0)
    # padded so that a traceback names the page's own line numbers
    compiled = compile("\n" * line + code, str(page), "exec")
    exec(compiled, {"__name__": "__docs__"})  # noqa: S102


def test_there_are_python_blocks():
    assert len(PYTHON_BLOCKS) >= 10


@pytest.mark.parametrize(("page", "line", "target"), LINKS,
                         ids=[f"{_rel(p)}:{n}:{t}" for p, n, t in LINKS])
def test_relative_link_resolves(page, line, target):
    path_part, _, anchor = target.partition("#")
    dest = (page.parent / path_part).resolve() if path_part else page
    assert dest.exists(), f"{_rel(page)}:{line}: {target}: no file {path_part}"
    if anchor:
        assert dest.suffix == ".md", f"{_rel(page)}:{line}: {target}: anchor into a non-page"
        assert anchor in _anchors(dest), (
            f"{_rel(page)}:{line}: {target}: no heading #{anchor} in {_rel(dest)} "
            f"(headings: {sorted(_anchors(dest))})")


def test_every_docs_page_is_linked_from_the_index():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve()
              for p, _, t in LINKS if p == index and t.partition("#")[0]}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    assert pages <= linked, f"pages missing from docs/README.md: {sorted(pages - linked)}"


def test_slug_follows_github():
    assert _slug("Reading the report, publishing it from CI") == (
        "reading-the-report-publishing-it-from-ci")
    assert _slug("`gradcheck diff` in CI") == "gradcheck-diff-in-ci"
    assert _slug("Budgets & speed: 1.0x") == "budgets--speed-10x"
    assert _slug("snake_case and kebab-case") == "snake_case-and-kebab-case"


def test_a_broken_link_and_a_failing_block_are_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [a wrapped\nlink](#nothing) `[code](#x)`\n\n"
                    "```python\nraise ValueError\n```\n\n```bash\nexit 1\n```\n")
    assert _anchors(page) == {"title"}
    assert _links(page) == [(3, "#title"), (3, "#nothing")]
    assert [(n, lang) for n, lang, _ in _blocks(page)] == [(6, "python"), (10, "bash")]
    with pytest.raises(ValueError):
        exec(_blocks(page)[0][2], {})  # noqa: S102


def test_readme_is_a_front_page_opening_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200)"
    first = next(i for i, ln in enumerate(lines) if ln.startswith("```"))
    assert lines[first] == "```bash" and lines[first + 3] == "```", lines[first:first + 4]
    assert lines[first + 1] == "pip install -e '.[test]' && gradcheck report"
    # the test command (suites/test_subject.py holds it equal to the subject's)
    assert lines[first + 2].startswith("pip install -e '.[test,compare]' && pytest -n 2 ")
    assert lines[first + 2].endswith(" && gradcheck report")
    assert not any(ln.strip() for ln in lines[1:first] if not ln.startswith("#")), (
        "README.md opens with its set-up commands")
