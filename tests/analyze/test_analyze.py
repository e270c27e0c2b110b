"""Analyze Deformation through the installed add-on: closed forms on a twisted cylinder, and the operator's
numbers equal :mod:`hybrid_skin.core.metrics` fed with arrays read straight from Blender in the test."""

from __future__ import annotations

import importlib
from types import ModuleType, SimpleNamespace

import bmesh
import bpy
import numpy as np
import pytest
from mathutils import Matrix

from tests.support.layout import RecordingLayout
from tests.support.scenes import make_chain_armature, make_cylinder, pose_bone, skin_to_chain

# Skinning runs in float32: positions carry ~1e-7 relative error; ratios of volumes and radii ~1e-6.
F32_ATOL = 2e-5


@pytest.fixture
def analyze(addon: ModuleType) -> SimpleNamespace:
    """The analysis as the installed add-on has it: its results (in the runtime), the core's segment
    lengths, the panel and its drawing."""
    module = importlib.import_module
    panel = module(addon.__name__ + ".analyze.panel")
    return SimpleNamespace(
        results=module(addon.__name__ + ".analyze.operators")._state().analyses,
        palette_lengths=module(addon.__name__ + ".core.analysis").palette_lengths,
        draw_results=panel.draw_results,
        VIEW3D_PT_hybrid_skin_analyze=panel.VIEW3D_PT_hybrid_skin_analyze,
    )


def limb(twist_deg: float = 0.0, bend_deg: float = 0.0, segments: int = 1, place: Matrix | None = None):
    """Two unit bones along +Z, a capped cylinder (r 0.25, 24 rings of 24) with linear weights over a 0.5
    wide zone around the joint at z = 1. ``place`` moves the mesh object while keeping its world geometry."""
    arm = make_chain_armature("Rig", [1.0, 1.0], segments=segments)
    cyl = make_cylinder("Limb", radius=0.25, height=2.0, rings=24, segments=24)
    # Half a facet off the bend plane: no vertex lies exactly on the convex/concave boundary, where float
    # rounding alone would decide its side.
    cyl.data.transform(Matrix.Rotation(np.pi / 24, 4, "Z"))
    if place is not None:
        cyl.data.transform(place.inverted())
        cyl.matrix_world = place
    skin_to_chain(cyl, arm, blend=0.5)
    pose_bone(arm, "Bone1", (bend_deg, twist_deg, 0))  # bone Y = world Z: Y rotation twists
    bpy.context.view_layer.objects.active = cyl
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    return arm, cyl


def run(analyze: ModuleType, obj: bpy.types.Object):
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
    return analyze.results[obj.session_uid]


def test_twist_180_closed_forms(analyze):
    """Twist by 180°: the LBS matrix of a ring with child weight w is diag(1 - 2w, 1 - 2w, 1), so the
    ring at w = 0.5 collapses to a point and the blend zone keeps ∫(1 - 2w)² = 1/3 of its volume: the
    2 long cylinder loses (2/3 · 0.5) / 2 = 1/6. DQS turns each ring rigidly; f = 0.5 halves the joint
    ring's radius; the best global factor and Auto are DQS (Auto 0.1, profile "JOINT", nearly)."""
    _arm, cyl = limb(twist_deg=180.0)
    result = run(analyze, cyl)
    rows = result.comparison.rows
    assert list(rows) == ["LBS", "DQS", "current", "best", "AUTO", "AUTO_KEEP_VOLUME", "AUTO_JOINT"]
    assert result.labels == {1: "Bone1"} and result.heads == {1}
    (lbs_f, lbs), (dqs_f, dqs), (cur_f, cur) = rows["LBS"], rows["DQS"], rows["current"]
    assert (lbs_f, dqs_f, cur_f, result.current_label) == (0.0, 1.0, 0.5, "0.50")
    np.testing.assert_allclose(lbs.joint(1).collapse, 1.0, atol=F32_ATOL)
    np.testing.assert_allclose(dqs.joint(1).collapse, 0.0, atol=F32_ATOL)
    np.testing.assert_allclose(cur.joint(1).collapse, 0.5, atol=F32_ATOL)
    np.testing.assert_allclose(lbs.volume_change, -1.0 / 6.0, atol=F32_ATOL)
    assert -0.05 < dqs.volume_change < 0.0  # twisted facets cut slightly inside; no closed form
    np.testing.assert_allclose(dqs.joint(1).bulge, 0.0, atol=F32_ATOL)  # rigid rings keep their distance
    assert rows["best"][0] == 1.0
    assert rows["AUTO"][0] is None and rows["AUTO"][1].joint(1).collapse < 0.01
    for name in ("AUTO", "AUTO_KEEP_VOLUME"):  # a pure twist: the round profiles give f = 1 exactly
        np.testing.assert_allclose(rows[name][1].joint(1).collapse, 0.0, atol=F32_ATOL)
    assert 0.0 < rows["AUTO_JOINT"][1].joint(1).collapse < 0.01


