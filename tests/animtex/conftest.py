"""Fixtures of the animation texture tests: the installed add-on's modules, and RobotExpressive."""

from __future__ import annotations

import importlib

import pytest

from tests.support.assets import give_hybrid_skin, import_gltf


@pytest.fixture(scope="module")
def animtex(addon):
    """The installed add-on's animation texture bake module."""
    return importlib.import_module(addon.__name__ + ".animtex.bake")


@pytest.fixture(scope="module")
def summaries(addon):
    """The installed add-on's bake summaries (what the panels show about the last bake)."""
    return importlib.import_module(addon.__name__ + ".animtex.summary")


@pytest.fixture(scope="module")
def core(addon):
    return importlib.import_module(addon.__name__ + ".core.animtex")


@pytest.fixture
def robot(addon, assets):
    """RobotExpressive imported as a user would, Hybrid Skin added to its skinned meshes (the default
    factor, 0.5: the bakes test the hybrid), the armature active; its skinned meshes by name."""
    arm, meshes = import_gltf(assets / "RobotExpressive.glb")
    meshes = sorted(meshes, key=lambda o: o.name)
    give_hybrid_skin(meshes, arm)
    return arm, meshes
