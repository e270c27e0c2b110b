"""The texture bake's dialog, drawn (tests/support/layout.py): what depends on what, greyed with the
reason, and an estimate before OK that is the bake's own plan: the texture a bake then makes has exactly
the size the dialog showed, and every refusal the options decide is on screen before OK."""

from __future__ import annotations

import importlib
import re
from types import SimpleNamespace

import bpy
import pytest

from tests.robustness.bake_scene import rig
from tests.support.layout import Drawn, RecordingLayout, operator_properties


@pytest.fixture
def options(addon):
    return importlib.import_module(addon.__name__ + ".animtex.options")


def draw(options, **values) -> RecordingLayout:
    """The dialog as ``invoke`` shows it, its options at their defaults but ``values``."""
    cls = bpy.types.HYBRID_SKIN_OT_bake_animation_texture
    rna = operator_properties(cls.bl_idname)
    defaults = {name: getattr(options.BakeOptions(), name) for name, o in options.declared() if o.ui}
    actions = values.pop("actions", [])
    layout = RecordingLayout()
    state = {**defaults, "action_source": "ACTIVE", **values}
    cls.draw(Drawn(cls, layout, bl_rna=rna, actions=actions, **state), bpy.context)
    return layout


def greyed(layout, name: str) -> str | None:
    """The reason label drawn right after property ``name``, if it is greyed (None otherwise)."""
    calls = layout.calls
    at = next(i for i, c in enumerate(calls) if c.kind == "prop" and c.args[1] == name)
    after = calls[at + 1] if at + 1 < len(calls) else None
    reason = after is not None and after.kind == "label" and after.kwargs.get("icon") == "INFO"
    return after.text if reason else None


def estimate(layout) -> list[str]:
    return [c.text for c in layout.calls if c.kind == "label" and c.kwargs.get("icon") != "INFO"]


def test_dependent_options_are_greyed_with_the_reason(addon, options, tmp_path):
    arm, obj = rig()
    layout = draw(options, directory=str(tmp_path), write_mesh_data=False, export_gltf=True)
    assert greyed(layout, "export_gltf") == "needs Mesh Data"
    assert greyed(layout, "export_babylon") == "bone kinds only"
    assert greyed(layout, "runtime_auto") == "VERTEX bakes Auto into the positions"
    assert any(t.startswith("glTF needs Mesh Data") for t in estimate(layout)), estimate(layout)
    layout = draw(options, directory=str(tmp_path), kind="BONE_DQ", export_babylon=True)
    assert greyed(layout, "export_babylon") == "needs glTF" and greyed(layout, "runtime_auto") is None
    assert any(t.startswith("Babylon.js needs a bone kind and glTF") for t in estimate(layout))
    layout = draw(options, directory=str(tmp_path), tolerance=0.01)
    assert "Picked by the tolerance search" in layout.labels()


def test_the_action_checklist_sits_under_its_selector(addon, options, tmp_path):
    arm, obj = rig()
    walk = SimpleNamespace(name="Walk", use=True, bl_rna=operator_properties(
        "hybrid_skin.bake_animation_texture").properties["actions"].fixed_type)  # fmt: skip
    layout = draw(options, directory=str(tmp_path), action_source="LISTED", actions=[walk])
    assert layout.props()[:2] == ["action_source", "use"]


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_MATRIX"])
def test_the_estimate_is_the_texture_the_bake_makes(addon, options, tmp_path, kind):
    arm, obj = rig()
    layout = draw(options, directory=str(tmp_path), kind=kind, precision="EXR16", max_width=64)
    lines = estimate(layout)
    size = next(t for t in lines if "texels" in t)
    width, height = (int(n.replace(",", "")) for n in re.match(r"([\d,]+) × ([\d,]+) texels", size).groups())
    assert any(t.startswith("The bake holds about") for t in lines)
    stem = f"Cylinder_{kind.lower()}"
    assert any(t.startswith(f"Writes {stem}.exr, {stem}.json") for t in lines), lines
    assert bpy.ops.hybrid_skin.bake_animation_texture(
        directory=str(tmp_path), kind=kind, precision="EXR16", max_width=64
    ) == {"FINISHED"}
    baked = bpy.data.images.load(str(tmp_path / f"Cylinder_{kind.lower()}.exr"), check_existing=False)
    assert tuple(baked.size) == (width, height), (baked.size, size)
    bpy.data.images.remove(baked)
    again = estimate(draw(options, directory=str(tmp_path), kind=kind, precision="EXR16", max_width=64))
    assert any("(replaces this object's previous bake)" in t for t in again), again


def test_a_bake_that_cannot_fit_is_said_before_ok(addon, options, tmp_path):
    arm, obj = rig()
    arm.pose.bones["Bone1"].keyframe_insert("rotation_euler", frame=400_000)
    lines = estimate(draw(options, directory=str(tmp_path)))
    assert any("taller than the 16,384 rows" in t and "frames 1–400,000" in t for t in lines), lines


def test_a_bake_over_its_budget_or_over_a_foreign_file_is_said_before_ok(addon, options, tmp_path):
    arm, obj = rig()
    lines = estimate(draw(options, directory=str(tmp_path), memory_budget=1.0))
    assert any("over the budget of 1.05 MB (the budget asked for)" in t for t in lines), lines
    (tmp_path / "Cylinder_vertex.json").write_text('{"level": 3}')
    lines = estimate(draw(options, directory=str(tmp_path)))
    assert any("is not a sidecar Hybrid Skin wrote" in t for t in lines), lines
    lines = estimate(draw(options, directory=str(tmp_path), replace_files=True))
    assert any(t.startswith("Writes Cylinder_vertex.png") for t in lines), lines
