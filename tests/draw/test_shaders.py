"""The GLSL shaders compute what the numpy core computes.

Each vertex is drawn as one point into an RGBA32F target with its skinned position (second pass: unit
normal) as colour (``GpuSkin.readback``), read back and compared with ``core.skinning.skin`` on the same
binding and palette. Tolerances: positions 1e-5 × the rest bounding-box diagonal, unit normals 1e-5
absolute - float32 rounding, with room for the GPU's different operation order (FMA), and far below any
real formula difference (the scenes make LBS and DQS differ by > 1e-2 of the diagonal). The Auto factor the
shader derives per vertex, for every profile, is compared with ``core.autofactor.vertex_factors`` at 1e-5
relative (and 2e-6 absolute: the round profiles reach 0).
"""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

import bpy
import gpu
import numpy as np
import pytest
from mathutils import Euler, Matrix

from tests.support.scenes import bbox_diagonal, make_chain_armature, make_cylinder, pose_bone, skin_to_chain

pytestmark = pytest.mark.gpu

POSITION_TOL = 1e-5  # relative to the bbox diagonal
NORMAL_TOL = 1e-5  # absolute, unit vectors


@pytest.fixture
def hs(addon, gpu_context) -> SimpleNamespace:
    """The installed add-on's modules (shaders loaded from the zip's ``<package>/shaders/``)."""
    name = addon.__name__
    modules = ("rig.bind", "bridge", "rig.factor", "core.skinning", "core.gpu_layout", "core.autofactor",
               "draw.resources", "draw.shaders", "draw.framing", "analyze.comparison")
    return SimpleNamespace(**{m.split(".")[-1]: importlib.import_module(f"{name}.{m}") for m in modules})


def deform_factor(hs: SimpleNamespace, factors: float | np.ndarray | str):
    """The add-on's ``DeformFactor`` for a number, an ``(N,)`` array or ``"AUTO"``."""
    if isinstance(factors, str):
        return hs.factor.DeformFactor.automatic()
    if np.ndim(factors):
        return hs.factor.DeformFactor.per_vertex(factors)
    return hs.factor.DeformFactor(float(factors))


def posed(rig):
    """``rig`` brought up to the current frame, the add-on's one way (``MeshBind.posed``)."""
    return rig.posed(bpy.context.evaluated_depsgraph_get())


def bind(hs: SimpleNamespace, obj: bpy.types.Object, factors: float | np.ndarray | str = 0.5):
    """Bind ``obj`` with the add-on and build its ``GpuSkin`` for the current pose."""
    rig = hs.bind.bind(obj, bpy.context.evaluated_depsgraph_get())
    pose = posed(rig)
    skin = hs.resources.GpuSkin(rig, hs.bridge.surface(obj.data), deform_factor(hs, factors))
    skin.update_pose(pose.palette, pose.target_to_armature)
    return rig, pose.palette, pose.target_to_armature, skin


def assert_matches_core(hs, rig, palette, t2a, skin, factors, **readback) -> tuple[float, float]:
    """GPU readback vs ``skin(...)``; returns (max position error / diagonal, max normal error)."""
    ref_p, ref_n = hs.skinning.skin(rig.rest_positions, rig.binding, palette, factors, rig.rest_normals, t2a)
    got_p = skin.readback(**readback)
    got_n = skin.readback(normals=True, **readback)
    diag = bbox_diagonal(rig.rest_positions)
    np.testing.assert_allclose(got_p, ref_p, rtol=0, atol=POSITION_TOL * diag)
    np.testing.assert_allclose(got_n, ref_n, rtol=0, atol=NORMAL_TOL)
    return float(np.abs(got_p - ref_p).max() / diag), float(np.abs(got_n - ref_n).max())


def lbs_dqs_gap(hs, rig, palette, t2a) -> float:
    """How far LBS and DQS results lie apart (relative): a test whose gap is tiny could not see f."""
    lbs = hs.skinning.skin(rig.rest_positions, rig.binding, palette, 0.0, None, t2a)[0]
    dqs = hs.skinning.skin(rig.rest_positions, rig.binding, palette, 1.0, None, t2a)[0]
    return float(np.abs(lbs - dqs).max() / bbox_diagonal(rig.rest_positions))


