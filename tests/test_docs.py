"""The documentation a newcomer reads: a short README that is the front page, reference in ``docs/``,
and every link and picture they click landing somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("shaders/**/*.md"), REPO / "assets/README.md"]
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_and_picture_exists(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: broken links {broken}"


def test_the_readme_is_a_front_page():
    """What it is, a picture, install, the two commands, a tour, where to read on — in a few minutes."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 12_000
    for heading in ("## Install", "## The two commands", "## A tour", "## Read on"):
        assert heading in readme
    assert "make demo" in readme and "make test" in readme
    linked = set(LINK.findall(readme))
    for page in REPO.glob("docs/*.md"):
        assert f"docs/{page.name}" in linked, f"README does not lead to docs/{page.name}"



def test_papers_are_cited_by_name_not_by_seed_number():
    """A reader can find Kavan et al. 2007 or Johansson 2021; "seed 000" names a file they do not have."""
    offenders = []
    for path in [*REPO.glob("hybrid_skin/**/*.py"), *REPO.glob("shaders/**/*"), *REPO.glob("docs/*.md"),
                 REPO / "README.md"]:
        text = path.read_text(encoding="utf-8", errors="ignore") if path.is_file() else ""
        if re.search(r"\bseeds? ?0\d\d", text, re.IGNORECASE):
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders


def test_measured_numbers_come_from_the_one_recorded_run():
    """Every measured number in the pages is written from ``docs/measured.json`` (the last recorded
    ``make bench``) by ``tools/docs_figures.py``: a page that says another number is stale."""
    from tools import docs_figures

    assert docs_figures.stale() == [], "run make tools (tools/docs_figures.py) and commit the result"
    measured = docs_figures.load()
    marked = {path.name: len(docs_figures.NUMBER.findall(path.read_text(encoding="utf-8")))
              for path in docs_figures.pages()}  # fmt: skip
    assert marked["README.md"] >= 3 and marked["performance.md"] >= 20, marked
    assert docs_figures.TABLE_START in (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    # Control: a page whose number disagrees with the run is rewritten (so stale() sees it).
    name = "Evaluated display (Global), CPU per frame ÷ Blender's Armature modifier, 1M"
    line = f'<!-- measured D1 "{name}" ratio -->9.9×<!-- /measured -->'
    ratio = docs_figures.figure(measured, "D1", name)["ratio"]
    assert docs_figures.render(line, measured) == line.replace("9.9×", f"{docs_figures.significant(ratio)}×")
