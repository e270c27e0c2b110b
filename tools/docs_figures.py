"""Write the measured numbers into the docs from their one source, ``docs/measured.json`` (the last
``tests/bench/run.py --record``), so that every page says the same number and the run's date.

Two kinds of markers in ``README.md`` and ``docs/*.md``:

* a table: ``<!-- measured table -->`` … ``<!-- end of measured table -->`` becomes the run's line
  (machine, Blender, date) and one row per figure;
* a number in a sentence: ``<!-- measured D1 "Evaluated display (Global)" ratio -->2.4×<!-- /measured -->``
  becomes that figure's field: ``ratio`` (``2.41×``), ``ours`` or ``blender`` (milliseconds, ``73 ms``), or
  ``date`` (the run's); three significant digits, as in the table. The figure is the one whose key is
  the first word and whose name contains the
  quoted text (exactly one must).

    python tools/docs_figures.py           # rewrite the pages (make tools)
    python tools/docs_figures.py --check   # exit 1 if a page is stale (tests/test_docs.py does this)

No Blender needed: a pure-Python tool.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "docs" / "measured.json"
TABLE_START = "<!-- measured table -->\n"
TABLE_END = "<!-- end of measured table -->"
NUMBER = re.compile(r'<!-- measured (\w+) "([^"]+)" (\w+) -->(.*?)<!-- /measured -->')
MARKS = {"met": "✔", "met (stretch)": "✔ stretch", "NOT met": "✘", "info": ""}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def load(path: Path = MEASURED) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, as the table prints it: 2.414 → 2.41, 73.04 → 73."""
    text = f"{value:.{digits}g}"
    if "e" in text:
        text = f"{value:.0f}"
    return text


def figure(measured: dict, key: str, name: str) -> dict:
    found = [f for f in measured["figures"] if f["key"] == key and name in f["name"]]
    if len(found) != 1:
        raise SystemExit(f'measured {key} "{name}": {len(found)} figures match in {MEASURED.name}, not one')
    return found[0]


def number(measured: dict, key: str, name: str, field: str) -> str:
    if field == "date":
        return measured["run"]["date"]
    fig = figure(measured, key, name)
    if field == "ratio":
        return f"{significant(fig['ratio'])}{'' if fig['value_label'] else '×'}"
    if field in ("ours", "blender"):
        return f"{significant(fig[f'{field}_ms'])} ms"
    raise SystemExit(f"measured {key} {name!r}: no field {field!r} (ratio, ours, blender, date)")


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def table(measured: dict) -> str:
    run = measured["run"]
    lines = [
        f"Measured {run['date']} on {run['cpu']}; Blender {run['blender']} (bpy module), "
        f"numpy {run['numpy']}, OpenGL renderer {run['renderer']}; load average {run['load']} at the "
        f"start, {run['load_end']} at the end. Minimum of ≥ {run['min_rounds']} interleaved rounds per "
        "figure.",
        "",
        "| | figure | ours | Blender | ratio (of medians) | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    for fig in measured["figures"]:
        median = fig["median_ratio"]
        ratio = f"{fig['ratio']:.3g}" + ("" if median is None else f" ({median:.3g})")
        if fig["value_label"]:
            ratio = f"{ratio} {fig['value_label']}"
        target = "—" if fig["target"] is None else f"≤ {fig['target']:g}"
        if fig["target"] is not None and fig["stretch"] is not None:
            target += f" (stretch {fig['stretch']:g})"
        cells = [fig["key"], fig["name"], _ms(fig["ours_ms"]), _ms(fig["blender_ms"]), ratio, target,
                 MARKS[fig["verdict"]]]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render(text: str, measured: dict) -> str:
    """A page's text with every marker filled from ``measured``."""
    text = re.sub(
        re.escape(TABLE_START) + r".*?" + re.escape(TABLE_END),
        lambda _m: TABLE_START + table(measured) + TABLE_END,
        text,
        flags=re.S,
    )

    def fill(m: re.Match) -> str:
        value = number(measured, m[1], m[2], m[3])
        return f'<!-- measured {m[1]} "{m[2]}" {m[3]} -->{value}<!-- /measured -->'

    return NUMBER.sub(fill, text)


def expected(measured: dict | None = None) -> dict[Path, str]:
    measured = load() if measured is None else measured
    return {path: render(path.read_text(encoding="utf-8"), measured) for path in pages()}


def stale() -> list[Path]:
    return [path for path, text in expected().items() if path.read_text(encoding="utf-8") != text]


def write_or_check(wanted: dict[Path, str], argv: list[str], tool: str) -> int:
    """Write each generated page that differs from ``wanted``, or with ``--check`` name them (exit 1)."""
    paths = [path for path, text in wanted.items() if path.read_text(encoding="utf-8") != text]
    if "--check" in argv:
        for path in paths:
            print(f"{path} is stale: run {tool} (make tools)", file=sys.stderr)
        return 1 if paths else 0
    for path in paths:
        path.write_text(wanted[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(write_or_check(expected(), sys.argv[1:], "tools/docs_figures.py"))
