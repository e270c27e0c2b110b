"""A texture bake's size, known and checked before it samples a frame (issue 35).

:func:`texture_plan` gives what a bake of these meshes, clips and options will produce
(:class:`..core.animtex.plan.TexturePlan`: the layout and the bytes held at the peak); :func:`refusal` says
in one sentence why a plan cannot be baked, naming the frame range and what would fit. The bake
(:mod:`.bake`) refuses with it before anything changes, and the bake dialog shows the same plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.animtex import Clip, Kind, Precision
from ..core.animtex.layout import MAX_TEXTURE_SIZE
from ..core.animtex.plan import TexturePlan, fitting_step, plan_texture, samples_that_fit
from ..core.budget import MemoryBudget, bytes_text

__all__ = ["clips_text", "frame_text", "refusal", "search_peak", "texture_plan"]

#: Clips named one by one in a sentence; the rest are counted.
NAMED_CLIPS = 3


def frame_text(frame: float) -> str:
    """``250,000``, ``12.5``: a frame as the Timeline shows it, with thousands separated."""
    return f"{int(frame):,}" if float(frame).is_integer() else f"{frame:,.2f}".rstrip("0")


def clips_text(clips: Sequence[Clip]) -> str:
    """``'Walk' (frames 1–60) and 'Stray' (frames 1–250,000)``: the actions and their frame ranges."""
    named = [f"'{c.name}' (frames {frame_text(c.frame_start)}–{frame_text(c.frame_end)})" for c in clips]
    if len(named) > NAMED_CLIPS:
        named = [*named[:NAMED_CLIPS], f"{len(clips) - NAMED_CLIPS} more"]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def texture_plan(
    kind: Kind,
    precision: Precision,
    clips: Sequence[Clip],
    *,
    item_count: int,
    vertex_count: int,
    part_count: int,
    options,
    auto: bool = False,
) -> TexturePlan:
    """The plan of the texture ``options`` (a :class:`.options.BakeOptions`) ask for, of these clips."""
    return plan_texture(
        kind,
        precision,
        item_count=item_count,
        vertex_count=vertex_count,
        part_count=part_count,
        clips=clips,
        max_width=options.max_width,
        power_of_two=options.power_of_two,
        embed_metadata=options.embed_metadata,
        auto=auto,
        tangents=options.tangents,
    )


def _what_fits(plan: TexturePlan) -> str:
    """What would fit, for a plan whose rows do not."""
    limit, step = samples_that_fit(plan), fitting_step(plan)
    if step is None:
        return f"even one sample per clip does not fit {len(plan.clips)} clips: bake fewer actions at once"
    wider = plan.layout.rows_per_frame > 1 and plan.layout.max_width < MAX_TEXTURE_SIZE
    width = f", a larger Max Width (now {plan.layout.max_width:,})" if wider else ""
    return (
        f"at most {limit:,} samples fit: bake a shorter frame range, fewer actions{width}, or a frame step "
        f"of at least {step:g}"
    )


def refusal(plan: TexturePlan, budget: MemoryBudget) -> str | None:
    """Why ``plan`` cannot be baked, in one sentence naming its frame range and what would fit; ``None``
    when it can."""
    lay, step = plan.layout, plan.clips[0].frame_step
    asked = (
        f"{clips_text(plan.clips)} at frame step {step:g} are {plan.stored_samples:,} stored samples of "
        f"{lay.item_count:,} {'items' if plan.kind is Kind.VERTEX else 'bones'}"
    )
    if not plan.fits:
        return (
            f"{asked}: a {plan.kind.value} texture {lay.width:,} × {lay.height:,} texels, taller than the "
            f"{MAX_TEXTURE_SIZE:,} rows a GPU loads; {_what_fits(plan)}"
        )
    if not budget.allows(plan.peak_bytes):
        share = budget.bytes / max(plan.peak_bytes, 1)
        fewer = max(len(plan.clips), int(plan.stored_samples * share))
        return (
            f"{asked}: the bake would hold about {bytes_text(plan.peak_bytes)} in memory, over the budget of "
            f"{budget}; bake a shorter frame range or a larger frame step (about {fewer:,} samples fit), or "
            "raise Memory Budget"
        )
    return None


def search_peak(plans: Sequence[TexturePlan]) -> int:
    """What the tolerance search holds at one frame step: its stored frames and the texture of every
    precision it compares at once (``plans``: that step's, one per precision)."""
    first = plans[0]
    return first.kept_bytes + first.encode_bytes + first.working_bytes + sum(p.image_bytes for p in plans)