@pytest.mark.parametrize("mode", ["GLOBAL", "VERTEX_GROUP", "AUTO"])
def test_operator_equals_core_metrics_on_arrays_read_in_the_test(addon, analyze, mode):
    """Bend 70° + twist 120°, the mesh object moved and turned (armature space ≠ mesh space): every
    number the operator stores equals ``core.metrics`` computed from Blender's raw data here."""
    place = Matrix.Translation((0.3, -0.2, 0.1)) @ Matrix.Rotation(0.4, 4, "X")
    arm, cyl = limb(twist_deg=120.0, bend_deg=70.0, place=place)
    settings = cyl.hybrid_skin
    settings.deform_factor = 0.3
    z = np.array([(place @ v.co).z for v in cyl.data.vertices])
    if mode == "VERTEX_GROUP":
        group = cyl.vertex_groups.new(name="factor")
        for value in np.unique(np.round(z / 2.0, 4)):
            group.add(np.flatnonzero(np.round(z / 2.0, 4) == value).tolist(), float(value), "REPLACE")
        settings.factor_vertex_group = "factor"
    settings.factor_mode = mode
    result = run(analyze, cyl)

    # Everything below reads Blender directly and calls only the numpy core: armature space is world space.
    autofactor, folds, metrics, skinning = (
        importlib.import_module(f"{addon.__name__}.core.{name}")
        for name in ("autofactor", "folds", "metrics", "skinning")
    )
    n = len(cyl.data.vertices)
    co = np.array([v.co[:] for v in cyl.data.vertices])
    rest = co @ np.array(place)[:3, :3].T + np.array(place)[:3, 3]
    cyl.data.calc_loop_triangles()
    triangles = np.array([t.vertices[:] for t in cyl.data.loop_triangles])
    bones = [arm.data.bones["Bone0"], arm.data.bones["Bone1"]]
    bone_rest = np.array([np.array(b.matrix_local) for b in bones])
    deform = np.array([np.array(arm.pose.bones[b.name].matrix) for b in bones]) @ np.linalg.inv(bone_rest)
    dense = np.zeros((n, 2))
    for v in cyl.data.vertices:
        for g in v.groups:
            name = cyl.vertex_groups[g.group].name
            if name in ("Bone0", "Bone1"):
                dense[v.index, int(name[-1])] = g.weight
    weights = dense / dense.sum(1, keepdims=True)
    indices = np.tile(np.arange(2), (n, 1))
    binding = skinning.SkinBinding(
        indices.astype(np.int32), weights.astype(np.float32), np.ones(n, np.float32)
    )
    palette = skinning.bone_palette(deform, bone_rest)
    parents = np.array([-1, 0])

    def skin_here(f):
        return skinning.skin(rest, binding, palette, f)[0].astype(np.float64)

    setup = metrics.prepare_measures(
        rest, triangles, bone_rest, parents, [b.length for b in bones], indices, weights
    )
    lengths = np.array([b.length for b in bones])
    auto = {
        row: autofactor.auto_factors(
            deform, bone_rest, parents, indices, weights,
            profile=profile, positions=rest, bone_lengths=lengths,
        )
        for row, profile in (("AUTO", "ROUND"), ("AUTO_KEEP_VOLUME", "KEEP_VOLUME"), ("AUTO_JOINT", "JOINT"))
    }
    assert np.abs(auto["AUTO"] - auto["AUTO_JOINT"]).max() > 0.05  # the rows really differ
    own = auto["AUTO"]
    current = {"GLOBAL": 0.3, "VERTEX_GROUP": (0.3 * np.round(z / 2.0, 4)).astype(np.float32), "AUTO": own}
    expected = metrics.compare_factors(setup, deform, skin_here, auto=auto).rows
    expected["current"] = (
        0.3 if mode == "GLOBAL" else None,
        metrics.measure_pose(setup, skin_here(current[mode]), deform),
    )

    rows = result.comparison.rows
    assert list(rows) == ["LBS", "DQS", "current", "best", "AUTO", "AUTO_KEEP_VOLUME", "AUTO_JOINT"]
    assert set(rows) == set(expected) and setup.closed
    assert result.current_label == {"GLOBAL": "0.30", "VERTEX_GROUP": "group", "AUTO": "auto"}[mode]
    for name, (factor, measure) in expected.items():
        got_factor, got = rows[name]
        assert got_factor == (None if factor is None else pytest.approx(factor, abs=1e-7)), name
        np.testing.assert_allclose(got.volume_change, measure.volume_change, atol=F32_ATOL, err_msg=name)
        assert [j.joint for j in got.joints] == [j.joint for j in measure.joints] == [1]
        for field in ("volume_change", "bulge", "shrink", "contour_change", "collapse"):
            np.testing.assert_allclose(
                getattr(got.joint(1), field), getattr(measure.joint(1), field), atol=F32_ATOL, err_msg=field
            )
    # Folds beyond both LBS and DQS, per row, over the edges whose two vertices blend.
    fold_setup = folds.prepare_folds(rest, triangles, (weights > 1e-3).sum(axis=1) >= 2)
    assert len(fold_setup.edges) > 300  # the edges of the blend zone alone
    fields = {"LBS": 0.0, "DQS": 1.0, "current": current[mode], "best": rows["best"][0], **auto}
    assert list(result.fold_rows) == list(rows)
    for name, field in fields.items():
        beyond = folds.folds_beyond(fold_setup, skin_here(0.0), skin_here(1.0), field)
        got = result.fold_rows[name]
        assert (got.over_limit, got.over_30, got.measured) == (
            int((beyond > 10.0).sum()), int((beyond > 30.0).sum()), len(beyond)
        ), name
        np.testing.assert_allclose(got.worst, max(beyond.max(), 0.0), atol=1e-3, err_msg=name)
    assert result.fold_rows["LBS"].over_limit == result.fold_rows["DQS"].over_limit == 0
    # The pose is a real trade-off: LBS collapses and DQS bulges more than the best factor.
    best = rows["best"][1].joint(1)
    assert rows["LBS"][1].joint(1).collapse > best.collapse and rows["DQS"][1].joint(1).bulge > best.bulge