@pytest.fixture
def bent_cylinder():
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone1", (75, 40, 20))
    return arm, cyl


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0])
def test_positions_and_normals_match_core(hs, bent_cylinder, factor):
    arm, cyl = bent_cylinder
    rig, palette, t2a, skin = bind(hs, cyl, factor)
    assert lbs_dqs_gap(hs, rig, palette, t2a) > 1e-2
    assert_matches_core(hs, rig, palette, t2a, skin, factor)  # the object's factor (uniform path)
    assert_matches_core(hs, rig, palette, t2a, skin, factor, deform_factor=factor)  # the override path


def test_per_vertex_factor_map(hs, bent_cylinder):
    arm, cyl = bent_cylinder
    rig, palette, t2a, skin = bind(hs, cyl)
    factor_map = np.random.default_rng(11).random(rig.vertex_count).astype(np.float32)
    skin.set_factor(deform_factor(hs, factor_map))
    assert_matches_core(hs, rig, palette, t2a, skin, factor_map)
    skin.deform_factor = 0.3  # the slider over a vertex group: a uniform, no upload
    assert_matches_core(hs, rig, palette, t2a, skin, (np.float32(0.3) * factor_map).astype(np.float32))
    skin.set_factor(deform_factor(hs, 0.8))  # back to a global factor: the map is ignored
    assert_matches_core(hs, rig, palette, t2a, skin, 0.8)


def test_sign_rule_negates_opposed_bones(hs, bent_cylinder):
    """Twists of +100 and -100 degrees: the bones' quaternions point apart, so the second is negated."""
    arm, cyl = bent_cylinder
    pose_bone(arm, "Bone0", (0, 100, 0))
    pose_bone(arm, "Bone1", (0, -200, 0))
    rig, palette, t2a, skin = bind(hs, cyl)
    assert float(palette.real[0] @ palette.real[1]) < -0.1
    assert_matches_core(hs, rig, palette, t2a, skin, 1.0, deform_factor=1.0)


def test_scaled_bones_use_the_pivot(hs, bent_cylinder):
    arm, cyl = bent_cylinder
    pose_bone(arm, "Bone1", (50, 20, 0), scale=(1.6, 0.7, 1.3))
    pose_bone(arm, "Bone0", (0, 0, 30), scale=(1.2, 1.2, 0.9))
    rig, palette, t2a, skin = bind(hs, cyl)
    assert palette.pivot is not None and np.abs(palette.pivot).max() > 1e-2
    for factor in (0.5, 1.0):
        assert_matches_core(hs, rig, palette, t2a, skin, factor, deform_factor=factor)


def test_non_identity_object_transforms(hs, bent_cylinder):
    arm, cyl = bent_cylinder
    arm.matrix_world = Matrix.LocRotScale((0.3, -1.0, 0.2), Euler((0.4, 0.1, -0.6)), (1.0, 1.3, 0.9))
    cyl.matrix_world = Matrix.LocRotScale((0.1, 0.2, -0.3), Euler((-0.3, 0.2, 0.5)), (0.7, 1.4, 1.1))
    bpy.context.view_layer.update()
    rig, palette, t2a, skin = bind(hs, cyl)
    assert np.abs(t2a - np.eye(4)).max() > 0.1
    for factor in (0.0, 0.5, 1.0):
        assert_matches_core(hs, rig, palette, t2a, skin, factor, deform_factor=factor)


