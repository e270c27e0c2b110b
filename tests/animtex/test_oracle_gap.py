"""The sidecar's error figures hold against Blender's own evaluation, not only against the add-on's skinning.

Issue 28 §3: at EXR32 the float32 difference between the add-on's skinning (the bake's truth) and Blender's
own evaluation dominates what a user measures (7-9x the claim on the rig it was found on). The bake now
measures that gap at its samples (Blender's Armature modifier, with and without Preserve Volume) and adds it
to every ``max`` (``error_report.oracle_gap``).

Here the tentacle rig (:mod:`tests.animtex.tentacle`: twist, hard box, partial keys, mesh units half the
scene's) is baked at EXR32 with deform factor 0.5, and the decoded texture (the core decoders, as an engine
plays it) is compared, at every stored and halfway frame of every clip, with Blender's own result: its
two-modifier mix at 0.5 (LBS below a Preserve Volume modifier with Multi Modifier), and for the bone kind
also its Armature modifier alone (factor 0) and with Preserve Volume (factor 1), in scene units. Every
claimed ``max`` must hold, and the claim without the gap must not (the gap is what makes it hold).
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.animtex.tentacle import SCALE, tentacle_scene
from tests.support.animtex import clip_frames, coordinates, load_bake, mesh_attribute, scene_pose, set_pose
from tests.support.assets import play
from tests.support.scenes import native_positions

FACTOR = 0.5


def blender(arm, meshes, pose, action, frames, factor: float) -> list[np.ndarray]:
    """Per mesh ``(S, N, 3)`` world positions: Blender's own evaluation at ``frames`` of ``action``."""
    out = [[] for _ in meshes]
    for frame in frames:
        set_pose(arm, pose)
        play(arm, action, float(frame))
        for positions, obj in zip(out, meshes):
            local = native_positions(obj, factor).astype(np.float64)
            w = np.array(obj.matrix_world)
            positions.append(local @ w[:3, :3].T + w[:3, 3])
    return [np.array(p) for p in out]