def test_bbone_segments_are_joints_and_the_panel_draws_them(addon, analyze):
    """B-bone segment joints are measured as joints of their own (named "Bone1 seg k"), segment lengths
    are the joint spacing (the tail joint's points back), the panel groups joints under their bone; an open
    tube reports no volume; a stale frame is flagged."""
    arm, cyl = limb(bend_deg=90.0, segments=4)
    bm = bmesh.new()
    bm.from_mesh(cyl.data)
    bmesh.ops.delete(bm, geom=[f for f in bm.faces if len(f.verts) > 4], context="FACES_ONLY")
    bm.to_mesh(cyl.data)
    bm.free()
    bpy.ops.hybrid_skin.rebind()
    result = run(analyze, cyl)

    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    bound = bind.cached_bind(cyl, bpy.context.evaluated_depsgraph_get())
    lengths = analyze.palette_lengths(bound.bones, bound.virtual_rest)
    np.testing.assert_allclose(lengths, [0.25, 0.25, 0.25, 0.25, -0.25] * 2, rtol=1e-5)
    # Auto handles curve both B-bones into the bend; at the joint their tangents agree, so the head joint of
    # Bone1 (palette entry 5) does not move relative to Bone0's tail and is not measured.
    assert result.labels == {a: f"Bone0 seg {a}" for a in range(1, 5)} | {
        5 + a: f"Bone1 seg {a}" for a in range(1, 5)
    }
    assert result.heads == frozenset()
    assert all(m.volume_change is None for _f, m in result.comparison.rows.values())
    by_bone = result.by_bone()
    assert (
        set(by_bone) <= {"Bone0", "Bone1"} and by_bone["Bone1"]["DQS"].bulge > by_bone["Bone1"]["LBS"].bulge
    )

    layout = RecordingLayout()
    analyze.draw_results(layout, result, frame=result.frame + 1)
    labels = layout.labels()
    assert labels[0].startswith(f"Results of frame {result.frame}")
    assert "open mesh" in labels and "Bone1" in labels and "Auto: Round" in labels
    assert "Shrink" in labels and "Auto: Keep Volume" in labels and "Auto: Per Joint" in labels