def test_mask_group_influence(hs, bent_cylinder):
    arm, cyl = bent_cylinder
    mask = cyl.vertex_groups.new(name="Mask")
    n = len(cyl.data.vertices)
    for i, w in enumerate(np.linspace(0.0, 1.0, n // 2)):
        mask.add([i], float(w), "REPLACE")
    cyl.modifiers["Armature"].vertex_group = "Mask"
    rig, palette, t2a, skin = bind(hs, cyl)
    influence = rig.binding.influence
    assert ((influence > 0) & (influence < 1)).sum() > 10 and (influence == 0).sum() > 10
    assert_matches_core(hs, rig, palette, t2a, skin, 0.5, deform_factor=0.5)


def test_bbone_segments(hs):
    arm = make_chain_armature("BRig", [1.0, 1.0, 1.0], segments=5)
    cyl = make_cylinder("BCyl", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=0.6)
    arm.pose.bones["Bone1"].bbone_curveinx = 0.4
    pose_bone(arm, "Bone1", (60, 0, 20))
    pose_bone(arm, "Bone2", (0, 120, 0))
    rig, palette, t2a, skin = bind(hs, cyl)
    assert palette.bone_count > 3  # B-bone segments are palette bones of their own
    for factor in (0.0, 0.5, 1.0):
        assert_matches_core(hs, rig, palette, t2a, skin, factor, deform_factor=factor)


@pytest.mark.slow
def test_more_than_256_bones(hs):
    count = 300
    arm = make_chain_armature("Long", [0.1] * count)
    cyl = make_cylinder("LongCyl", radius=0.2, height=0.1 * count, rings=4 * count, segments=12)
    skin_to_chain(cyl, arm, blend=0.05)
    for i, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = "XYZ"
        # 60 degrees of twist per joint (a candy wrapper at each one) and a gentle wave of bends.
        pb.rotation_euler = (math.radians(15.0 * math.sin(i / 5)), math.radians(60.0), 0.0)
    bpy.context.view_layer.update()
    rig, palette, t2a, skin = bind(hs, cyl)
    assert palette.bone_count == count and int(rig.binding.bone_indices.max()) > 256
    assert lbs_dqs_gap(hs, rig, palette, t2a) > 5e-4  # 50x the position tolerance (diagonal ~30)
    for factor in (0.0, 0.5, 1.0):
        assert_matches_core(hs, rig, palette, t2a, skin, factor, deform_factor=factor)


def test_single_method_variants(hs, bent_cylinder):
    """The benchmark variants (``#define HS_DQS_ONLY`` / ``HS_LBS_ONLY``) are DQS and LBS exactly."""
    arm, cyl = bent_cylinder
    rig, palette, t2a, skin = bind(hs, cyl, 0.5)
    assert_matches_core(hs, rig, palette, t2a, skin, 1.0, variant="dqs")
    assert_matches_core(hs, rig, palette, t2a, skin, 0.0, variant="lbs")


def test_update_pose_uploads_only_bones_until_the_rig_changes(hs, bent_cylinder):
    arm, cyl = bent_cylinder
    rig, palette, t2a, skin = bind(hs, cyl)
    static = (skin._influences, skin._corner_buffer, skin._corner_factors)  # per-bind GPU objects
    pose_bone(arm, "Bone1", (-60, 90, 0))
    new_palette = posed(rig).palette
    assert np.abs(new_palette.matrices - palette.matrices).max() > 0.1
    skin.update_pose(new_palette, t2a)
    assert (skin._influences, skin._corner_buffer, skin._corner_factors) == static
    assert_matches_core(hs, rig, new_palette, t2a, skin, 0.5)

    # A rig that re-read its rest input (animated shape keys) is followed on the next update_pose.
    rig.rest_positions = rig.rest_positions * np.float32(1.1)
    skin.update_pose(new_palette, t2a)
    assert skin._corner_buffer is not static[1]
    assert_matches_core(hs, rig, new_palette, t2a, skin, 0.5)


FACTOR_RTOL = 1e-5  # Auto factors: relative ...
FACTOR_ATOL = 2e-6  # ... and absolute, for the round profiles' factors near 0
AUTO_PROFILES = ("ROUND", "KEEP_VOLUME", "JOINT")


def assert_auto_matches_core(hs, rig, palette, t2a, skin, pose, profile) -> tuple[float, float]:
    """Shader Auto vs numpy Auto: the factor per vertex, then positions and normals skinned with it.
    Returns (max factor error, max position error / diagonal)."""
    expected = pose.auto_factors(profile)
    got = skin.readback_factors()
    np.testing.assert_allclose(got, expected, rtol=FACTOR_RTOL, atol=FACTOR_ATOL)
    _, position_error = assert_matches_core(hs, rig, palette, t2a, skin, expected)
    return float(np.abs(got - expected).max()), position_error


def bind_auto(hs, obj, profile):
    """``bind`` with the shader's Auto factor: the pose's per-bone data (and, for a round profile, the
    vertices' rest data) go with the palette."""
    rig, palette, t2a, skin = bind(hs, obj, "AUTO")
    pose = posed(rig)
    skin.update_pose(palette, t2a, auto_bone_data=pose.auto_bone_data(profile))
    return rig, palette, t2a, skin, pose


@pytest.mark.parametrize("profile", AUTO_PROFILES)
def test_auto_factor_bend_and_twist_limb(hs, profile):
    """Bent elbow, twisted wrist: the shader's Auto factor and result equal numpy's, for every profile."""
    arm = make_chain_armature("Rig", [1.0, 1.0, 1.0])
    cyl = make_cylinder("Limb", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=0.4)
    pose_bone(arm, "Bone1", (120, 0, 0))
    pose_bone(arm, "Bone2", (0, 170, 0))
    rig, palette, t2a, skin, pose = bind_auto(hs, cyl, profile)
    factors = pose.auto_factors(profile)
    # Keep Volume, the shallowest profile, spans 0.81-1 here (0.73-1 with its earlier width, 1.24).
    assert factors.max() > 0.9 and np.ptp(factors) > 0.15, "both joint kinds must show in the factors"
    assert_auto_matches_core(hs, rig, palette, t2a, skin, pose, profile)
    fixed = hs.skinning.skin(rig.rest_positions, rig.binding, palette, 0.5, None, t2a)[0]
    assert np.abs(skin.readback() - fixed).max() > 1e-2 * bbox_diagonal(rig.rest_positions)  # Auto matters
    assert_matches_core(hs, rig, palette, t2a, skin, 0.5, deform_factor=0.5)  # an override still wins

    pose_bone(arm, "Bone1", (0, 0, 40))  # the next frame: new bone data only, no per-vertex upload
    static = (skin._influences, skin._corner_buffer, skin._corner_factors)
    pose = posed(rig)
    palette = pose.palette
    skin.update_pose(palette, t2a, auto_bone_data=pose.auto_bone_data(profile))
    assert (skin._influences, skin._corner_buffer, skin._corner_factors) == static
    assert_auto_matches_core(hs, rig, palette, t2a, skin, pose, profile)

    skin.update_pose(palette, t2a)  # Auto without this pose's bone data cannot draw
    with pytest.raises(RuntimeError, match="auto_bone_data"):
        skin.readback()


def test_round_profile_rest_data_follows_the_object_placement(hs):
    """The round profiles read each vertex's rest position in armature space: moving the mesh object
    against the armature replaces that data (one upload) and the shader follows numpy."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Limb", height=2.0, rings=24)
    skin_to_chain(cyl, arm, blend=0.5)
    pose_bone(arm, "Bone1", (100, 0, 0))
    rig, palette, t2a, skin, pose = bind_auto(hs, cyl, "ROUND")
    before = pose.auto_factors("ROUND")
    buffer = skin._corner_factors
    cyl.location.z += 0.3  # the mesh slides along the bones: its vertices sit elsewhere relative to the joint
    bpy.context.view_layer.update()
    pose = posed(rig)
    skin.update_pose(pose.palette, pose.target_to_armature, auto_bone_data=pose.auto_bone_data("ROUND"))
    assert skin._corner_factors is not buffer
    assert np.abs(pose.auto_factors("ROUND") - before).max() > 0.1
    assert_auto_matches_core(hs, rig, pose.palette, pose.target_to_armature, skin, pose, "ROUND")


@pytest.mark.parametrize("profile", AUTO_PROFILES)
def test_auto_factor_bbone_chain(hs, profile):
    arm = make_chain_armature("BRig", [1.0, 1.0, 1.0], segments=5)
    cyl = make_cylinder("BCyl", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=0.6)
    arm.pose.bones["Bone1"].bbone_curveinx = 0.4
    pose_bone(arm, "Bone1", (60, 0, 20))
    pose_bone(arm, "Bone2", (0, 120, 0))
    rig, palette, t2a, skin, pose = bind_auto(hs, cyl, profile)
    assert palette.bone_count > 3
    factors = pose.auto_factors(profile)
    assert np.ptp(factors) > 0.2
    assert_auto_matches_core(hs, rig, palette, t2a, skin, pose, profile)


def test_auto_factor_equals_the_pair_sums_on_hard_influences(hs):
    """Many influences, near-rigid vertices (one weight ~1), large accumulated angles with tiny differences:
    the shader's one-pass sums keep the precision of the numpy pair loop and of its two-pass moments."""
    rng = np.random.default_rng(5)
    n, k, b = 4000, 8, 40
    weights = rng.random((n, k)).astype(np.float32) ** 3
    weights[: n // 4, 1:] *= np.float32(1e-4)  # near-rigid
    weights[n // 4 : n // 2, 2:] = 0.0  # two bones
    weights /= weights.sum(axis=1, keepdims=True)
    weights[7] = 0.0  # undeformed
    bones = rng.integers(0, b, (n, k)).astype(np.int32)
    binding = hs.skinning.SkinBinding(bones, weights, np.ones(n, dtype=np.float32))
    bone_data = rng.normal(size=(b, 8)).astype(np.float32)
    bone_data[:, 4] = np.abs(bone_data[:, 4]) + np.arange(b)  # A, a path length, grows down a chain
    bone_data[: b // 2, :4] = np.float32(3.0) + np.float32(1e-3) * bone_data[: b // 2, :4]  # big, close
    geometry = np.column_stack([rng.normal(size=(n, 3)), rng.uniform(0.1, 1.0, n)]).astype(np.float32)
    identity = hs.skinning.bone_palette(np.tile(np.eye(4), (b, 1, 1)), np.tile(np.eye(4), (b, 1, 1)))
    source = SimpleNamespace(rest_positions=rng.random((n, 3)).astype(np.float32),
                             rest_normals=np.tile(np.float32([0, 0, 1]), (n, 1)), binding=binding)
    surface = (np.zeros((0, 3), np.int32), np.zeros(0, np.int64), np.zeros((0, 3), np.float32))
    skin = hs.resources.GpuSkin(source, surface, hs.factor.DeformFactor.automatic())
    for profile in AUTO_PROFILES:
        pose = hs.autofactor.AutoPose(profile, bone_data, None if profile == "JOINT" else geometry)
        skin.update_pose(identity, np.eye(4), auto_bone_data=pose)
        expected = hs.autofactor.vertex_factors(pose, bones, weights)
        assert np.ptp(expected) > 0.3
        np.testing.assert_allclose(skin.readback_factors(), expected, rtol=FACTOR_RTOL, atol=FACTOR_ATOL)


def test_round_presence_equals_numpy_where_a_swinging_weight_ends(hs):
    """The presence's second pass (the swing vectors' deviations from their weighted mean): vertices blending
    two bones that do not swing against each other (B-bone segments) and, with a small weight, a bone swung
    150° against them, entries in every order and with zero-weight padding; the shader's factor equals
    numpy's, and the presence is what makes it (without it the same vertices would get up to 0.9 less)."""
    rng = np.random.default_rng(8)
    n = 3000
    theta = np.radians(150.0)
    head = np.array([0.0, 2.0, 0.0])
    swung = np.concatenate([[0.3, 0.0, theta, 0.0, theta], theta * head])
    bone_data = np.stack([np.zeros(8), swung, swung + np.float32(1e-3)]).astype(np.float32)
    small = rng.uniform(0.0, 0.12, n)
    split = rng.uniform(0.2, 0.8, n)
    weights = np.column_stack([small, (1 - small) * split, (1 - small) * (1 - split), np.zeros(n)])
    weights = weights.astype(np.float32)
    bones = np.tile(np.int32([0, 1, 2, 0]), (n, 1))
    order = np.argsort(rng.random((n, 4)), axis=1)  # the first entry (the shader's origin) varies
    weights, bones = np.take_along_axis(weights, order, 1), np.take_along_axis(bones, order, 1)
    along = rng.uniform(0.0, 1.5, n)
    geometry = np.column_stack([np.full(n, 0.5), 2.0 + along, np.zeros(n), np.full(n, 0.25)])
    geometry = geometry.astype(np.float32)
    binding = hs.skinning.SkinBinding(bones, weights, np.ones(n, dtype=np.float32))
    identity = hs.skinning.bone_palette(np.tile(np.eye(4), (3, 1, 1)), np.tile(np.eye(4), (3, 1, 1)))
    source = SimpleNamespace(rest_positions=rng.random((n, 3)).astype(np.float32),
                             rest_normals=np.tile(np.float32([0, 0, 1]), (n, 1)), binding=binding)
    surface = (np.zeros((0, 3), np.int32), np.zeros(0, np.int64), np.zeros((0, 3), np.float32))
    skin = hs.resources.GpuSkin(source, surface, hs.factor.DeformFactor.automatic())
    for profile in ("ROUND", "KEEP_VOLUME"):
        pose = hs.autofactor.AutoPose(profile, bone_data, geometry)
        skin.update_pose(identity, np.eye(4), auto_bone_data=pose)
        expected = hs.autofactor.vertex_factors(pose, bones, weights)
        shape = hs.autofactor.ROUND_SHAPES[profile]
        bare = hs.autofactor.round_factors(bone_data, bones, weights, geometry, shape, presence=0.0)
        assert np.abs(expected - bare).max() > 0.5
        np.testing.assert_allclose(skin.readback_factors(), expected, rtol=FACTOR_RTOL, atol=FACTOR_ATOL)


def test_compile_error_names_the_shader_and_carries_the_log(hs, monkeypatch):
    shaders = hs.shaders
    real_read = shaders._read

    def broken(name: str) -> str:
        source = real_read(name)
        if "frag" not in name:
            return source
        return source.replace("FragColor = ", "FragColor = hs_no_such_function() + ", 1)

    shaders.clear_cache()
    monkeypatch.setattr(shaders, "_read", broken)
    with pytest.raises(shaders.ShaderCompileError) as error:
        shaders.get("viewport", "hybrid")
    message = str(error.value)
    assert "hybrid_skin viewport/hybrid" in message and "hybrid_skin_frag.glsl" in message
    assert "hs_no_such_function" in message  # Blender's compiler log, not just "see console"
    monkeypatch.undo()
    shaders.clear_cache()
    assert shaders.get("viewport", "hybrid") is shaders.get("viewport", "hybrid")  # compiles, then cached


def test_viewport_draw_places_the_core_result_on_screen(hs, bent_cylinder):
    """``draw`` (object matrix, view-projection) covers exactly where the core's result projects to."""
    arm, cyl = bent_cylinder
    arm.matrix_world = Matrix.LocRotScale((0.3, -1.0, 0.2), Euler((0.4, 0.1, -0.6)), (1.0, 1.3, 0.9))
    cyl.matrix_world = Matrix.LocRotScale((0.1, 0.2, -0.3), Euler((-0.3, 0.2, 0.5)), (0.7, 1.4, 1.1))
    bpy.context.view_layer.update()
    rig, palette, t2a, skin = bind(hs, cyl, 0.5)
    local = hs.skinning.skin(rig.rest_positions, rig.binding, palette, 0.5, None, t2a)[0].astype(np.float64)
    object_matrix = np.array(cyl.matrix_world)
    world = local @ object_matrix[:3, :3].T + object_matrix[:3, 3]
    size = 256
    view_projection = hs.framing.frame_bounds(world, 1.0)
    clip = np.c_[world, np.ones(len(world))] @ view_projection.T
    expected = (clip[:, :2] / clip[:, 3:] + 1.0) / 2.0 * size  # pixel coordinates of the vertices

    pixels = np.zeros((size, size, 4), dtype=np.float32)
    offscreen = gpu.types.GPUOffScreen(size, size, format="RGBA32F")
    try:
        with offscreen.bind():
            framebuffer = gpu.state.active_framebuffer_get()
            framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
            skin.draw(view_projection, object_matrix, (0.8, 0.5, 0.3, 1.0))
            target = gpu.types.Buffer("FLOAT", pixels.shape, pixels)  # numpy memory, filled in place
            framebuffer.read_color(0, 0, size, size, 4, 0, "FLOAT", data=target)
    finally:
        offscreen.free()
    covered = pixels[..., 3] > 0.5
    rows, cols = np.flatnonzero(covered.any(axis=1)), np.flatnonzero(covered.any(axis=0))
    drawn = np.array([[cols.min(), rows.min()], [cols.max() + 1, rows.max() + 1]], dtype=np.float64)
    np.testing.assert_allclose(drawn, [expected.min(axis=0), expected.max(axis=0)], atol=1.5)  # pixels
    assert 0.0 < pixels[covered][:, :3].min() and pixels[covered][:, :3].max() <= 1.0  # lit, not blown out


def _panel_masks(pixels: np.ndarray, panel_width: int, background: tuple[float, ...]) -> list[np.ndarray]:
    """Per panel, which pixels show the mesh (differ from the background), label strip cut off."""
    mesh = np.abs(pixels[..., :3] - np.asarray(background[:3])).max(axis=-1) > 0.08
    height = pixels.shape[0]
    masks = []
    for i in range(3):
        m = mesh[:, i * panel_width + 4:(i + 1) * panel_width - 4].copy()
        m[int(height * 0.85):] = False  # labels live in the top strip (rows are bottom-up)
        masks.append(m)
    return masks


def test_render_comparison_shows_the_candy_wrapper(hs, tmp_path):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder", rings=32)
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone1", (0, 180, 0))  # twist about the bone's own axis
    width, height = 240, 320
    path = hs.comparison.render_comparison(bpy.context, cyl, tmp_path / "cmp.png", width=width, height=height)
    assert path.is_file() and not any(im.name.startswith("hybrid_skin_comparison") for im in bpy.data.images)
    image = bpy.data.images.load(str(path))
    try:
        assert tuple(image.size) == (3 * width, height)
        pixels = np.empty(3 * width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    pixels = pixels.reshape(height, 3 * width, 4)
    lbs, hybrid, dqs = _panel_masks(pixels, width, hs.comparison.BACKGROUND)

    rows = np.flatnonzero(dqs.any(axis=1))
    assert rows.size > height * 0.4, "the mesh should fill a good part of the panel"
    lo, hi = rows.min(), rows.max()
    middle = slice(lo + (hi - lo) * 3 // 10, lo + (hi - lo) * 7 // 10)  # around the twisted joint
    narrowest = [int(m[middle].sum(axis=1).min()) for m in (lbs, hybrid, dqs)]
    assert narrowest[0] < 0.3 * narrowest[2], f"LBS should collapse in the middle: widths {narrowest}"
    assert narrowest[0] < narrowest[1] < narrowest[2], f"the hybrid lies between: widths {narrowest}"
    top = slice(hi - (hi - lo) // 8, hi)  # the twisted end is rigidly rotated: same in all panels
    for m in (lbs, hybrid):
        assert np.mean(m[top] != dqs[top]) < 0.02
    changed = [(m[middle] != dqs[middle]).sum() / dqs[middle].sum() for m in (lbs, hybrid)]
    assert changed[0] > 0.1 and 0.02 < changed[1] < changed[0], f"silhouette change vs DQS: {changed}"

    for i in range(3):  # each panel carries its label
        strip = pixels[int(height * 0.85):, i * width:i * width + width // 2, :3]
        assert (strip.min(axis=-1) > 0.7).sum() > 20, f"panel {i} has no label"
