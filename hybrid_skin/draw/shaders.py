"""The one loader of the add-on's GLSL: files in ``shaders/`` → compiled, cached ``GPUShader`` objects.

Sources are plain GLSL files (no ``#version``; Blender's create-info declares every input, uniform,
sampler, varying and output). Each kind of shader is one :class:`ShaderKind` in :data:`KINDS`: its vertex
libraries and ``main()`` files, fragment file, variants, and what its create-info declares. Kinds:

* ``"viewport"`` / ``"readback"``: the skinning shaders. The libraries ``dual_quaternion_lib.glsl``,
  ``hybrid_skin_round.glsl`` (Auto's round profiles, shared with the animation textures and the engine
  ports) and ``hybrid_skin_lib.glsl`` are prepended to each vertex stage so both run literally the same
  skinning code; they read the ``HybridSkinParams`` block (:func:`pack_params`) and two textures
  (:class:`SkinProgram`). Variants (:data:`VARIANTS`): ``"hybrid"`` (the add-on's shader), ``"dqs"``
  and ``"lbs"`` (single-method shaders for benchmarks and A/B pictures). Constants the GLSL shares with
  Python (the AUTO factor's targets and angle, the bone texel it reads, the factor mode values) are
  passed as defines built from the Python modules that own them (:func:`constant_defines`), so each
  has one source of truth.
* ``"crowd"``: the instanced crowd preview (``animtex/crowd.py``), the animation texture decoders
  ``animtex_vertex.glsl`` (+ ``dual_quaternion_lib.glsl``, ``hybrid_skin_round.glsl`` and
  ``animtex_bone.glsl``) followed by
  ``animtex_crowd_vert.glsl``; push constants and two textures (:class:`CrowdProgram`). Variants
  (:data:`CROWD_VARIANTS`): ``"vertex"`` and ``"bone"``.

Shaders compile on first use and stay cached in the add-on's runtime (:mod:`..runtime`) until
:func:`clear_cache` or unregister. Compile failures raise :class:`ShaderCompileError` naming the shader
and its files and carrying Blender's compiler log, which Blender itself only prints to the console.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import gpu
import numpy as np

from .. import runtime
from ..core import autofactor
from ..core.deform_factor import DEFAULT_FACTOR
from ..core.gpu_layout import AUTO_TEXEL, INFLUENCE_TEXTURE_WIDTH

__all__ = [
    "CROWD_VARIANTS",
    "CROWD_VERTEX_INPUTS",
    "FACTOR_MODE_AUTO_JOINT",
    "FACTOR_MODE_AUTO_ROUND",
    "FACTOR_MODE_UNIFORM",
    "KINDS",
    "VARIANTS",
    "CrowdProgram",
    "Program",
    "ShaderCompileError",
    "ShaderKind",
    "SkinProgram",
    "Variant",
    "clear_cache",
    "constant_defines",
    "get",
    "pack_params",
    "round_width",
    "shader_dir",
]

LIB_FILE = "hybrid_skin_lib.glsl"
#: Dual quaternion helpers shared by the skinning and the bone animation texture shaders.
DUAL_QUATERNION_LIB = "dual_quaternion_lib.glsl"
#: Auto's round profiles, written once for the live display, the bone animation textures and the engine ports.
ROUND_LIB = "hybrid_skin_round.glsl"
PARAMS_FILE = "hybrid_skin_params.glsl"
PARAMS_STRUCT = "HybridSkinParams"
#: ``params.flags.w``: the factor is ``factors.x`` (times the per-vertex map when ``factors.y`` = 1) ...
FACTOR_MODE_UNIFORM = 0
#: ... or computed per vertex from the pose: Auto profile ``"JOINT"`` (``hs_auto_factor``, the twin of
#: ``autofactor.joint_vertex_factors``) ...
FACTOR_MODE_AUTO_JOINT = 1
#: ... or the round profiles (``hs_round_factor``, the twin of ``autofactor.round_factors``; the profile's
#: width is a uniform, its other constants are shared defines).
FACTOR_MODE_AUTO_ROUND = 2
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
    ("VEC4", "auto_rest"),
)

#: Crowd samplers in slot order: the animation texture as loaded, and the per-instance/per-part texture.
CROWD_SAMPLERS = ("animation", "crowd")
#: Crowd per-vertex inputs: the columns of ``core.animtex.crowd.crowd_vertices`` (matched by name; a test
#: checks names and integer types agree).
CROWD_VERTEX_INPUTS = (
    ("VEC3", "rest_position"),
    ("VEC3", "rest_normal"),
    ("INT", "item"),
    ("INT", "part"),
    ("IVEC4", "bones"),
    ("VEC4", "weights"),
    ("VEC4", "auto_rest"),
)
CROWD_PUSH_CONSTANTS = (
    ("MAT4", "view_projection"),
    ("VEC4", "color"),
    ("FLOAT", "time"),
    ("FLOAT", "deform_factor"),
    ("INT", "output_mode"),
)


@dataclass(frozen=True)
class Variant:
    """Compile-time choices of one variant: defines (each ``1``) and vertex libraries added for it."""

    defines: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()


#: Skinning variants (kinds ``"viewport"`` and ``"readback"``).
VARIANTS: dict[str, Variant] = {
    "hybrid": Variant(),
    "dqs": Variant(("HS_DQS_ONLY",)),
    "lbs": Variant(("HS_LBS_ONLY",)),
}
#: Crowd variants: vertex animation textures, or bone textures (``animtex_bone.glsl``, ``CROWD_BONES``).
CROWD_VARIANTS: dict[str, Variant] = {
    "vertex": Variant(),
    "bone": Variant(("CROWD_BONES",), (DUAL_QUATERNION_LIB, ROUND_LIB, "animtex_bone.glsl")),
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


def round_width(profile: str) -> float:
    """The uniform ``factors.z`` of a round Auto profile: its width (the other constants are defines)."""
    return autofactor.ROUND_SHAPES[profile].width


def constant_defines() -> dict[str, str]:
    """Defines every Hybrid Skin shader gets, from the Python constants they mirror."""
    round_shape = autofactor.ROUND_SHAPES["ROUND"]
    if any(shape._replace(width=0.0) != round_shape._replace(width=0.0)
           for shape in autofactor.ROUND_SHAPES.values()):
        raise ShaderCompileError("the round Auto profiles must differ in their width only (a uniform)")
    return {
        "HS_INFLUENCE_WIDTH": str(INFLUENCE_TEXTURE_WIDTH),
        "HS_AUTO_TEXEL": str(AUTO_TEXEL),
        "HS_FACTOR_MODE_AUTO_JOINT": str(FACTOR_MODE_AUTO_JOINT),
        "HS_FACTOR_MODE_AUTO_ROUND": str(FACTOR_MODE_AUTO_ROUND),
        # The same float32 constants as autofactor's factor functions compute with.
        "HS_AUTO_SWING": _glsl_float(autofactor.SWING_FACTOR),
        "HS_AUTO_RANGE": _glsl_float(autofactor.TWIST_FACTOR - autofactor.SWING_FACTOR),
        "HS_AUTO_EPSILON_SQ": _glsl_float(autofactor.ANGLE_EPSILON**2),
        "HS_ROUND_SWING_EXPONENT": _glsl_float(round_shape.swing_exponent),
        "HS_ROUND_TWIST_WEIGHT": _glsl_float(round_shape.twist_weight),
        "HS_ROUND_PRESENCE": _glsl_float(autofactor.PRESENCE_WEIGHT),
        "HS_QUARTER_TURN_SQ": _glsl_float(autofactor.QUARTER_TURN_SQ),
    }


def pack_params(
    target_to_armature: np.ndarray,
    armature_to_output: np.ndarray,
    *,
    view_projection: np.ndarray | None = None,
    color: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0),
    eye: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 0.0),
    deform_factor: float = DEFAULT_FACTOR,
    factor_map_mix: float = 0.0,
    factor_mode: int = FACTOR_MODE_UNIFORM,
    auto_width: float = 0.0,
    use_pivot: bool = False,
    encode_srgb: bool = False,
    readback: str = "positions",
    target_size: tuple[int, int] = (0, 0),
) -> np.ndarray:
    """The ``HybridSkinParams`` uniform block (``shaders/hybrid_skin_params.glsl``) as std140 float32 words.

    Matrices are row-major numpy ``(4, 4)`` (``p' = M @ p``); std140 stores columns, hence the transposes.
    Integer members are written through an int32 view of the same words. ``readback``: one of
    :data:`READBACK_OUTPUTS` (readback shader only). ``auto_width``: :func:`round_width` of the Auto
    profile for :data:`FACTOR_MODE_AUTO_ROUND`.
    """
    words = np.zeros(PARAMS_WORDS, dtype=np.float32)
    words[0:16] = np.asarray(target_to_armature, dtype=np.float32).T.ravel()
    words[16:32] = np.asarray(armature_to_output, dtype=np.float32).T.ravel()
    vp = np.eye(4) if view_projection is None else view_projection
    words[32:48] = np.asarray(vp, dtype=np.float32).T.ravel()
    words[48:52] = color
    words[52:56] = eye
    words[56:60] = (deform_factor, factor_map_mix, auto_width, 0.0)
    flags = (int(use_pivot), int(encode_srgb), READBACK_OUTPUTS[readback], int(factor_mode))
    words[60:64].view(np.int32)[:] = flags
    words[64:68].view(np.int32)[:] = (target_size[0], target_size[1], 0, 0)
    return words


@dataclass
class Program:
    """A compiled shader: ``name`` is ``"hybrid_skin <kind>/<variant>"``."""

    name: str
    shader: gpu.types.GPUShader
    variant: str


@dataclass
class SkinProgram(Program):
    """A skinning shader and the way to feed it: one uniform block and two textures."""

    def bind(
        self, params: gpu.types.GPUUniformBuf, bones: gpu.types.GPUTexture, influences: gpu.types.GPUTexture
    ) -> None:
        """Bind the shader and its resources; draw with ``batch.draw(program.shader)`` next."""
        self.shader.bind()
        self.shader.uniform_block("params", params)
        for name, texture in zip(SAMPLERS, (bones, influences)):
            self.shader.uniform_sampler(name, texture)


@dataclass
class CrowdProgram(Program):
    """The crowd shader and the way to feed it: push constants and two textures (:data:`CROWD_SAMPLERS`)."""

    def bind(
        self,
        animation: gpu.types.GPUTexture,
        crowd: gpu.types.GPUTexture,
        *,
        view_projection: np.ndarray,
        seconds: float,
        deform_factor: float,
        color: tuple[float, float, float, float],
        output_mode: int,
    ) -> None:
        """Bind the shader and its resources; ``batch.draw_instanced(program.shader, ...)`` next.

        ``view_projection`` is row-major numpy ``(4, 4)``; ``output_mode`` 1 writes scene position and
        instance number + 1 (readback). ``deform_factor`` is ignored by the ``"vertex"`` variant.
        """
        shader = self.shader
        shader.bind()
        shader.uniform_float("view_projection", np.asarray(view_projection, np.float32).T.ravel().tolist())
        shader.uniform_float("color", tuple(color))
        shader.uniform_float("time", float(seconds))
        if self.variant == "bone":  # the vertex variant compiles it out, and Blender refuses unknown names
            shader.uniform_float("deform_factor", float(deform_factor))
        shader.uniform_int("output_mode", int(output_mode))
        for name, texture in zip(CROWD_SAMPLERS, (animation, crowd)):
            shader.uniform_sampler(name, texture)


@dataclass(frozen=True, kw_only=True)
class ShaderKind:
    """Everything one kind of shader is built from: its GLSL files and its create-info declarations.

    The vertex stage is ``libraries`` + the variant's libraries + ``vertex_main``, joined in that order.
    ``skin_params``: the ``HybridSkinParams`` uniform block and :func:`constant_defines` are declared.
    Varyings are ``(qualifier, type, name)`` with qualifier ``"smooth"``, ``"flat"`` or ``"no_perspective"``.
    """

    vertex_main: str
    fragment: str
    variants: Mapping[str, Variant]
    program: type[Program]
    libraries: tuple[str, ...] = ()
    vertex_inputs: tuple[tuple[str, str], ...] = ()
    samplers: tuple[str, ...] = ()
    push_constants: tuple[tuple[str, str], ...] = ()
    varyings: tuple[tuple[str, str, str], ...] = ()
    skin_params: bool = False


_SKIN_VARYINGS = (("smooth", "VEC3", "world_position"), ("smooth", "VEC3", "world_normal"))
KINDS: dict[str, ShaderKind] = {
    "viewport": ShaderKind(
        vertex_main="hybrid_skin_vert.glsl",
        fragment="hybrid_skin_frag.glsl",
        variants=VARIANTS,
        program=SkinProgram,
        libraries=(DUAL_QUATERNION_LIB, ROUND_LIB, LIB_FILE),
        vertex_inputs=VERTEX_INPUTS,
        samplers=SAMPLERS,
        varyings=_SKIN_VARYINGS,
        skin_params=True,
    ),
    "readback": ShaderKind(
        vertex_main="hybrid_skin_readback_vert.glsl",
        fragment="hybrid_skin_readback_frag.glsl",
        variants=VARIANTS,
        program=SkinProgram,
        libraries=(DUAL_QUATERNION_LIB, ROUND_LIB, LIB_FILE),
        vertex_inputs=VERTEX_INPUTS,
        samplers=SAMPLERS,
        varyings=(("flat", "VEC4", "readback_value"),),
        skin_params=True,
    ),
    "crowd": ShaderKind(
        vertex_main="animtex_crowd_vert.glsl",
        fragment="animtex_crowd_frag.glsl",
        variants=CROWD_VARIANTS,
        program=CrowdProgram,
        libraries=("animtex_vertex.glsl",),
        vertex_inputs=CROWD_VERTEX_INPUTS,
        samplers=CROWD_SAMPLERS,
        push_constants=CROWD_PUSH_CONSTANTS,
        varyings=(*_SKIN_VARYINGS, ("flat", "INT", "instance_id")),
    ),
}


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
    spec = KINDS[kind]
    info = gpu.types.GPUShaderCreateInfo()
    for name in spec.variants[variant].defines:
        info.define(name, "1")
    for name, value in (constant_defines() if spec.skin_params else {}).items():
        info.define(name, value)
    if spec.skin_params:
        info.typedef_source(_read(PARAMS_FILE))
        info.uniform_buf(0, PARAMS_STRUCT, "params")
    for type_, name in spec.push_constants:
        info.push_constant(type_, name)
    for slot, name in enumerate(spec.samplers):
        info.sampler(slot, "FLOAT_2D", name)
    for slot, (type_, name) in enumerate(spec.vertex_inputs):
        info.vertex_in(slot, type_, name)
    interface = gpu.types.GPUStageInterfaceInfo(f"hybrid_skin_{kind}_interface")
    for qualifier, type_, name in spec.varyings:
        getattr(interface, qualifier)(type_, name)
    info.vertex_out(interface)
    info.fragment_out(0, "VEC4", "FragColor")
    info.vertex_source(vertex_source)
    info.fragment_source(fragment_source)
    return info


def _vertex_stage(files: list[str]) -> tuple[str, str]:
    """The files' sources joined by newlines, and where each one lies in the result (for error messages)."""
    sources = [_read(name) for name in files]
    parts, line = [], 1
    for i, (name, source) in enumerate(zip(files, sources)):
        last = line + source.count("\n")  # the joining newline ends the file's last line
        parts.append(f"{name} (from line {line})" if i == len(files) - 1 else f"{name} (lines {line}-{last})")
        line = last + 1
    return "\n".join(sources), " + ".join(parts)


def _compile(kind: str, variant: str) -> Program:
    """Build and compile one shader; on failure raise with Blender's log (captured from the console)."""
    if kind not in KINDS:
        raise ValueError(f"unknown shader kind {kind!r}; expected one of {sorted(KINDS)}")
    spec = KINDS[kind]
    if variant not in spec.variants:
        raise ValueError(
            f"unknown {kind} shader variant {variant!r}; expected one of {sorted(spec.variants)}"
        )
    files = [*spec.libraries, *spec.variants[variant].libraries, spec.vertex_main]
    vertex_source, vertex_files = _vertex_stage(files)
    name = f"hybrid_skin {kind}/{variant}"
    info = _create_info(kind, variant, vertex_source, _read(spec.fragment))
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
        return spec.program(name, shader, variant)
    raise ShaderCompileError(
        f"{name} failed to compile ({failure}).\n"
        f"Vertex stage = {vertex_files}; fragment stage = {spec.fragment}; sources in {shader_dir()}.\n"
        f"Compiler log:\n{''.join(log).strip()}"
    ) from failure


@dataclass
class ShaderCache:
    """``(kind, variant)`` → compiled shader, built on first use (:meth:`..runtime.Runtime.state`)."""

    shaders: dict[tuple[str, str], Program] = field(default_factory=dict)


def get(kind: str = "viewport", variant: str = "hybrid") -> Program:
    """The compiled shader for ``kind`` (a key of :data:`KINDS`) and one of its variants, cached.

    ``"viewport"`` / ``"readback"`` give a :class:`SkinProgram`, ``"crowd"`` a :class:`CrowdProgram`.
    """
    cache = runtime.get().state(ShaderCache).shaders
    key = (kind, variant)
    program = cache.get(key)
    if program is None:
        program = cache[key] = _compile(kind, variant)
    return program


def clear_cache(kind: str | None = None) -> None:
    """Drop the compiled shaders of ``kind``, or every one (after editing the GLSL files)."""
    state = runtime.current()
    if state is None:
        return
    shaders = state.state(ShaderCache).shaders
    for key in [key for key in shaders if kind is None or key[0] == kind]:
        del shaders[key]
