"""Bakes that cannot give the right result are refused in one sentence, and change nothing.

Issue 12: shared mesh data (wrong result 9), Shape Key Lock and absolute shape keys (played back 67% off,
reported as finished), Vertex Group factor mode without a group (a traceback in every bake), and a bake
that breaks half-way (the error funnel takes back what was written).
"""

from __future__ import annotations

import importlib

import bpy
import pytest

from tests.robustness.bake_scene import activate, refused, rig, same_as, snapshot

TARGETS = ["SHAPE_KEYS", "CURRENT", "PC2", "MDD"]


def bake_kwargs(target: str, tmp_path) -> dict:
    kwargs = {"target": target, "frame_start": 1, "frame_end": 6}
    if target in ("PC2", "MDD"):
        kwargs["filepath"] = str(tmp_path / f"x.{target.lower()}")
    return kwargs


@pytest.mark.parametrize("target", TARGETS)
def test_vertex_group_factor_without_a_group_is_refused_by_every_bake(addon, tmp_path, target):
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = "VERTEX_GROUP"  # no group picked
    bpy.context.scene.frame_set(4)
    before = snapshot([tmp_path])
    message = "no factor vertex group is set"
    refused(bpy.ops.hybrid_skin.bake_deformation, message, **bake_kwargs(target, tmp_path))
    same_as(before, [tmp_path], "after a refused bake")
    assert not obj.hybrid_skin.bake_state


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "PC2"])
def test_a_bake_of_a_shared_mesh_is_refused(addon, tmp_path, target):
    """A bake on one object would deform every object that uses the mesh (twice, where skinned)."""
    arm, obj = rig()
    twin = bpy.data.objects.new("Twin", obj.data)
    bpy.context.scene.collection.objects.link(twin)
    activate(obj)
    before = snapshot([tmp_path])
    refused(bpy.ops.hybrid_skin.bake_deformation, "shares its mesh", **bake_kwargs(target, tmp_path))
    same_as(before, [tmp_path], "after a refused bake")


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "CURRENT"])
def test_shape_key_lock_refuses_a_shape_key_bake(addon, target):
    """With Shape Key Lock only the active key shows: baked keys would never play."""
    arm, obj = rig(keys=True)
    obj.show_only_shape_key = True
    before = snapshot()
    refused(bpy.ops.hybrid_skin.bake_deformation, "Shape Key Lock is on", target=target)
    same_as(before, what="after a refused bake")


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "CURRENT"])
def test_absolute_shape_keys_refuse_a_shape_key_bake(addon, target):
    arm, obj = rig(keys=True)
    obj.data.shape_keys.use_relative = False
    before = snapshot()
    refused(bpy.ops.hybrid_skin.bake_deformation, "absolute shape keys", target=target)
    same_as(before, what="after a refused bake")


def test_shape_key_lock_still_allows_a_point_cache(addon, tmp_path):
    """A point cache overwrites the positions: Shape Key Lock does not stop it from playing."""
    arm, obj = rig(keys=True)
    obj.show_only_shape_key = True
    assert bpy.ops.hybrid_skin.bake_deformation(**bake_kwargs("PC2", tmp_path)) == {"FINISHED"}


def test_a_bake_that_breaks_half_way_is_reported_and_taken_back(addon, monkeypatch):
    """A bug while the keys are written (here: the third key's coordinates): the funnel reports one
    sentence and the keys already written, the action and the bypassed modifier are taken back."""
    bridge = importlib.import_module(addon.__name__ + ".bridge")
    real, calls = bridge.set_shape_key_points, []

    def breaks(key_block, positions):
        calls.append(key_block.name)
        if len(calls) == 3:
            raise ZeroDivisionError("simulated bug")
        real(key_block, positions)

    monkeypatch.setattr(bridge, "set_shape_key_points", breaks)
    arm, obj = rig(keys=True)
    bpy.context.scene.frame_set(3)
    before = snapshot()
    message = "Bake Hybrid Skin Deformation failed (ZeroDivisionError: simulated bug)"
    refused(bpy.ops.hybrid_skin.bake_deformation, message, frame_start=1, frame_end=12)
    assert len(calls) == 3
    same_as(before, what="after a bake that broke half-way")
    assert not obj.hybrid_skin.bake_state


def test_a_rebake_that_breaks_keeps_the_scene_consistent(addon, monkeypatch):
    """The second bake fails during its frames: nothing of the user's is lost, and the object is left
    either baked or not, never half (no keys without a record, no bypassed modifier without one)."""
    arm, obj = rig(keys=True)
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=6)
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    monkeypatch.setattr(baker.Baker, "step", lambda self: 1 / 0)
    refused(bpy.ops.hybrid_skin.bake_deformation, "ZeroDivisionError", frame_start=1, frame_end=12)
    monkeypatch.undo()
    keys = [k for k in obj.data.shape_keys.key_blocks.keys() if k.startswith("HS Bake")]
    assert bool(keys) == bool(obj.hybrid_skin.bake_state)
    assert obj.modifiers["Armature"].show_render == (not obj.hybrid_skin.bake_state)
    bpy.ops.hybrid_skin.remove()
    assert obj.modifiers["Armature"].show_render and obj.modifiers["Armature"].show_viewport
    assert list(obj.data.shape_keys.key_blocks.keys()) == ["Basis", "Bulge"]


def test_a_started_bake_that_is_cancelled_changes_nothing(addon):
    """What Esc in the modal bake does (``Baker.cancel`` through the operator's rollback), half-way."""
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    arm, obj = rig(keys=True)
    bpy.context.scene.frame_set(2)
    before = snapshot()
    job = baker.Baker(bpy.context, obj, "SHAPE_KEYS", baker.bake_frames(1, 12, 1))
    job.start()
    job.step()
    job.step()
    job.cancel()
    same_as(before, what="after a cancelled bake")
