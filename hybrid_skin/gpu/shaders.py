"""The one loader of the add-on's GLSL: files in ``shaders/`` → compiled, cached ``GPUShader`` objects.

Sources are plain GLSL files (no ``#version``; Blender's create-info declares every input, uniform,
sampler, varying and output). The library ``hybrid_skin_lib.glsl`` is prepended to each vertex stage so
the viewport and the readback shaders run literally the same skinning code.

Variants are compile-time defines: ``"hybrid"`` (the add-on's shader), ``"dqs"`` and ``"lbs"``
(single-method shaders for benchmarks and A/B pictures). Constants the GLSL shares with Python (the AUTO
factor's targets and angle, the bone texel it reads, the factor mode values) are passed as defines built
from the Python modules that own them (:func:`constant_defines`), so each has one source of truth.
Shaders compile on first use and stay cached until :func:`clear_cache` (called by the add-on's
``unregister``).

Compile failures raise :class:`ShaderCompileError` naming the shader and carrying Blender's compiler log,
which Blender itself only prints to the console.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gpu
import numpy as np

from ..core import autofactor
from ..core.gpu_layout import AUTO_TEXEL, INFLUENCE_TEXTURE_WIDTH

__all__ = [
    "FACTOR_MODE_AUTO",
    "FACTOR_MODE_UNIFORM",
    "KINDS",
    "VARIANTS",
    "ShaderCompileError",
    "SkinProgram",
    "clear_cache",
    "constant_defines",
    "get",
    "pack_params",
    "shader_dir",
]

LIB_FILE = "hybrid_skin_lib.glsl"
#: kind → (vertex file, fragment file)
KINDS: dict[str, tuple[str, str]] = {
    "viewport": ("hybrid_skin_vert.glsl", "hybrid_skin_frag.glsl"),
    "readback": ("hybrid_skin_readback_vert.glsl", "hybrid_skin_readback_frag.glsl"),
}
#: variant → defines
VARIANTS: dict[str, tuple[str, ...]] = {"hybrid": (), "dqs": ("HS_DQS_ONLY",), "lbs": ("HS_LBS_ONLY",)}

PARAMS_FILE = "hybrid_skin_params.glsl"
PARAMS_STRUCT = "HybridSkinParams"
#: ``params.flags.w``: the factor is ``factors.x`` (times the per-vertex map when ``factors.y`` = 1) ...
FACTOR_MODE_UNIFORM = 0
#: ... or computed per vertex from the pose (``hs_auto_factor``, the twin of ``autofactor.vertex_factors``).
FACTOR_MODE_AUTO = 1
#: ``params.flags.z`` of the readback shader: what each vertex writes.
READBACK_OUTPUTS = {"positions": 0, "normals": 1, "factors": 2}
#: float32 words in the std140 HybridSkinParams block: 3 mat4, 3 vec4, 2 ivec4.
PARAMS_WORDS = 3 * 16 + 3 * 4 + 2 * 4
#: Sampler names in slot order (FLOAT_2D, read with texelFetch): see core/gpu_layout.py for the layouts.
SAMPLERS = ("bone_texture", "influence_texture")
# Per-vertex inputs (slot order = vertex format order in resources.py).
VERTEX_INPUTS = (
    ("VEC3", "rest_position"),
    ("VEC3", "rest_normal"),
    ("IVEC2", "skin_span"),
    ("FLOAT", "skin_influence"),
    ("FLOAT", "factor_map"),
)
_VARYINGS = {
    "viewport": (("smooth", "VEC3", "world_position"), ("smooth", "VEC3", "world_normal")),
    "readback": (("flat", "VEC4", "readback_value"),),
}


class ShaderCompileError(RuntimeError):
    """A Hybrid Skin shader did not compile; the message has the shader name and the compiler log."""


def shader_dir() -> Path:
    """``<package>/shaders`` in the installed extension, else ``<repo>/shaders`` in the source tree."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "shaders", package.parent / "shaders"):
        if (candidate / LIB_FILE).is_file():
            return candidate
    raise ShaderCompileError(
        f"Hybrid Skin shaders not found in {package / 'shaders'} or {package.parent / 'shaders'}"
    )


def _read(name: str) -> str:
    return (shader_dir() / name).read_text(encoding="utf-8")


def _glsl_float(value: float) -> str:
    """A GLSL literal of exactly ``np.float32(value)`` (the value numpy uses; the shortest decimal of the
    float32 in double precision parses back to that float32)."""
    return repr(float(np.float32(value)))


def constant_defines() -> dict[str, str]:
    """Defines every Hybrid Skin shader gets, from the Python constants they mirror."""
    return {
        "HS_INFLUENCE_WIDTH": str(INFLUENCE_TEXTURE_WIDTH),
        "HS_AUTO_TEXEL": str(AUTO_TEXEL),
        "HS_FACTOR_MODE_AUTO": str(FACTOR_MODE_AUTO),
        # The same float32 constants as autofactor.vertex_factors computes with.
        "HS_AUTO_SWING": _glsl_float(autofactor.SWING_FACTOR),
        "HS_AUTO_RANGE": _glsl_float(autofactor.TWIST_FACTOR - autofactor.SWING_FACTOR),
        "HS_AUTO_EPSILON_SQ": _glsl_float(autofactor.ANGLE_EPSILON**2),
    }


