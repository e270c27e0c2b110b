"""Bone textures carry Auto: a bone bake of meshes in factor mode Auto (a round profile) stores each bone's
Auto data per frame and each vertex's Auto rest data, and what it plays is the add-on's own Auto skinning.

The truth is the API (``api.deformed_positions`` with the object's own factor: its Auto profile), at stored
frames and halfway between them; the decoder is the core's (the shaders' reference), each vertex found
through the mesh data the bake wrote. Also: the glTF export carries the rest data, the option turns it
off, and meshes Auto cannot be carried for (Per Joint, mixed modes) bake as before with a warning.
"""

from __future__ import annotations

import importlib
import json
import math

import bpy
import numpy as np
import pytest

from tests.support.animtex import bake, coordinates, load_bake, mesh_attribute
from tests.support.assets import play
from tests.support.gltf import read_gltf
from tests.support.scenes import bbox_diagonal, make_chain_armature, make_cylinder, skin_to_chain

FRAMES = (1, 5)
#: The API's skinning and the decoded texture at EXR32: float32 rounding (of the scene's size).
SLACK = 1e-5


def auto_limb(profile: str = "ROUND", name: str = "AutoLimb"):
    """A three-bone cylinder that bends at one joint and bends and twists at the other over frames 1-5."""
    arm = make_chain_armature(f"{name}Rig", [1.0, 1.0, 1.0])
    obj = make_cylinder(name, height=3.0, rings=30, segments=12)
    skin_to_chain(obj, arm, blend=0.5)
    obj.data.shade_smooth()
    for bone, keys in (
        ("Bone1", ((1, 10.0, 0.0), (5, 110.0, 0.0))),
        ("Bone2", ((1, 0.0, 0.0), (5, 60.0, 150.0))),
    ):
        pb = arm.pose.bones[bone]
        pb.rotation_mode = "XYZ"
        for frame, bend, turn in keys:
            pb.rotation_euler = (math.radians(bend), math.radians(turn), 0.0)
            pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.factor_mode = "AUTO"
    obj.hybrid_skin.auto_profile = profile
    bpy.context.view_layer.objects.active = arm
    return arm, obj


def auto_rest(meta: dict, obj) -> np.ndarray:
    return mesh_attribute(obj, meta["mesh_attributes"]["auto_rest"], 4, "color")


