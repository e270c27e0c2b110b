"""The quality tables' canonical-limb rows: every Auto profile against LBS, DQS and the best single factor.

The README's canonical limbs (``hybrid_skin.core.primitives.canonical_pose``: radius 0.5, bones of length
2, a linear weight ramp one diameter wide around each joint) at bend 90°, bend 120°, twist 180° and
bend 120° then twist 170° at the next joint; measured with ``hybrid_skin.core.metrics``. None of these
limbs is in ``tools/fit_auto.py``'s sweep. Numpy only (no Blender):

    .venv/bin/python tests/media/quality_limbs.py

Prints one Markdown table (volume of the closed mesh; bulge and shrink at the bent joint, collapse at the
twisted joint, and the bent joint's own flattening, the same collapse measure there), then per pose the
largest factor step across an edge of the blend zones and the single factors, if any, at least as good as
each profile on every measure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hybrid_skin.core import autofactor, metrics  # noqa: E402
from hybrid_skin.core.primitives import CanonicalPose, canonical_pose  # noqa: E402
from hybrid_skin.core.skinning import bone_palette, skin  # noqa: E402

POSES = {
    "bend_90": "bend 90°",
    "bend_120": "bend 120°",
    "twist_180": "twist 180°",
    "bend_120_twist_170": "bend 120° + twist 170°",
}
#: Row name → label, in table order; the profiles' rows are named after them.
METHODS = {
    "LBS": "LBS",
    "DQS": "DQS",
    "best": "best single f",
    "JOINT": "Auto 0.1 (per joint)",
    "ROUND": "**Auto (round)**",
    "KEEP_VOLUME": "Auto, keep volume",
}


def profile_factors(cp: CanonicalPose) -> dict[str, np.ndarray]:
    """Each Auto profile's factors ``(N,)`` on this pose, in :data:`METHODS` order."""
    limb, chain = cp.limb, cp.limb.chain
    return {
        profile: autofactor.auto_factors(
            cp.deform, chain.rest, chain.parents, limb.bone_indices, limb.weights, profile=profile,
            positions=limb.mesh.positions, bone_lengths=chain.lengths,
        )
        for profile in ("JOINT", "ROUND", "KEEP_VOLUME")
    }


def measure(name: str) -> dict:
    """One pose: the comparison rows, the profiles' factors and what the tables print about them."""
    cp = canonical_pose(name)
    limb, chain = cp.limb, cp.limb.chain
    setup = metrics.prepare_measures(
        limb.mesh.positions, limb.mesh.triangles, chain.rest, chain.parents, chain.lengths,
        limb.bone_indices, limb.weights,
    )
    palette, binding = bone_palette(cp.deform, chain.rest), limb.binding()

    def skin_with(factor):
        return skin(limb.mesh.positions, binding, palette, factor)[0].astype(np.float64)

    fields = profile_factors(cp)
    rows = metrics.compare_factors(setup, cp.deform, skin_with, auto=fields).rows
    blended = metrics.blended_vertices(limb.weights)
    steps = {p: metrics.largest_factor_step(f, limb.mesh.triangles, blended) for p, f in fields.items()}
    dominated = {p: metrics.dominating_factors(setup, cp.deform, skin_with, f) for p, f in fields.items()}
    return {"pose": cp, "rows": rows, "fields": fields, "steps": steps, "dominated": dominated}


def cells(result: dict, method: str) -> tuple[str, ...]:
    """(f, volume, bulge, shrink, collapse, flattening) as the table prints them."""
    cp, (factor, m) = result["pose"], result["rows"][method]
    bent = [m.joint(j) for j in cp.bent_joints]
    twisted = [m.joint(j) for j in cp.twisted_joints]

    def pct(values: list[float], sign: str = "") -> str:
        return "—" if not values else f"{100.0 * max(values):{sign}.2f}%".replace("-", "−")

    f = "per vertex" if factor is None else f"{factor:.2f}"
    return (
        f,
        pct([m.volume_change], "+"),
        pct([j.bulge for j in bent]),
        pct([j.shrink for j in bent]),
        pct([j.collapse for j in twisted]),
        pct([j.collapse for j in bent]),
    )


def markdown(results: dict[str, dict]) -> str:
    lines = [
        "| pose | method | f | volume | bulge | shrink | collapse (twisted) | flattening (bent) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        for i, (method, label) in enumerate(METHODS.items()):
            pose = POSES[name] if i == 0 else ""
            lines.append("| " + " | ".join([pose, label, *cells(result, method)]) + " |")
    return "\n".join(lines)


def main() -> None:
    results = {name: measure(name) for name in POSES}
    print(markdown(results))
    print()
    for name, result in results.items():
        steps = ", ".join(f"{p} {s:.3f}" for p, s in result["steps"].items())
        dominated = ", ".join(f"{p} {d or 'none'}" for p, d in result["dominated"].items())
        print(f"{POSES[name]}: largest factor step across an edge: {steps}; "
              f"single factors at least as good on every measure: {dominated}")


if __name__ == "__main__":
    main()