def decoded(core, meta, texture, meshes, clip: int, samples: np.ndarray, factor: float) -> list[np.ndarray]:
    """Per mesh ``(S, N, 3)`` world positions of the texture as an engine plays it (core decoders)."""
    if meta["kind"] == "VERTEX":
        index = [mesh_attribute(o, "animtex_index", 1, "value", np.int32) for o in meshes]
        rest = np.zeros((meta["layout"]["item_count"], 3), np.float32)
        for obj, idx in zip(meshes, index):
            rest[idx] = coordinates(obj)
        items, _ = core.decode_vertex_frames(texture, rest, clip, samples)
        local = [items[:, idx] for idx in index]
    else:
        skin = importlib.import_module(core.__name__ + ".decode").skin_with_bone_frames
        frames = core.decode_bone_frames(texture, clip, samples)
        local = []
        for obj in meshes:
            idx = mesh_attribute(obj, "animtex_bone_indices", 4, "color").astype(np.int32)
            w = mesh_attribute(obj, "animtex_bone_weights", 4, "color")
            local.append(skin(frames, coordinates(obj), idx, w, factor)[0])
    worlds = [np.array(o.matrix_world) for o in meshes]  # the rig's objects do not move
    return [p.astype(np.float64) @ w[:3, :3].T + w[:3, 3] for p, w in zip(local, worlds)]


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_MATRIX"])
def test_claims_hold_against_blenders_own_evaluation(addon, animtex, core, tmp_path, kind):
    arm, meshes, actions = tentacle_scene()
    pose = scene_pose(arm)
    options = animtex.BakeOptions(
        str(tmp_path), kind=kind, precision="EXR32", file_name="t", deform_factor=FACTOR
    )
    animtex.bake(bpy.context, arm, options, actions)
    meta, texture = load_bake(core, tmp_path / "t.json")
    assert meta["units"]["mesh_to_scene_scale"] == pytest.approx(SCALE)
    report = meta["error_report"]
    gap = report["oracle_gap"]
    assert gap["samples"] == gap["of"] > 0  # a small rig: measured at every sample
    assert gap["max"] > 0.0
    factors = {FACTOR: None}
    if kind != "VERTEX":
        factors.update({e["deform_factor"]: e for e in report["by_deform_factor"]})
        added = {e["deform_factor"]: e["max"] for e in gap["by_deform_factor"]}
    worst = {f: {"frames": 0.0, "mid_frames": 0.0} for f in factors}
    for ci, clip in enumerate(meta["clips"]):
        action = bpy.data.actions[clip["name"]]
        stored, halfway = clip_frames(clip)
        entry = report["clips"][ci]
        for name, frames, samples in (
            ("frames", stored, np.arange(len(stored), dtype=float)),
            ("mid_frames", halfway, np.arange(len(halfway)) + 0.5),
        ):
            for f in factors:
                got = decoded(core, meta, texture, meshes, ci, samples, f)
                want = blender(arm, meshes, pose, action, frames, f)
                error = max(float(np.linalg.norm(g - w, axis=-1).max()) for g, w in zip(got, want))
                worst[f][name] = max(worst[f][name], error)
                if f == FACTOR:  # per clip, at the report's own factor
                    assert error <= entry[name]["max"], (clip["name"], name, error, entry[name]["max"])
    for f, where in worst.items():
        claims = report if f == FACTOR else factors[f]
        own_gap = gap["max"] if f == FACTOR else added[f]
        for name in ("frames", "mid_frames"):
            print(
                f"{kind} f={f} {name}: vs Blender {where[name]:.3g}, claim {claims[name]['max']:.3g} "
                f"(without the gap {claims[name]['max'] - own_gap:.3g}, gap {own_gap:.3g})"
            )
            assert where[name] <= claims[name]["max"], (f, name, where[name], claims[name]["max"])
    if kind == "VERTEX":  # the issue: at EXR32 the stored frames' claim without the gap does not hold
        assert worst[FACTOR]["frames"] > report["frames"]["max"] - gap["max"]
    if "any_deform_factor_max" in report:
        assert report["any_deform_factor_max"] >= max(max(w.values()) for w in worst.values())


@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_the_gap_is_measured_against_blender_not_against_hybrid_skins_own_setup(
    addon, animtex, core, tmp_path, display
):
    """With Hybrid Skin on the meshes (the Evaluated display: Blender's LBS modifier plus its DQS part), the
    bake's "Blender LBS" was the hybrid: the rig's handlers showed the DQS part again whenever the bake
    showed the Armature modifier for Blender's LBS, and the gap at factor 0 came out as LBS vs hybrid
    (0.01 units on RobotExpressive). The bake holds its meshes: the gap is float rounding again, and every
    part of the setup is as it was after the bake."""
    arm, meshes, actions = tentacle_scene()
    for obj in meshes:
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.hybrid_skin.add(display=display) == {"FINISHED"}
    before = [_stack(o) for o in meshes]
    bpy.context.view_layer.objects.active = arm
    options = animtex.BakeOptions(
        str(tmp_path), kind="BONE_MATRIX", precision="EXR32", file_name="t", deform_factor=FACTOR
    )
    animtex.bake(bpy.context, arm, options, actions)
    meta, _texture = load_bake(core, tmp_path / "t.json")
    gap, size = meta["error_report"]["oracle_gap"], meta["error_report"]["bbox_diagonal"]
    assert gap["samples"] > 0
    for entry in gap["by_deform_factor"]:
        assert entry["max"] <= 2e-6 * size, (entry, size)
    assert gap["max"] <= 2e-6 * size, (gap, size)
    after = [_stack(o) for o in meshes]
    assert after == before


def _stack(obj) -> list:
    """Each modifier's name, Show in Viewport and (Armature modifiers) Preserve Volume."""
    return [(m.name, m.show_viewport, getattr(m, "use_deform_preserve_volume", None)) for m in obj.modifiers]