def decoded(addon, meta, texture, obj, clip: int, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions and runtime Auto factors of ``obj`` at ``samples``: the core's decoders on what the bake
    wrote (texture, sidecar, mesh attributes)."""
    auto = importlib.import_module(addon.__name__ + ".core.animtex.auto")
    decode = importlib.import_module(addon.__name__ + ".core.animtex.decode")
    core = importlib.import_module(addon.__name__ + ".core.animtex")
    names = meta["mesh_attributes"]
    idx = mesh_attribute(obj, names["bone_indices"], 4, "color").astype(np.int32)
    w = mesh_attribute(obj, names["bone_weights"], 4, "color")
    factors = auto.texture_factors(
        texture, auto.decode_auto(texture, clip, samples), idx, w, auto_rest(meta, obj)
    )
    frames = core.decode_bone_frames(texture, clip, samples)
    return decode.skin_with_bone_frames(frames, coordinates(obj), idx, w, factors)[0], factors


def truth(addon, arm, obj, frames) -> tuple[np.ndarray, np.ndarray]:
    """The API's positions with the object's own (Auto) factor, and the core's Auto factors, at ``frames``."""
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    action, positions, factors = arm.animation_data.action, [], []
    for frame in frames:
        play(arm, action, float(frame))
        positions.append(addon.api.deformed_positions(obj))
        dg = bpy.context.evaluated_depsgraph_get()
        factors.append(bind.cached_bind(obj, dg).posed(dg).auto_factors())
    return np.array(positions), np.array(factors)


@pytest.mark.parametrize(("kind", "profile"), [("BONE_DQ", "ROUND"), ("BONE_MATRIX", "KEEP_VOLUME")])
def test_a_bone_bake_of_an_auto_mesh_plays_its_auto(addon, core, tmp_path, kind, profile):
    arm, obj = auto_limb(profile)
    result_warnings = []
    bake(directory=str(tmp_path), kind=kind, precision="EXR32", file_name="auto", export_gltf=True)
    meta, texture = load_bake(core, tmp_path / "auto.json")
    assert meta["auto"]["profile"] == profile and meta["deform_factor"]["mode"] == "AUTO"
    assert meta["options"]["runtime_auto"] is True and not result_warnings
    report = meta["error_report"]
    assert report["deform_factor"] is None and report["auto"]["profile"] == profile
    assert meta["layout"]["rows_per_frame"] == 2 * meta["auto"]["row_offset"]
    dg = bpy.context.evaluated_depsgraph_get()
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    rest = bind.cached_bind(obj, dg).posed(dg).auto_bone_data().vertices
    np.testing.assert_array_equal(auto_rest(meta, obj), rest)  # vertex_geometry, as the core has it
    (clip,) = meta["clips"]
    count = clip["frame_count"]
    stored = np.arange(count, dtype=np.float64)
    halfway = stored[:-1] + 0.5
    diagonal = report["bbox_diagonal"]
    for name, samples in (("frames", stored), ("mid_frames", halfway)):
        want_p, want_f = truth(addon, arm, obj, clip["frame_start"] + samples * clip["frame_step"])
        got_p, got_f = decoded(addon, meta, texture, obj, 0, samples)
        world = np.array(obj.matrix_world)[:3, :3]
        error = np.linalg.norm((got_p - want_p) @ world.T, axis=-1).max()
        factor_error = np.abs(got_f - want_f).max()
        print(
            f"{kind} {name}: position {error:.3g} (claimed {report[name]['max']:.3g}), "
            f"factor {factor_error:.3g}"
        )
        assert error <= report[name]["max"] + SLACK * diagonal
        assert factor_error <= report["auto"]["factor"][name]["max"] + 1e-5
    assert report["auto"]["factor"]["frames"]["max"] < 1e-4  # EXR32: the core's own factors
    assert report["frames"]["max"] < 1e-4 * diagonal
    # the .glb carries the rest data per exported vertex, as glTF's float VEC4 _ANIMTEX_AUTO_REST
    node = read_gltf(tmp_path / "auto.glb")[obj.name]
    vertex = node["_ANIMTEX_VERTEX"].astype(np.int64)
    np.testing.assert_array_equal(node["_ANIMTEX_AUTO_REST"], auto_rest(meta, obj)[vertex])
    assert "_animtex_auto_rest" not in obj.data.attributes  # the export's copies are gone


def test_runtime_auto_off_bakes_one_runtime_factor(addon, core, tmp_path):
    arm, obj = auto_limb()
    bake(directory=str(tmp_path), kind="BONE_DQ", precision="PNG16", file_name="plain", runtime_auto=False)
    meta = json.loads((tmp_path / "plain.json").read_text(encoding="utf-8"))
    assert "auto" not in meta and "auto_rest" not in meta["mesh_attributes"]
    assert meta["deform_factor"]["mode"] == "GLOBAL" and meta["error_report"]["deform_factor"] == 0.5
    assert "animtex_auto_rest" not in obj.data.attributes


def test_meshes_auto_cannot_be_carried_for_bake_as_before_with_a_warning(addon, animtex, tmp_path):
    arm, obj = auto_limb("JOINT")
    options = animtex.BakeOptions(
        directory=str(tmp_path), kind="BONE_DQ", precision="PNG16", file_name="joint"
    )
    result = animtex.bake(bpy.context, arm, options)
    assert "auto" not in result.metadata and result.metadata["deform_factor"]["mode"] == "GLOBAL"
    (warning,) = [w for w in result.warnings if "Per Joint" in w]
    assert "'AutoLimb'" in warning and "runtimes do not compute" in warning and "\n" not in warning


def test_the_bake_option_carries_auto_for_meshes_in_another_mode(addon, animtex, core, tmp_path):
    arm, obj = auto_limb()
    obj.hybrid_skin.factor_mode = "GLOBAL"
    options = animtex.BakeOptions(
        directory=str(tmp_path), kind="BONE_DQ", precision="EXR16", file_name="given", factor_mode="AUTO"
    )
    result = animtex.bake(bpy.context, arm, options)
    assert result.metadata["auto"]["profile"] == "ROUND"
    assert result.metadata["deform_factor"] == {
        "value": 0.5,
        "baked": False,
        "mode": "AUTO",
        "source": "bake",
    }
    assert obj.hybrid_skin.factor_mode == "GLOBAL"  # the option leaves the object's own
    diag = bbox_diagonal(coordinates(obj))
    assert result.report["frames"]["max"] < 1e-2 * diag


def test_a_babylon_export_of_an_auto_bake_says_babylon_plays_lbs(addon, animtex, tmp_path):
    arm, obj = auto_limb()
    options = animtex.BakeOptions(
        directory=str(tmp_path), kind="BONE_MATRIX", precision="PNG16", file_name="vat", export_gltf=True,
        export_babylon=True,
    )  # fmt: skip
    result = animtex.bake(bpy.context, arm, options)
    assert result.metadata["auto"]["profile"] == "ROUND" and result.babylon_path
    (warning,) = [w for w in result.warnings if "Babylon.js" in w]
    assert "plays LBS only" in warning and "\n" not in warning


def test_which_auto_a_bone_texture_carries_and_why_not(addon):
    """All meshes in Auto with one round profile: the texture carries it. Otherwise one sentence naming
    the mesh that stops it, and no Auto (one runtime factor); no mesh in Auto: nothing to say."""
    choose = importlib.import_module(addon.__name__ + ".animtex.scene").runtime_auto_profile
    assert choose(["A", "B"], ["AUTO", "AUTO"], ["ROUND", "ROUND"]) == ("ROUND", None)
    assert choose(["A"], ["AUTO"], ["KEEP_VOLUME"]) == ("KEEP_VOLUME", None)
    assert choose(["A", "B"], ["GLOBAL", "VERTEX_GROUP"], ["ROUND", "ROUND"]) == (None, None)
    cases = [
        ((["A", "B"], ["AUTO", "GLOBAL"], ["ROUND", "ROUND"]), "'A' is in factor mode Auto but 'B' is not"),
        ((["A", "B"], ["AUTO", "AUTO"], ["ROUND", "JOINT"]), "'B' uses Auto's Per Joint (0.1) profile"),
        ((["A", "B"], ["AUTO", "AUTO"], ["ROUND", "KEEP_VOLUME"]), "profiles (KEEP_VOLUME, ROUND)"),
    ]
    for args, says in cases:
        profile, why = choose(*args)
        assert profile is None and says in why and why.count(". ") == 0, why
