"""The Rigify arm the quality tables and the Auto tests measure: a Rigify human's left arm as a closed tube
with automatic weights (its DEF bones are B-bones), bent at the elbow and twisted through the FK controls.

``tests/media/quality_rigify.py`` prints the docs' Rigify table from it; ``tests/api/test_rigify.py`` pins the
Auto factor's smoothness on it. Rigify must be enabled first (``addon_enable(module="rigify")``).
"""

from __future__ import annotations

import addon_utils
import bpy
import numpy as np
from mathutils import Matrix

ARM = ("DEF-upper_arm.L", "DEF-upper_arm.L.001", "DEF-forearm.L", "DEF-forearm.L.001")
#: Joints whose child belongs to these bones make up the elbow (the B-bones on both sides of it bend).
ELBOW = ("DEF-upper_arm.L.001", "DEF-forearm.L")
#: Joints whose child belongs to these bones make up the forearm (the elbow joint included).
FOREARM = ("DEF-forearm.L", "DEF-forearm.L.001")
#: The elbow's joint between two bones (upper arm → forearm): its shrink is the table's. The B-bone segment
#: joints around it are one segment long, so their "convex side" is mostly limb far from both segments.
ELBOW_HEAD = "DEF-forearm.L"
RADIUS = 0.045
SEGMENTS = 32
RING_SPACING = 0.25 * RADIUS


def rigify_enabled():
    """A module fixture's body: Rigify enabled for the tests, disabled after where it was not enabled, and
    the load handler Rigify 5.2 leaves behind when disabled taken off (a later file load would run it)."""
    was_enabled = addon_utils.check("rigify")[1]
    assert bpy.ops.preferences.addon_enable(module="rigify") == {"FINISHED"}
    yield
    if not was_enabled:
        bpy.ops.preferences.addon_disable(module="rigify")
        for handlers in (bpy.app.handlers.load_post, bpy.app.handlers.save_pre):
            for handler in [h for h in handlers if getattr(h, "__module__", "").startswith("rigify")]:
                handlers.remove(handler)


def rigify_human() -> bpy.types.Object:
    """Rigify's human metarig, generated; the metarig hidden. Returns the generated rig."""
    bpy.ops.object.armature_human_metarig_add()
    metarig = bpy.context.object
    bpy.ops.pose.rigify_generate()
    metarig.hide_set(True)
    return next(o for o in bpy.data.objects if o.type == "ARMATURE" and o is not metarig)


