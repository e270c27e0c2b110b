"""The analysis of one pose (core.analysis), without Blender: closed forms on the canonical limb.

Twist by 180° at the joint of a two-bone limb (blend zone around the joint): LBS collapses the joint
ring to the axis (collapse 1), DQS keeps it (0), the hybrid at f leaves f of the radius (collapse 1 - f);
see tests/core/test_metrics.py for the derivations. Auto's profiles: a pure twist gives f = 1 exactly with
the round ones, f = 0.55 + 0.45 pi^2 / (pi^2 + eps^2) with "JOINT".
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.analysis import analyze_pose, joint_labels, moved_joints, palette_lengths
from hybrid_skin.core.autofactor import ANGLE_EPSILON, auto_factors
from hybrid_skin.core.binding import DeformBones
from hybrid_skin.core.primitives import BoneChain, canonical_pose
from hybrid_skin.core.skinning import bone_palette

F32_ATOL = 2e-5  # skinning in float32
#: The Analyze operator's rows per Auto profile.
AUTO_ROWS = {"AUTO": "ROUND", "AUTO_KEEP_VOLUME": "KEEP_VOLUME", "AUTO_JOINT": "JOINT"}


def deform_bones(chain: BoneChain, segments: tuple[int, ...] | None = None) -> DeformBones:
    count = chain.bone_count
    zeros = np.zeros(count)
    return DeformBones(
        names=tuple(f"Bone{i}" for i in range(count)),
        rest=chain.rest,
        segments=np.asarray(segments or (1,) * count, dtype=np.int32),
        length=chain.lengths,
        head=chain.heads,
        tail=chain.tails,
        head_radius=zeros,
        tail_radius=zeros,
        envelope_distance=zeros,
        envelope_weight=zeros,
        envelope_multiply=np.zeros(count, dtype=bool),
        curved=np.zeros(count, dtype=bool),
        parent=np.asarray(chain.parents, dtype=np.int64),
    )


def analysis(pose_name: str, current: float = 0.5):
    cp = canonical_pose(pose_name)
    limb, bones = cp.limb, deform_bones(cp.limb.chain)
    binding = limb.binding()
    chain = limb.chain
    auto = {
        row: auto_factors(
            cp.deform, chain.rest, bones.virtual_parents(), binding.bone_indices, binding.weights,
            profile=profile, positions=limb.mesh.positions, bone_lengths=chain.lengths,
        )
        for row, profile in AUTO_ROWS.items()
    }
    return analyze_pose(
        limb.mesh.positions,
        limb.mesh.triangles,
        bones,
        limb.chain.rest,
        binding,
        bone_palette(cp.deform, limb.chain.rest),
        cp.deform,
        current=current,
        current_label=f"{current:.2f}",
        auto=auto,
        object_name="Limb",
        frame=7,
    )


def test_a_twist_of_180_degrees_measures_as_the_closed_forms():
    result = analysis("twist_180", current=0.3)
    assert (result.object_name, result.frame, result.current_label) == ("Limb", 7, "0.30")
    assert result.labels == {1: "Bone1"} and result.bones == {1: "Bone1"} and result.heads == frozenset({1})
    rows = result.comparison.rows
    assert list(rows) == ["LBS", "DQS", "current", "best", "AUTO", "AUTO_KEEP_VOLUME", "AUTO_JOINT"]
    collapse = {name: measure.joint(1).collapse for name, (_f, measure) in rows.items()}
    np.testing.assert_allclose(
        [collapse["LBS"], collapse["DQS"], collapse["current"]], [1.0, 0.0, 0.7], atol=F32_ATOL
    )
    joint_factor = 0.55 + 0.45 * np.pi**2 / (np.pi**2 + ANGLE_EPSILON**2)
    np.testing.assert_allclose(
        [collapse["AUTO"], collapse["AUTO_KEEP_VOLUME"], collapse["AUTO_JOINT"]],
        [0.0, 0.0, 1.0 - joint_factor],
        atol=F32_ATOL,
    )
    assert rows["current"][0] == pytest.approx(0.3) and rows["AUTO"][0] is None
    assert rows["best"][0] == pytest.approx(1.0)  # a pure twist: DQS is best
    by_bone = result.by_bone()
    assert by_bone["Bone1"]["LBS"].collapse == pytest.approx(1.0, abs=F32_ATOL)
    # A pure twist has no concave side: LBS's collapsed ring is shrink on every side.
    assert by_bone["Bone1"]["LBS"].shrink == pytest.approx(1.0, abs=F32_ATOL)
    assert by_bone["Bone1"]["DQS"].shrink == pytest.approx(0.0, abs=F32_ATOL)
    assert "joint 1: Bone1" in result.table()


def test_a_per_vertex_current_factor_has_no_single_number():
    cp = canonical_pose("twist_180")
    factors = np.full(len(cp.limb.mesh.positions), 0.3, dtype=np.float32)
    result = analysis("twist_180", current=0.3)
    per_vertex = analyze_pose(
        cp.limb.mesh.positions,
        cp.limb.mesh.triangles,
        deform_bones(cp.limb.chain),
        cp.limb.chain.rest,
        cp.limb.binding(),
        bone_palette(cp.deform, cp.limb.chain.rest),
        cp.deform,
        current=factors,
        current_label="group",
        auto=factors,
    )
    factor, measure = per_vertex.comparison.rows["current"]
    assert factor is None
    assert measure.joint(1).collapse == pytest.approx(result.comparison.rows["current"][1].joint(1).collapse)


def test_an_unmoved_pose_has_no_joint_to_measure():
    cp = canonical_pose("twist_180")
    chain = cp.limb.chain
    rest_pose = np.tile(np.eye(4), (chain.bone_count, 1, 1))
    assert moved_joints(rest_pose, chain.parents, chain.lengths) == []
    assert moved_joints(cp.deform, chain.parents, chain.lengths) == [1]
    shifted = rest_pose.copy()
    shifted[1, :3, 3] = (0.0, 0.0, 2e-4 * chain.lengths[1])  # beyond MOVED_TOLERANCE per unit of length
    assert moved_joints(shifted, chain.parents, chain.lengths) == [1]
    shifted[1, :3, 3] = (0.0, 0.0, 5e-5 * chain.lengths[1])
    assert moved_joints(shifted, chain.parents, chain.lengths) == []


def test_b_bone_segments_are_joints_with_their_own_labels_and_lengths():
    cp = canonical_pose("twist_180")
    bones = deform_bones(cp.limb.chain, segments=(1, 4))
    labels, owners = joint_labels(bones)
    assert labels == ["Bone0", "Bone1", "Bone1 seg 1", "Bone1 seg 2", "Bone1 seg 3", "Bone1 seg 4"]
    assert owners == ["Bone0"] + ["Bone1"] * 5
    # Segment joints of Bone1 every quarter of its length along its rest Y axis; the tail joint spans back.
    length = cp.limb.chain.lengths[1]
    virtual_rest = np.tile(np.eye(4), (6, 1, 1))
    virtual_rest[0] = cp.limb.chain.rest[0]
    for k in range(5):
        virtual_rest[1 + k] = cp.limb.chain.rest[1]
        virtual_rest[1 + k, :3, 3] += k * length / 4 * cp.limb.chain.rest[1, :3, 1]
    q = length / 4
    np.testing.assert_allclose(
        palette_lengths(bones, virtual_rest), [cp.limb.chain.lengths[0], q, q, q, q, -q]
    )
