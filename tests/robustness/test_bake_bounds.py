"""Every bake knows its size before it plays a frame (issue 35, item 1), and holds what it said.

Members of the class "no bound before the work": a stray key far out on the timeline (every texture kind,
and the tolerance search), clips that together do not fit, a memory budget a bake would exceed, a typo in a
shape-key bake's End, a shape-key bake over the budget, a point cache larger than its disk. Each refusal
is one sentence that names the frame range and what would fit, plays no frame, holds next to nothing
(:func:`tests.support.work.work_done`: counted, not timed) and changes nothing (the scene and every file's
bytes, :mod:`tests.support.snapshot`). Bakes that do run hold at most what their plan said, and the bone
kinds' report and the point caches hold no pose per frame.
"""

from __future__ import annotations

import importlib
import math
import re

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import activate, refused, rig, same_as, snapshot
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain
from tests.support.work import work_done

#: What a refusal may hold: its counts, a sentence, nothing that grows with the frames.
REFUSAL_BYTES = 4 << 20
STRAY = 400_000


@pytest.fixture
def animtex(addon):
    """The installed add-on's animation texture bake module."""
    return importlib.import_module(addon.__name__ + ".animtex.bake")


def stray_key(arm, frame: int = STRAY) -> None:
    """A key left far out on the timeline: the action's range now reaches it."""
    arm.pose.bones["Bone1"].keyframe_insert("rotation_euler", frame=frame)


def texture_bake(**kwargs):
    return bpy.ops.hybrid_skin.bake_animation_texture(**kwargs)