def _ring_frames(points: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Centres and tangents of rings every ``step`` along a polyline; tangents turn smoothly over
    3 radii around each corner so neighbouring rings never cross."""
    seg = np.diff(points, axis=0)
    seg_len = np.linalg.norm(seg, axis=1)
    direction = seg / seg_len[:, None]
    ends = np.concatenate([[0.0], np.cumsum(seg_len)])
    s = np.linspace(0.0, ends[-1], int(round(ends[-1] / step)) + 1)
    k = np.clip(np.searchsorted(ends, s, side="right") - 1, 0, len(seg) - 1)
    centres = points[k] + (s - ends[k])[:, None] * direction[k]
    tangent = direction[k].copy()
    for corner in range(1, len(points) - 1):
        t = np.clip((s - ends[corner]) / (3.0 * RADIUS) + 0.5, 0.0, 1.0)
        near = np.abs(s - ends[corner]) < 1.5 * RADIUS
        smooth = t * t * (3.0 - 2.0 * t)
        mix = (1.0 - smooth)[:, None] * direction[corner - 1] + smooth[:, None] * direction[corner]
        tangent[near] = mix[near]
    return centres, tangent / np.linalg.norm(tangent, axis=1, keepdims=True)


def arm_tube(rig: bpy.types.Object) -> bpy.types.Object:
    """A closed tube of radius :data:`RADIUS` following the arm's DEF bones from shoulder to wrist."""
    bones = rig.data.bones
    points = np.array([bones[ARM[0]].head_local] + [bones[name].tail_local for name in ARM[1::2]])
    points = (np.array(rig.matrix_world) @ np.c_[points, np.ones(len(points))].T).T[:, :3]
    centres, tangent = _ring_frames(points, RING_SPACING)
    side = np.cross(points[1] - points[0], points[2] - points[1])
    u = np.cross(tangent, side / np.linalg.norm(side))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(tangent, u)
    phi = 2.0 * np.pi * np.arange(SEGMENTS) / SEGMENTS
    rings = centres[:, None] + RADIUS * (
        np.cos(phi)[:, None] * u[:, None] + np.sin(phi)[:, None] * v[:, None]
    )
    verts = np.concatenate([rings.reshape(-1, 3), centres[[0, -1]]])
    n_rings = len(centres)
    ring = np.arange(n_rings - 1)[:, None] * SEGMENTS
    a, b = np.arange(SEGMENTS), (np.arange(SEGMENTS) + 1) % SEGMENTS
    quads = np.stack([ring + a, ring + b, ring + SEGMENTS + b, ring + SEGMENTS + a], -1).reshape(-1, 4)
    start, end = len(verts) - 2, len(verts) - 1
    last = (n_rings - 1) * SEGMENTS
    caps = [(start, int(j), int(i)) for i, j in zip(a, b, strict=True)]
    caps += [(end, last + int(i), last + int(j)) for i, j in zip(a, b, strict=True)]
    return weighted_mesh(rig, "Arm", verts.tolist(), quads.tolist() + caps)


def weighted_mesh(rig: bpy.types.Object, name: str, verts: list, faces: list) -> bpy.types.Object:
    """A mesh object of ``verts`` and ``faces``, parented to ``rig`` with automatic weights."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    return obj


def pose_arm(
    rig: bpy.types.Object, bend_deg: float, twist_deg: float, twist_bone: str = "forearm_fk.L"
) -> None:
    """FK: the elbow bends about ``forearm_fk.L``'s X (its hinge; positive flexes the arm forward), and
    ``twist_bone`` turns about its own Y axis: ``forearm_fk.L`` twists the forearm against the upper arm,
    ``hand_fk.L`` turns the hand against the forearm (pronation)."""
    pose = rig.pose.bones
    pose["upper_arm_parent.L"]["IK_FK"] = 1.0
    for name in {"forearm_fk.L", twist_bone}:
        pose[name].rotation_mode = "QUATERNION"
    bend = Matrix.Rotation(np.radians(bend_deg), 4, "X")
    twist = Matrix.Rotation(np.radians(twist_deg), 4, "Y")
    if twist_bone == "forearm_fk.L":
        pose[twist_bone].rotation_quaternion = (bend @ twist).to_quaternion()
    else:
        pose["forearm_fk.L"].rotation_quaternion = bend.to_quaternion()
        pose[twist_bone].rotation_quaternion = twist.to_quaternion()
    bpy.context.view_layer.update()


_LIMBS = (("arm", ("upper_arm", "forearm"), RADIUS), ("leg", ("thigh", "shin"), 0.07))
#: Chains of DEF bones (B-bones) the body's tubes follow, with their radii.
BODY_CHAINS = {
    "spine": (tuple(f"DEF-spine{suffix}" for suffix in ("", ".001", ".002", ".003", ".004", ".005")), 0.1),
    **{f"{limb} {s}": (tuple(f"DEF-{b}.{s}{n}" for b in bones for n in ("", ".001")), radius)
       for limb, bones, radius in _LIMBS for s in ("L", "R")},
}


def body_tubes(rig: bpy.types.Object, spacing: float = 2.0 * RING_SPACING, segments: int = 16):
    """One mesh of closed tubes along :data:`BODY_CHAINS` (spine with neck, arms, legs), parented to ``rig``
    with automatic weights: a body's worth of B-bones in one Armature modifier."""
    verts, faces = [], []
    for names, radius in BODY_CHAINS.values():
        bones = rig.data.bones
        points = np.array([bones[names[0]].head_local] + [bones[name].tail_local for name in names])
        points = (np.array(rig.matrix_world) @ np.c_[points, np.ones(len(points))].T).T[:, :3]
        centres, tangent = _ring_frames(points, spacing)
        helper = np.where(np.abs(tangent[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
        u = np.cross(tangent, helper)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        v = np.cross(tangent, u)
        phi = 2.0 * np.pi * np.arange(segments) / segments
        around = np.cos(phi)[:, None] * u[:, None] + np.sin(phi)[:, None] * v[:, None]
        base, rings = len(verts), len(centres)
        verts += (centres[:, None] + radius * around).reshape(-1, 3).tolist() + centres[[0, -1]].tolist()
        a, b = np.arange(segments), (np.arange(segments) + 1) % segments
        for r in range(rings - 1):
            low, high = base + r * segments, base + (r + 1) * segments
            faces += [[low + i, low + j, high + j, high + i] for i, j in zip(a, b)]
        start, end, last = base + rings * segments, base + rings * segments + 1, base + (rings - 1) * segments
        faces += [[start, base + int(j), base + int(i)] for i, j in zip(a, b)]
        faces += [[end, last + int(i), last + int(j)] for i, j in zip(a, b)]
    return weighted_mesh(rig, "Body", verts, faces)