def test_rest_pose_has_no_moved_joint_and_poll_needs_hybrid_skin(analyze):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Limb")
    skin_to_chain(cyl, arm)
    bpy.context.view_layer.objects.active = cyl
    assert not bpy.ops.hybrid_skin.analyze.poll()  # Hybrid Skin not added yet
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    result = run(analyze, cyl)
    assert result.labels == {} and all(m.joints == () for _f, m in result.comparison.rows.values())
    np.testing.assert_allclose(result.comparison.rows["LBS"][1].volume_change, 0.0, atol=F32_ATOL)
    layout = RecordingLayout()
    analyze.draw_results(layout, result, frame=result.frame)
    assert "No bent or twisted joint at this frame" in layout.labels()
    assert analyze.VIEW3D_PT_hybrid_skin_analyze.bl_parent_id == "VIEW3D_PT_hybrid_skin"


@pytest.mark.parametrize("scale", [(0, 0, 0), (0, 1, 1)], ids=["to 0", "one axis to 0"])
def test_a_bone_scaled_to_zero_is_analysed_not_a_crash(analyze, scale):
    """A collapsed bone (game rigs hide parts that way; not refused) has no frame to measure its child in:
    Analyze compares the child's deform with its parent's directly. Three bones, the middle one bent and
    scaled to 0 (its child inherits the collapse): the joint at its head moved, the joint after it did not
    (both deforms map everything to the same point), and every measure is a finite number."""
    arm = make_chain_armature("Rig", [1.0, 1.0, 1.0])
    cyl = make_cylinder("Limb", height=3.0, rings=36)
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone1", (40, 0, 0), scale=scale)
    bpy.context.view_layer.objects.active = cyl
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    result = run(analyze, cyl)
    assert "Bone1" in result.labels.values()
    if scale == (0, 0, 0):
        assert sorted(result.labels.values()) == ["Bone1"]
    for _f, m in result.comparison.rows.values():
        assert [j.joint for j in m.joints] == list(result.labels)
        assert all(np.isfinite([j.bulge, j.collapse]).all() for j in m.joints)
    layout = RecordingLayout()
    analyze.draw_results(layout, result, frame=result.frame)
    assert any("Bone1" in label for label in layout.labels())
