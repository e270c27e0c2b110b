"""The scripting API refuses bad input with one clear sentence (a ``HybridSkinError``), never an
``AttributeError``/``ValueError`` from inside, and never a silent wrong result (issue 12 §14 and its
"Messages" list): a factor array with NaN or values outside [0, 1] follows the scalar's rule, and vertices
moved without Rebind are skinned where they are now."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import assert_close, modules, three_bone_cylinder
from tests.support.scenes import evaluated_positions, native_positions, pose_bone
from tests.support.snapshot import assert_same, snapshot


@pytest.fixture
def rig(addon):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    return arm, cyl


def refused(addon, call, message: str) -> None:
    """``call()`` raises HybridSkinError (exactly that type's message), one sentence, user data unchanged."""
    hs = modules(addon)
    before = snapshot()
    with pytest.raises(hs.errors.HybridSkinError) as info:
        call()
    text = str(info.value)
    assert message in text, text
    assert "\n" not in text and "Traceback" not in text
    assert_same(before, snapshot(), "after a refused API call")


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("mesh datablock", "got the Mesh datablock 'Cylinder' (pass the object that uses it)"),
        ("string", "got the string 'Cylinder' (pass bpy.data.objects['Cylinder'])"),
        ("int", "got int 3"),
        ("None", "got NoneType None"),
        ("armature object", "got the armature object 'Rig'"),
    ],
)
def test_api_says_what_it_takes_when_given_something_else(addon, rig, what, message):
    arm, cyl = rig
    api = modules(addon).api
    value = {"mesh datablock": cyl.data, "string": "Cylinder", "int": 3, "None": None, "armature object": arm}
    refused(addon, lambda: api.deformed_positions(value[what]), message)
    refused(addon, lambda: api.deformed_normals(value[what]), message)


def test_rebind_of_none_is_a_sentence(addon, rig):
    api = modules(addon).api
    refused(addon, lambda: api.rebind(None), "needs a mesh object (bpy.types.Object), got NoneType None")


@pytest.mark.parametrize("value", ["AUTO", [0.5, "x"], {"f": 0.5}, "0.5", b"1", ["0.5"] * 3])
def test_a_factor_that_is_not_a_number_is_a_sentence(addon, rig, value):
    arm, cyl = rig
    api = modules(addon).api
    refused(addon, lambda: api.deformed_positions(cyl, deform_factor=value), "deform_factor must be a number")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.nan, "1 value(s) do not, first at vertex 17 (nan)"),
        (1.5, "1 value(s) do not, first at vertex 17 (1.5)"),
        (-0.25, "1 value(s) do not, first at vertex 17 (-0.25)"),
    ],
)
def test_a_factor_array_follows_the_scalars_rule(addon, rig, bad, message):
    arm, cyl = rig
    api = modules(addon).api
    factors = np.full(len(cyl.data.vertices), 0.5, dtype=np.float32)
    factors[17] = bad
    refused(addon, lambda: api.deformed_positions(cyl, deform_factor=factors), message)
    with pytest.raises(modules(addon).errors.HybridSkinError, match=r"must lie in \[0, 1\]"):
        api.deformed_positions(cyl, deform_factor=float(bad))  # the same rule for one number


def test_an_evaluated_copy_is_skinned_as_its_original(addon, rig):
    """A depsgraph hands out evaluated copies (``depsgraph.objects``, ``obj.evaluated_get``): they were told
    "'Cylinder' no longer exists" and bound their already deformed mesh as a rest shape."""
    arm, cyl = rig
    api = modules(addon).api
    copy = cyl.evaluated_get(bpy.context.evaluated_depsgraph_get())
    assert copy.is_evaluated and copy.original == cyl
    expected = native_positions(cyl, 0.5)
    assert_close(api.deformed_positions(copy, deform_factor=0.5), expected, "an evaluated copy")
    assert_close(api.deformed_positions(cyl, deform_factor=0.5), expected, "the original after it")
    np.testing.assert_array_equal(
        api.deformed_normals(copy, deform_factor=0.5), api.deformed_normals(cyl, deform_factor=0.5)
    )


def test_a_removed_object_is_a_sentence(addon, rig):
    arm, cyl = rig
    api = modules(addon).api
    bpy.data.objects.remove(cyl)
    for call in (api.deformed_positions, api.deformed_normals, api.rebind):
        with pytest.raises(modules(addon).errors.HybridSkinError, match="was removed from the file"):
            call(cyl)


# ---------------------------------------------------------------------------- vertices moved, no Rebind
def move_vertices(cyl) -> None:
    """A script (or another add-on) moves the mesh's vertices without telling Hybrid Skin."""
    co = np.empty(len(cyl.data.vertices) * 3, dtype=np.float32)
    cyl.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 0] *= 1.8  # a wider cylinder
    co[:, 2] += 0.1 * np.sin(co[:, 2] * 3.0)
    cyl.data.vertices.foreach_set("co", co.ravel())
    cyl.data.update()


def test_api_skins_vertices_moved_without_rebind_where_they_are(addon, rig):
    arm, cyl = rig
    api = modules(addon).api
    api.deformed_positions(cyl)  # bound
    move_vertices(cyl)
    assert_close(api.deformed_positions(cyl, deform_factor=0.5), native_positions(cyl, 0.5), "moved mesh")


def test_a_bake_after_vertices_moved_without_rebind_is_not_stale(addon, rig):
    arm, cyl = rig
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    modules(addon).api.deformed_positions(cyl)  # bound
    move_vertices(cyl)
    expected = native_positions(cyl, cyl.hybrid_skin.deform_factor)
    assert bpy.ops.hybrid_skin.bake_deformation(target="CURRENT") == {"FINISHED"}
    assert_close(evaluated_positions(cyl), expected, "bake of the moved mesh")


def test_a_nan_deform_factor_setting_is_refused_everywhere_not_skinned(addon, rig):
    """The slider's property range does not stop a script from storing NaN: the API and a bake refuse it
    with one sentence (NaN positions, or a shape key of NaN, before)."""
    arm, cyl = rig
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    cyl.hybrid_skin.deform_factor = float("nan")
    stored = cyl.hybrid_skin.deform_factor
    assert stored != stored, "Blender stores NaN (or this test is void)"
    api = modules(addon).api
    message = "'Cylinder': its Deform Factor is nan, not a number in [0, 1]"
    refused(addon, lambda: api.deformed_positions(cyl), message)
    refused(addon, lambda: api.deformed_normals(cyl), message)
    assert_close(api.deformed_positions(cyl, deform_factor=0.3), native_positions(cyl, 0.3), "an override")
    before = snapshot()
    with pytest.raises(RuntimeError, match=message.replace("[", r"\[")):  # the operator's one ERROR report
        bpy.ops.hybrid_skin.bake_deformation(target="CURRENT")
    assert_same(before, snapshot(), "after the refused bake")
    cyl.hybrid_skin.factor_mode = "AUTO"  # Auto ignores the slider: nothing to refuse
    assert np.isfinite(api.deformed_positions(cyl)).all()
