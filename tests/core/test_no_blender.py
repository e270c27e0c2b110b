"""The core and its tests need no Blender: every module imports with Blender's modules blocked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLENDER_MODULES = ("bpy", "bmesh", "mathutils", "gpu", "blf", "bpy_extras")

PROGRAM = """
import importlib, sys
for name in {blocked!r}:
    sys.modules[name] = None  # "import bpy" now raises ImportError
for name in {modules!r}:
    importlib.import_module(name)
print("imported", len({modules!r}))
"""


def dotted(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_core_and_its_tests_import_with_blender_blocked():
    modules = [dotted(p) for p in sorted((REPO / "hybrid_skin" / "core").rglob("*.py"))]
    modules += [dotted(p) for p in sorted((REPO / "tests" / "core").rglob("test_*.py"))]
    assert "hybrid_skin.core.skinning" in modules and "tests.core.test_skinning" in modules
    program = PROGRAM.format(blocked=BLENDER_MODULES, modules=modules)
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["imported", str(len(modules))]


def test_a_blocked_module_really_fails_to_import():
    """Control: the blocking used above does make ``import bpy`` fail."""
    program = "import sys\nsys.modules['bpy'] = None\nimport bpy\n"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "import of bpy halted" in done.stderr