def pack_params(
    target_to_armature: np.ndarray,
    armature_to_output: np.ndarray,
    *,
    view_projection: np.ndarray | None = None,
    color: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0),
    eye: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 0.0),
    deform_factor: float = 0.5,
    factor_map_mix: float = 0.0,
    factor_mode: int = FACTOR_MODE_UNIFORM,
    use_pivot: bool = False,
    encode_srgb: bool = False,
    readback: str = "positions",
    target_size: tuple[int, int] = (0, 0),
) -> np.ndarray:
    """The ``HybridSkinParams`` uniform block (``shaders/hybrid_skin_params.glsl``) as std140 float32 words.

    Matrices are row-major numpy ``(4, 4)`` (``p' = M @ p``); std140 stores columns, hence the transposes.
    Integer members are written through an int32 view of the same words. ``readback``: one of
    :data:`READBACK_OUTPUTS` (readback shader only).
    """
    words = np.zeros(PARAMS_WORDS, dtype=np.float32)
    words[0:16] = np.asarray(target_to_armature, dtype=np.float32).T.ravel()
    words[16:32] = np.asarray(armature_to_output, dtype=np.float32).T.ravel()
    vp = np.eye(4) if view_projection is None else view_projection
    words[32:48] = np.asarray(vp, dtype=np.float32).T.ravel()
    words[48:52] = color
    words[52:56] = eye
    words[56:60] = (deform_factor, factor_map_mix, 0.0, 0.0)
    flags = (int(use_pivot), int(encode_srgb), READBACK_OUTPUTS[readback], int(factor_mode))
    words[60:64].view(np.int32)[:] = flags
    words[64:68].view(np.int32)[:] = (target_size[0], target_size[1], 0, 0)
    return words


@dataclass
class SkinProgram:
    """A compiled shader and the way to feed it: one uniform block and two textures."""

    name: str
    shader: gpu.types.GPUShader

    def bind(
        self, params: gpu.types.GPUUniformBuf, bones: gpu.types.GPUTexture, influences: gpu.types.GPUTexture
    ) -> None:
        """Bind the shader and its resources; draw with ``batch.draw(program.shader)`` next."""
        self.shader.bind()
        self.shader.uniform_block("params", params)
        for name, texture in zip(SAMPLERS, (bones, influences)):
            self.shader.uniform_sampler(name, texture)


@contextmanager
def _captured_console() -> Iterator[list[str]]:
    """Collect what Blender's C code prints (its shader log goes to stdout/stderr, not to Python).

    Redirects file descriptors 1 and 2 into a temporary file; where that is impossible (no real
    descriptors, e.g. a Windows GUI build) the log stays on the console and the list stays empty.
    """
    log: list[str] = []
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:
        yield log
        return
    with tempfile.TemporaryFile() as tmp:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield log
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            log.append(tmp.read().decode("utf-8", errors="replace"))


def _create_info(
    kind: str, variant: str, vertex_source: str, fragment_source: str
) -> gpu.types.GPUShaderCreateInfo:
    info = gpu.types.GPUShaderCreateInfo()
    for name in VARIANTS[variant]:
        info.define(name, "1")
    for name, value in constant_defines().items():
        info.define(name, value)
    info.typedef_source(_read(PARAMS_FILE))
    info.uniform_buf(0, PARAMS_STRUCT, "params")
    for slot, name in enumerate(SAMPLERS):
        info.sampler(slot, "FLOAT_2D", name)
    for slot, (type_, name) in enumerate(VERTEX_INPUTS):
        info.vertex_in(slot, type_, name)
    interface = gpu.types.GPUStageInterfaceInfo(f"hybrid_skin_{kind}_interface")
    for qualifier, type_, name in _VARYINGS[kind]:
        getattr(interface, qualifier)(type_, name)
    info.vertex_out(interface)
    info.fragment_out(0, "VEC4", "FragColor")
    info.vertex_source(vertex_source)
    info.fragment_source(fragment_source)
    return info


def _compile(kind: str, variant: str) -> SkinProgram:
    """Build and compile one shader; on failure raise with Blender's log (captured from the console)."""
    if kind not in KINDS:
        raise ValueError(f"unknown shader kind {kind!r}; expected one of {sorted(KINDS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown shader variant {variant!r}; expected one of {sorted(VARIANTS)}")
    vert_file, frag_file = KINDS[kind]
    lib = _read(LIB_FILE)
    vertex_source = f"{lib}\n{_read(vert_file)}"
    name = f"hybrid_skin {kind}/{variant}"
    info = _create_info(kind, variant, vertex_source, _read(frag_file))
    with _captured_console() as log:
        try:
            shader = gpu.shader.create_from_info(info)
        except Exception as ex:  # Blender raises a bare Exception with "see console"
            failure = ex
        else:
            failure = None
    if failure is None:
        if "".join(log).strip():  # warnings of a successful compile stay visible
            sys.stdout.write("".join(log))
        return SkinProgram(name, shader)
    lib_lines = lib.count("\n") + 1
    raise ShaderCompileError(
        f"{name} failed to compile ({failure}).\n"
        f"Vertex stage = {LIB_FILE} (lines 1-{lib_lines}) + {vert_file} (from line {lib_lines + 1}); "
        f"fragment stage = {frag_file}; sources in {shader_dir()}.\nCompiler log:\n{''.join(log).strip()}"
    ) from failure


_CACHE: dict[tuple[str, str], SkinProgram] = {}


def get(kind: str = "viewport", variant: str = "hybrid") -> SkinProgram:
    """The compiled shader for ``kind`` (``"viewport"`` / ``"readback"``) and ``variant``, cached."""
    key = (kind, variant)
    program = _CACHE.get(key)
    if program is None:
        program = _CACHE[key] = _compile(kind, variant)
    return program


def clear_cache() -> None:
    """Drop every compiled shader (unregister, or after editing the GLSL files during development)."""
    _CACHE.clear()
