"""A texture bake stores what Blender shows, or says what differs (issue 35, item 4).

Members of "the bake is not what Blender shows": a skinned mesh that never got Hybrid Skin (Blender shows
LBS, or DQS with Preserve Volume; the settings' default would be a 0.5 hybrid), modifiers after the
Armature modifier (a Smooth, a Displace: Blender shows them, a VERTEX texture can hold them), modifiers
there that change the vertex count, and what a bone texture cannot carry (those modifiers, a Vertex Group
factor, meshes shown at different factors). Each bake is decoded through the mesh data it wrote
(tests.support.animtex, written from the format) and compared with Blender's own evaluated mesh at every
stored frame; where the bake cannot hold what Blender shows, its warning must say so.
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import activate, diagonal, evaluated, rig, snapshot
from tests.support.animtex import clip_frames, decode, load_bake
from tests.support.assets import play
from tests.support.scenes import make_cylinder, skin_to_chain
from tests.support.snapshot import assert_same


@pytest.fixture
def core(addon):
    return importlib.import_module(addon.__name__ + ".core.animtex")


@pytest.fixture
def animtex(addon):
    return importlib.import_module(addon.__name__ + ".animtex.bake")


def bake(animtex, folder, target, **options):
    """The bake as a script runs it: its result (with its warnings)."""
    options = animtex.BakeOptions(str(folder), file_name="shown", precision="EXR32", **options)
    return animtex.bake(bpy.context, target, options)


def shown_and_baked(core, folder, arm, meshes) -> tuple[dict, dict]:
    """Per mesh: Blender's evaluated positions (mesh space) and the texture decoded, at every stored
    frame."""
    meta, texture = load_bake(core, folder / "shown.json")
    frames, _ = clip_frames(meta["clips"][0])
    action = arm.animation_data.action
    shown = {o.name: [] for o in meshes}
    for frame in frames:
        play(arm, action, float(frame))
        for obj in meshes:
            shown[obj.name].append(evaluated(obj))
    got = decode(core, meta, texture, meshes, 0, np.arange(len(frames), dtype=float))
    return meta, {o.name: (np.array(shown[o.name]), g) for o, g in zip(meshes, got)}


def gap(pair) -> float:
    shown, got = pair
    return float(np.linalg.norm(shown - got, axis=-1).max())


@pytest.mark.parametrize("preserve_volume", [False, True], ids=["LBS", "Preserve Volume"])
@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_a_mesh_without_hybrid_skin_is_baked_as_blender_shows_it(
    addon, animtex, core, tmp_path, kind, preserve_volume
):
    arm, obj = rig(add=False)
    obj.modifiers["Armature"].use_deform_preserve_volume = preserve_volume
    result = bake(animtex, tmp_path, obj, kind=kind)
    how = "DQS (Preserve Volume on)" if preserve_volume else "LBS (Preserve Volume off)"
    said = f"'Cylinder' has no Hybrid Skin and Blender shows them with {how}"
    assert any(said in w for w in result.warnings), result.warnings
    meta, pairs = shown_and_baked(core, tmp_path, arm, [obj])
    assert meta["deform_factor"]["value"] == (1.0 if preserve_volume else 0.0)
    diag = diagonal(pairs["Cylinder"][0][0])
    assert gap(pairs["Cylinder"]) <= meta["error_report"]["frames"]["max"] + 1e-6 * diag
    # what the settings' default (0.5) would have baked is far from it: the check can fail
    bpy.context.scene.frame_set(6)
    api = importlib.import_module(addon.__name__ + ".api")
    assert np.abs(api.deformed_positions(obj, deform_factor=0.5) - evaluated(obj)).max() > 0.02 * diag


def test_a_factor_given_to_the_bake_is_used_and_said(addon, animtex, tmp_path):
    arm, obj = rig(add=False)
    result = bake(animtex, tmp_path, obj, deform_factor=0.5)
    assert any("baked at the factor the bake was given" in w for w in result.warnings), result.warnings
    factor = result.metadata["deform_factor"]
    assert factor["value"] == 0.5 and factor["source"] == "bake"


def smooth_after(obj, kind: str = "SMOOTH"):
    mod = obj.modifiers.new("Soft", kind)
    if kind == "SMOOTH":
        mod.factor, mod.iterations = 1.0, 6
    elif kind == "DISPLACE":
        mod.strength, mod.direction = 0.2, "NORMAL"
    return mod


@pytest.mark.parametrize("kind", ["SMOOTH", "DISPLACE"])
@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_modifiers_after_the_armature_modifier_are_in_a_vertex_bake(
    addon, animtex, core, tmp_path, kind, display
):
    """The texture holds the hybrid with the user's modifier after it, as Blender shows it (the GPU
    preview steps aside for such a stack); the stack and the file's data are as they were after."""
    arm, obj = rig(display=display)
    smooth_after(obj, kind)
    before = snapshot()
    bake(animtex, tmp_path, obj)
    assert_same(users_own(before), users_own(snapshot()), "after a bake that applied the user's modifier")
    meta, pairs = shown_and_baked(core, tmp_path, arm, [obj])
    diag = diagonal(pairs["Cylinder"][0][0])
    assert gap(pairs["Cylinder"]) <= meta["error_report"]["frames"]["max"] + 1e-5 * diag
    obj.modifiers["Soft"].show_viewport = False  # what the bake stored before: the skinning alone
    _, without = shown_and_baked(core, tmp_path, arm, [obj])
    assert float(np.abs(without["Cylinder"][0] - pairs["Cylinder"][0]).max()) > 0.01 * diag