def dense_limb(rings: int) -> tuple:
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Limb", rings=rings, segments=64)
    skin_to_chain(obj, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angle in ((1, 0), (96, 120)):
        pb.rotation_euler = (math.radians(angle), 0, 0)
        pb.keyframe_insert("rotation_euler", frame=frame)
    activate(obj)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    return arm, obj


def assert_cheap(work, what: str) -> None:
    assert work.frames == 0, f"{what}: {work}"
    assert work.peak_bytes < REFUSAL_BYTES, f"{what}: {work}"


# ------------------------------------------------------------------------------------- texture bakes
@pytest.mark.parametrize("kind", ["VERTEX", "BONE_MATRIX", "BONE_DQ"])
def test_a_stray_key_far_out_is_refused_before_a_frame_is_played(addon, tmp_path, kind):
    arm, obj = rig()
    stray_key(arm)
    before = snapshot([tmp_path])
    with work_done() as work:
        text = refused(texture_bake, "taller than the 16,384 rows", directory=str(tmp_path), kind=kind)
    assert_cheap(work, "the refusal")
    action = arm.animation_data.action.name
    assert f"'{action}' (frames 1–{STRAY:,}) at frame step 1 are {STRAY:,} stored samples" in text, text
    step = float(re.search(r"frame step of at least ([\d.]+)", text).group(1))
    assert 24 <= step <= 26, text  # 400,000 frames in about 16,380 rows
    same_as(before, [tmp_path], "after a refused texture bake")


def test_the_named_step_is_the_smallest_that_fits(addon):
    """What the sentence proposes is what the bake accepts: the step it names fits, a hundredth less
    does not (the plan alone, nothing sampled)."""
    plan = importlib.import_module(addon.__name__ + ".core.animtex.plan")
    layout = importlib.import_module(addon.__name__ + ".core.animtex.layout")
    clips = [layout.Clip("Walk", 1, 1200, 24.0), layout.Clip("Stray", 1, STRAY, 24.0, loop=True)]
    texture = plan.plan_texture("VERTEX", "PNG16", item_count=30_000, vertex_count=30_000, part_count=2,
                                clips=clips, max_width=4096)  # fmt: skip
    assert not texture.fits and texture.layout.rows_per_frame == 15
    step = plan.fitting_step(texture)
    fits = plan.plan_texture("VERTEX", "PNG16", item_count=30_000, vertex_count=30_000, part_count=2,
                             clips=plan.clips_at(clips, step), max_width=4096)  # fmt: skip
    close = plan.plan_texture("VERTEX", "PNG16", item_count=30_000, vertex_count=30_000, part_count=2,
                              clips=plan.clips_at(clips, step - 0.01), max_width=4096)  # fmt: skip
    assert fits.fits and not close.fits, (step, fits.layout.height, close.layout.height)
    assert fits.stored_samples <= plan.samples_that_fit(texture) < close.stored_samples


def test_clips_that_fit_alone_but_not_together_are_refused(addon, tmp_path):
    """Eleven actions of 1,500 frames: each fits, together they are 16,511 samples."""
    arm, obj = rig()
    original = arm.animation_data.action
    for i in range(11):
        action = original.copy()
        action.name = f"Walk{i:02d}"
        arm.animation_data.action = action
        stray_key(arm, 1500)
        assert tuple(action.frame_range) == (1.0, 1500.0)
    arm.animation_data.action = original
    before = snapshot([tmp_path])
    with work_done() as work:
        text = refused(
            texture_bake, "taller than the 16,384 rows", directory=str(tmp_path), action_source="ALL"
        )
    assert_cheap(work, "the refusal")
    named = "'RigAction' (frames 1–12), 'Walk00' (frames 1–1,500), 'Walk01' (frames 1–1,500) and 9 more"
    assert named in text, text
    assert "at most 16,3" in text and "fewer actions" in text, text
    same_as(before, [tmp_path], "after a refused texture bake")


def test_a_bake_over_the_memory_budget_is_refused(addon, tmp_path):
    arm, obj = rig()
    before = snapshot([tmp_path])
    with work_done() as work:
        text = refused(texture_bake, "over the budget of", directory=str(tmp_path), memory_budget=1.0)
    assert_cheap(work, "the refusal")
    assert "the budget asked for" in text and "frames 1–12" in text and "samples fit" in text, text
    same_as(before, [tmp_path], "after a refused texture bake")


def test_a_tolerance_search_that_nothing_fits_is_refused(addon, tmp_path):
    arm, obj = rig()
    stray_key(arm, 8 * STRAY)
    before = snapshot([tmp_path])
    with work_done() as work:
        refused(texture_bake, "taller than the 16,384 rows", directory=str(tmp_path), tolerance=0.001)
    assert_cheap(work, "the refusal")
    same_as(before, [tmp_path], "after a refused texture bake")


def test_the_tolerance_search_leaves_out_the_steps_that_do_not_fit(addon, animtex, tmp_path):
    """A narrow texture (Max Width 16: 8 items a row) of a 1,280-vertex limb takes about 165 rows a
    frame and holds under 100 samples: of a 300-frame clip the small steps do not fit; the search says so
    and bakes with the others."""
    arm, obj = dense_limb(20)
    stray_key(arm, 300)
    options = animtex.BakeOptions(str(tmp_path), tolerance=1e9, max_width=16, file_name="narrow")
    job = animtex.TextureBake(bpy.context, obj, options)
    kept = sorted({s for s, _ in job.plans})
    left = sorted(set(animtex.AUTO_STEPS) - set(kept))
    assert 1 in left and 8 in kept and all(p.fits for p in job.plans.values()), kept
    rows = next(iter(job.plans.values())).layout.rows_per_frame
    assert all(301 / s * rows > 16_000 for s in left) and all(301 / s * rows < 16_384 for s in kept)
    with work_done() as work:
        for _ in job.steps():
            pass
    assert job.result.tried == ((8, "PNG8", pytest.approx(job.result.report["overall"]["max"])),)
    assert work.frames == job.evaluations + 2  # and the frame the bake starts from, put back at the end
    names = ", ".join(f"{s:g}" for s in left)
    assert any(f"leaves out frame step(s) {names}" in w for w in job.result.warnings), job.result.warnings


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_a_bake_holds_at_most_what_its_plan_says(addon, animtex, tmp_path, kind):
    arm, obj = rig()
    options = animtex.BakeOptions(str(tmp_path), kind=kind, precision="EXR32", file_name=kind)
    job = animtex.TextureBake(bpy.context, obj, options)
    (plan,) = job.plans.values()
    with work_done() as work:
        for _ in job.steps():
            pass
    assert work.peak_bytes <= plan.peak_bytes, f"{work} > plan {plan.peak_bytes / 1e6:.1f} MB"
    # every stored frame once, the halfway ones once more, and the bone kinds' stored frames again
    assert job.evaluations == plan.checked_samples + (kind != "VERTEX") * plan.stored_samples


def test_the_bone_kinds_keep_no_pose_for_their_report(addon, animtex, tmp_path):
    """3,200 vertices, 16 then 48 frames of BONE_DQ: the report compares every stored and halfway sample
    (95 skinned poses of 3,200 × 12 floats, 15 MB, at 48 frames) without keeping one; what grows with
    the frames is the bone data alone (a few KB a frame)."""
    arm, obj = dense_limb(50)
    peaks = {}
    for end in (16, 48):
        options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", file_name=f"limb{end}")
        bpy.context.scene.frame_end = end
        action = arm.animation_data.action
        action.use_frame_range, action.frame_start, action.frame_end = True, 1, end
        job = animtex.TextureBake(bpy.context, arm, options)
        with work_done() as work:
            for _ in job.steps():
                pass
        peaks[end] = work.peak_bytes
    pose = len(obj.data.vertices) * 12 * 4  # positions, normals and two extremes, float32
    assert peaks[48] - peaks[16] < 8 * pose, {k: f"{v / 1e6:.1f} MB" for k, v in peaks.items()}


# ------------------------------------------------------------------------ shape keys and point caches
def test_a_typo_in_end_is_refused_before_a_key_is_baked(addon):
    arm, obj = rig(keys=True)
    before = snapshot()
    with work_done() as work:
        text = refused(bpy.ops.hybrid_skin.bake_deformation, "shape keys for 'Cylinder'", frame_start=1,
                       frame_end=1_000_000)  # fmt: skip
    assert_cheap(work, "the refusal")
    assert "Frames 1–1,000,000 (every frame) are 1,000,000 shape keys" in text, text
    assert "which has 2: a mesh holds at most 32,767" in text and "End of at most 32,765" in text, text
    assert "Step of at least 31" in text, text
    same_as(before, what="after a refused shape-key bake")


def test_a_shape_key_bake_over_the_memory_budget_is_refused(addon):
    arm, obj = rig()
    before = snapshot()
    with work_done() as work:
        text = refused(bpy.ops.hybrid_skin.bake_deformation, "over the budget of", frame_start=1,
                       frame_end=12, memory_budget=0.01)  # fmt: skip
    assert_cheap(work, "the refusal")
    assert "Frames 1–12 (every frame) are 12 shape keys" in text and "point cache" in text, text
    same_as(before, what="after a refused shape-key bake")


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_point_cache_larger_than_the_free_space_is_refused(addon, tmp_path, monkeypatch, fmt):
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    usage = baker.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(baker.shutil, "disk_usage", lambda folder: usage._replace(free=1000))
    arm, obj = rig()
    before = snapshot([tmp_path])
    with work_done() as work:
        text = refused(bpy.ops.hybrid_skin.bake_deformation, "1 KB free", target=fmt, frame_start=1,
                       frame_end=12, filepath=str(tmp_path / f"x.{fmt.lower()}"))  # fmt: skip
    assert_cheap(work, "the refusal")
    assert "Frames 1–12 (every frame) are 12 frames of" in text and "'x." in text, text
    same_as(before, [tmp_path], "after a refused point-cache bake")


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_point_cache_streams_its_frames_to_the_file(addon, tmp_path, fmt):
    """120 frames of 6,400 vertices, a 9 MB file: the bake holds about one frame at a time. A 30-frame
    bake first pays what any bake of the limb holds once (its binding), so the 120-frame one shows what
    grows with the frames: nothing beyond a couple of frames."""
    arm, obj = dense_limb(100)
    frame_bytes = len(obj.data.vertices) * 3 * 8
    peaks = {}
    for end in (30, 120):
        path = tmp_path / f"limb{end}.{fmt.lower()}"
        with work_done() as work:
            assert bpy.ops.hybrid_skin.bake_deformation(
                target=fmt, frame_start=1, frame_end=end, filepath=str(path)
            ) == {"FINISHED"}
        assert work.frames >= end
        peaks[end] = work.peak_bytes
    size = path.stat().st_size
    assert size > 9e6
    assert peaks[120] < size / 4, f"{work} for a {size / 1e6:.0f} MB file"
    assert peaks[120] <= peaks[30] + 2 * frame_bytes, f"peaks {peaks}: the 120-frame bake held more"


# --------------------------------------------------------------------------------- non-finite frames
def infinite_at_frame_5():
    """Both bones scaled by 1e30 at frame 5 (a keyframe gone wrong): their product overflows float32, and
    Blender's own pose matrices are infinite there."""
    arm, obj = rig(keys=True)
    for name in ("Bone0", "Bone1"):
        pb = arm.pose.bones[name]
        for frame, scale in ((4, 1.0), (5, 1e30), (6, 1.0)):
            pb.scale = (scale, scale, scale)
            pb.keyframe_insert("scale", frame=frame)
    bpy.context.scene.frame_set(5)
    assert not np.isfinite(np.array(arm.pose.bones["Bone1"].matrix)).all()
    bpy.context.scene.frame_set(1)
    return arm, obj


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "CURRENT", "PC2", "MDD"])
def test_a_frame_skinned_to_infinity_is_refused(addon, tmp_path, target):
    """The bake stops at that frame, names it and takes back everything, as the texture bakes do."""
    arm, obj = infinite_at_frame_5()
    kwargs = {"target": target}
    if target == "CURRENT":
        bpy.context.scene.frame_set(5)
    else:
        kwargs.update(frame_start=1, frame_end=12)
    if target in ("PC2", "MDD"):
        kwargs["filepath"] = str(tmp_path / f"x.{target.lower()}")
    before = snapshot([tmp_path])
    refused(bpy.ops.hybrid_skin.bake_deformation, "Frame 5 of 'Cylinder' deforms", **kwargs)
    same_as(before, [tmp_path], "after a refused bake")
    assert not obj.hybrid_skin.bake_state


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_a_texture_frame_skinned_to_infinity_is_refused(addon, tmp_path, kind):
    arm, obj = infinite_at_frame_5()
    before = snapshot([tmp_path])
    text = refused(texture_bake, "Frame 5 of 'RigAction' deforms the meshes to NaN or infinity",
                   directory=str(tmp_path), kind=kind)  # fmt: skip
    same_as(before, [tmp_path], "after a refused texture bake")
    assert "leave the action out" in text
