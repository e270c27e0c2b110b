"""The scripts no test runs end to end (``make bench``'s ``tests/bench/``, ``tools/``) still name what the
add-on has: every ``module.attribute`` they use on a module of the add-on resolves. A restructure moved
``bake.baker.clear`` to ``rig/baked.py`` and ``make bench`` failed after 90 s of measuring, unseen by the
suite."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(ROOT / "tests" / "bench").glob("*.py"), *(ROOT / "tools").glob("*.py")])


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name → module path, for every import of the add-on's modules (top level or in functions)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "hybrid_skin":
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else "hybrid_skin"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "hybrid_skin":
            for a in node.names:
                name = f"{node.module}.{a.name}"
                try:
                    importlib.import_module(name)
                except ImportError:
                    continue  # a function or class, not a module: its attributes are not checked
                out[a.asname or a.name] = name
    return out


def _resolves(module: str, attribute: str) -> bool:
    if hasattr(importlib.import_module(module), attribute):
        return True
    try:
        importlib.import_module(f"{module}.{attribute}")
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_attribute_a_script_uses_exists(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    aliases = _aliases(tree)
    missing = sorted(
        {
            f"{node.value.id}.{node.attr} (line {node.lineno})"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and not _resolves(aliases[node.value.id], node.attr)
        }
    )
    assert not missing, f"{script.name} uses what the add-on no longer has: {', '.join(missing)}"


def test_the_check_sees_a_missing_attribute(tmp_path):
    """The check itself: the bench's old call is reported."""
    tree = ast.parse("from hybrid_skin.bake import baker as bake\nbake.clear(None)\nbake.KEY_PREFIX\n")
    aliases = _aliases(tree)
    assert aliases == {"bake": "hybrid_skin.bake.baker"}
    assert not _resolves("hybrid_skin.bake.baker", "clear")
    assert _resolves("hybrid_skin.bake.baker", "KEY_PREFIX")