def users_own(state: dict) -> dict:
    """A snapshot without what the bake writes on purpose (its mesh data, its UV map and the settings a new
    UV map sets, its summary): the modifiers, node groups, attributes and the rest must be as they were."""
    mesh = state["objects"]["Cylinder"]["mesh"]
    mesh["attributes"] = {k: v for k, v in mesh["attributes"].items() if not k.startswith("animtex")}
    mesh["uv_layers"] = [uv for uv in mesh["uv_layers"] if not uv[0].startswith("animtex")]
    for key in [k for k in mesh["settings"] if k.startswith(("uv_layer_clone", "uv_layer_stencil"))]:
        del mesh["settings"][key]
    state["objects"]["Cylinder"]["custom"].pop("_hybrid_skin_animtex", None)
    return state


def test_modifiers_that_change_the_vertex_count_are_named(addon, animtex, tmp_path):
    arm, obj = rig()
    obj.modifiers.new("Finer", "SUBSURF")
    result = bake(animtex, tmp_path, obj)
    assert any("Modifiers 'Finer' after the Armature modifier of 'Cylinder' change its vertex count" in w
               for w in result.warnings), result.warnings  # fmt: skip


def test_bone_kinds_say_what_they_cannot_carry(addon, animtex, tmp_path):
    """A modifier after the Armature modifier, a Vertex Group factor and a mesh Blender shows at another
    factor than the one the texture plays: each named."""
    arm, obj = rig()
    smooth_after(obj)
    plain = make_cylinder("Plain", rings=4, segments=8)
    skin_to_chain(plain, arm)
    activate(arm)
    result = bake(animtex, tmp_path, arm, kind="BONE_DQ")
    text = "\n".join(result.warnings)
    assert "Modifiers after the Armature modifier are not in a bone texture" in text and "'Soft'" in text
    assert "'Plain' is shown at 0, and a bone texture plays one factor, 0.6" in text, text
    obj.hybrid_skin.factor_mode = "VERTEX_GROUP"
    obj.hybrid_skin.factor_vertex_group = obj.vertex_groups[0].name
    result = bake(animtex, tmp_path, arm, kind="BONE_DQ")
    assert any("'Cylinder' uses a Vertex Group factor, and a bone texture plays one factor" in w
               for w in result.warnings), result.warnings  # fmt: skip
