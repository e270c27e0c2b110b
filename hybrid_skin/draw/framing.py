"""Framing for offscreen pictures: a perspective camera that fits a set of points, as Blender's own
front-right three-quarter view does (Render Comparison, the GPU tests and benchmarks use it)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FIELD_OF_VIEW", "VIEW_DIRECTION", "frame_bounds"]

#: Default framing: from the front (-Y), a little right and above, like Blender's front-right 3/4 view.
VIEW_DIRECTION = (0.45, -1.0, 0.35)
FIELD_OF_VIEW = math.radians(30.0)


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    forward = (target - eye) / np.linalg.norm(target - eye)
    up = np.array([0.0, 0.0, 1.0]) if abs(forward[2]) < 0.999 else np.array([0.0, 1.0, 0.0])
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    true_up = np.cross(right, forward)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = right, true_up, -forward
    view[:3, 3] = -view[:3, :3] @ eye
    return view


def _perspective(fov_y: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / math.tan(fov_y / 2.0)
    return np.array([
        [f / aspect, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, (far + near) / (near - far), 2.0 * far * near / (near - far)],
        [0.0, 0.0, -1.0, 0.0],
    ])


def frame_bounds(points_world: np.ndarray, aspect: float) -> np.ndarray:
    """World → clip matrix that fits the bounding sphere of ``points_world`` ``(M, 3)`` into the view."""
    lo, hi = points_world.min(axis=0), points_world.max(axis=0)
    centre = (lo + hi) / 2.0
    radius = max(float(np.linalg.norm(points_world - centre, axis=1).max()), 1e-6)
    fov_x = 2.0 * math.atan(math.tan(FIELD_OF_VIEW / 2.0) * aspect)
    distance = 1.08 * radius / math.sin(min(FIELD_OF_VIEW, fov_x) / 2.0)
    direction = np.asarray(VIEW_DIRECTION) / np.linalg.norm(VIEW_DIRECTION)
    view = _look_at(centre + distance * direction, centre)
    near = max(distance - 2.0 * radius, distance * 1e-3)
    return _perspective(FIELD_OF_VIEW, aspect, near, distance + 2.0 * radius) @ view
