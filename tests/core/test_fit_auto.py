"""The shipped Auto constants are what tools/fit_auto.py finds (numpy only, about 30 s; the tool is not
part of the package, its test lives with the core's because it needs no Blender).

Re-running the whole fit takes minutes, so this checks its two defining properties on the same sweep:
Round's constants sit at a minimum of the fit's residual (every constant nudged by 3 % either way does no
better), and Keep Volume's width is the largest on the 0.01 grid at which no bend thins by more than 0.5 %.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hybrid_skin.core.autofactor import ROUND_SHAPES

TOOL = Path(__file__).resolve().parents[2] / "tools" / "fit_auto.py"


@pytest.fixture(scope="module")
def fit():
    spec = importlib.util.spec_from_file_location("fit_auto", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module, module.build_sweep()


@pytest.mark.slow
def test_round_constants_are_a_minimum_of_the_fit(fit):
    tool, poses = fit
    shipped = ROUND_SHAPES["ROUND"]
    best = tool.residual(poses, shipped)
    assert best < 0.9  # better than the best single factor per pose, on average over the sweep
    for field in shipped._fields:
        for scale in (0.97, 1.03):
            nudged = shipped._replace(**{field: getattr(shipped, field) * scale})
            assert tool.residual(poses, nudged) >= best - 1e-3, (field, scale)


@pytest.mark.slow
def test_keep_volume_is_round_widened_to_the_volume_limit(fit):
    """KEEP_VOLUME is ROUND with the largest width (on the 0.01 grid) at which the sweep's bends lose on
    average at most 0.5 points of volume more than DQS, and none thins by more than 0.5 %."""
    tool, poses = fit
    keep, round_shape = ROUND_SHAPES["KEEP_VOLUME"], ROUND_SHAPES["ROUND"]
    assert keep._replace(width=round_shape.width) == round_shape
    bends = [p for p in poses if not p.twisted]
    dqs = np.array([p.measure_pose(1.0).volume_change for p in bends])

    def measured(width: float) -> tuple[float, float]:
        """(mean volume lost beyond DQS, worst shrink) over the sweep's bends."""
        shape = keep._replace(width=width)
        poses_measured = [p.measure_pose(p.factors(shape)) for p in bends]
        loss = float(np.mean(dqs - np.array([m.volume_change for m in poses_measured])))
        return loss, max(m.joints[0].shrink for m in poses_measured)

    loss, shrink = measured(keep.width)
    assert loss <= tool.KEEP_VOLUME_LOSS and shrink <= tool.KEEP_VOLUME_SHRINK
    loss, shrink = measured(keep.width + 0.01)
    assert loss > tool.KEEP_VOLUME_LOSS or shrink > tool.KEEP_VOLUME_SHRINK
    assert tool.fit_keep_volume(poses, round_shape) == keep
