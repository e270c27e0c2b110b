"""Every file in shaders/ follows Blender's cross-backend shader rules (static: no GPU, no shader compile).

The stages are assembled exactly as ``hybrid_skin/draw/shaders.py`` assembles them for each kind and variant
(vertex libraries in order, the variant's libraries, main; the fragment file), and checked against the names
its create-info declares (tests/support/glsl_rules.py says which rules and why). This is what keeps Vulkan
and Metal, which the OpenGL-only suite of old never compiled for, from breaking on a new shader edit; the
checker's own tests below show it catches the clash that broke the crowd shader on Vulkan.
"""

from __future__ import annotations

from pathlib import Path

import bpy  # noqa: F401  (makes Blender's gpu module importable; no GPU context is created)
import pytest

from hybrid_skin.draw import shaders
from tests.support import glsl_rules
from tests.support.glsl_rules import Resources, Source

SHADER_DIR = Path(__file__).resolve().parents[2] / "shaders"


def _source(name: str) -> Source:
    return Source(name, (SHADER_DIR / name).read_text(encoding="utf-8"))


def _resources(kind: str, variant: str) -> Resources:
    spec = shaders.KINDS[kind]
    defines = list(spec.variants[variant].defines)
    if spec.skin_params:
        defines += list(shaders.constant_defines())
    return Resources(
        push_constants=spec.push_constants,
        uniform_blocks=("params",) if spec.skin_params else (),
        samplers=spec.samplers,
        vertex_inputs=[name for _type, name in spec.vertex_inputs],
        varyings=[name for _qualifier, _type, name in spec.varyings],
        fragment_outputs=("FragColor",),
        defines=defines,
    )


def _stages(kind: str, variant: str) -> dict[str, list[Source]]:
    spec = shaders.KINDS[kind]
    vertex = [*spec.libraries, *spec.variants[variant].libraries, spec.vertex_main]
    return {"vertex": [_source(name) for name in vertex], "fragment": [_source(spec.fragment)]}


def _typedefs(kind: str) -> list[Source]:
    return [_source(shaders.PARAMS_FILE)] if shaders.KINDS[kind].skin_params else []


SHADERS = [(kind, variant) for kind, spec in shaders.KINDS.items() for variant in spec.variants]


@pytest.mark.parametrize(("kind", "variant"), SHADERS, ids=[f"{k}/{v}" for k, v in SHADERS])
def test_every_stage_follows_the_cross_backend_rules(kind, variant):
    resources = _resources(kind, variant)
    typedefs = _typedefs(kind)
    types = glsl_rules.struct_names(typedefs)
    violations = [
        str(violation)
        for stage in _stages(kind, variant).values()
        for violation in glsl_rules.check_stage([*typedefs, *stage], resources, types)
    ]
    assert violations == [], f"{kind}/{variant}:\n" + "\n".join(violations)


def test_every_shader_file_is_checked():
    """A new file in shaders/ must belong to a shader kind (or this check would never see it)."""
    checked = {
        source.name
        for kind, variant in SHADERS
        for stage in (_stages(kind, variant), {"typedefs": _typedefs(kind)})
        for sources in stage.values()
        for source in sources
    }
    assert checked == {path.name for path in SHADER_DIR.glob("*.glsl")}


@pytest.mark.parametrize("kind", [kind for kind, spec in shaders.KINDS.items() if spec.push_constants])
def test_push_constants_fit_the_128_bytes_vulkan_guarantees(kind):
    size = glsl_rules.push_constant_bytes(shaders.KINDS[kind].push_constants)
    assert 0 < size <= glsl_rules.PUSH_CONSTANT_LIMIT, size


# The checker itself: each rule catches what it is for, at the right line.

CROWD = Resources(
    push_constants=(("MAT4", "view_projection"), ("FLOAT", "deform_factor")),
    samplers=("animation",),
    vertex_inputs=("bones",),
    uniform_blocks=("params",),
)


def _violations(text: str, resources: Resources = CROWD) -> list[tuple[int, str]]:
    return [(v.line, v.message) for v in glsl_rules.check_stage([Source("x.glsl", text)], resources)]


def test_the_old_crowd_bone_shader_fails_the_check():
    """Blender's Vulkan compiler rejected the bone crowd shader before its parameters were renamed:
    animtex_bone.glsl with its old parameter names (``deform_factor`` = the crowd push constant) fails."""
    current = _source("animtex_bone.glsl").text
    old = current.replace("hybrid_factor", "deform_factor").replace("bone_ids", "bones")
    assert old != current
    lines = [line for line, _message in _violations(old)]
    expected = [n for n, text in enumerate(old.splitlines(), start=1) if "float deform_factor," in text]
    # six functions take the factor: animtex_skin_rows(_crossfade), animtex_bone_skin(_crossfade) and
    # animtex_bone_skin_crossfade_auto(_tangent)
    assert len(expected) == 6 and set(expected) <= set(lines), (expected, _violations(old))
    assert all("push constant" in message for line, message in _violations(old) if line in expected)
    assert _violations(current) == []


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("#version 330\nvoid f() {}", 1, "#version"),
        ("layout(location = 0) in vec3 p;", 1, "layout"),
        ("in vec3 position;\n", 1, "global 'in'"),
        ("uniform float k;", 1, "global 'uniform'"),
        ("void f()\n{\n  float a = 1.0, deform_factor = 2.0;\n}", 3, "push constant"),
        ("struct S {\n  vec4 view_projection;\n};", 2, "push constant"),
        ("float g(S s)\n{\n  return s.deform_factor;\n}", 3, "member access"),
        ("void f(sampler2D animation) {}", 1, "sampler"),
        ("void f(ivec4 bones) {}", 1, "vertex input"),
        ("float params(float x) { return x; }", 1, "uniform block"),
        ("#define deform_factor 1.0", 1, "push constant"),
        ("void f()\n{\n  float half = 0.5;\n}", 3, "Metal"),
        ("void f(vec3 texture) {}", 1, "Metal"),
        ("void f()\n{\n  double d = 1.0;\n}", 3, "64-bit"),
        ("void f()\n{\n  float length = 1.0;\n}", 3, "built-in"),
        ("void f(float gl_value) {}", 1, "reserved"),
        ("precision highp float;", 1, "precision"),
    ],
)
def test_each_rule_catches_its_case(text, line, words):
    found = _violations(text)
    assert any(at == line and words in message for at, message in found), found


def test_uses_of_resources_and_ordinary_code_pass():
    text = """
struct Pose { vec4 rows[3]; float weight; };
const int COUNT = 4;
vec3 moved(Pose pose, vec3 p, out float w)
{
  vec4 p1 = vec4(p, 1.0), q = vec4(0.0);
  w = pose.weight * deform_factor;
  for (int i = 0; i < COUNT; i++) {
    q += texelFetch(animation, ivec2(bones[i % 4], 0), 0);
  }
  return vec3(dot(pose.rows[0], p1), dot(pose.rows[1], p1), dot(pose.rows[2], p1)) + q.xyz;
}
"""
    assert _violations(text) == []


def test_push_constant_size_uses_std430_alignment():
    assert glsl_rules.push_constant_bytes([("FLOAT", "a"), ("VEC4", "b")]) == 32
    assert glsl_rules.push_constant_bytes([("MAT4", "m"), ("VEC4", "c"), ("FLOAT", "t"), ("INT", "i")]) == 88
