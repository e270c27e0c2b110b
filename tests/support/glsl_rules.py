"""A static check of Blender's cross-backend rules for Python shaders (no GPU, no Blender needed).

Blender compiles a ``GPUShaderCreateInfo`` shader for OpenGL, Vulkan and Metal from the same sources, and
generates every declaration itself (Python API docs of ``gpu.types.GPUShaderCreateInfo`` and Blender's
"GLSL Cross Compilation" guide). What that implies for the sources, checked here:

* **Create-info declarations only.** No ``#version``, ``#extension`` or ``#include`` (Blender writes the
  preamble of each backend), no ``layout(...)``, no ``uniform``/``buffer``/``attribute``/``varying`` and
  no ``in``/``out`` declarations at global scope: inputs, outputs, uniforms and samplers come from the
  create-info.
* **No identifier shared with a resource.** The Vulkan backend declares push constants as macros
  (``#define name (PushConstants.pc_name)``, vk_shader.cc) and the Metal backend does the same for push
  constants and uniform blocks (``#define name global_uniforms->name``, mtl_shader_generator.mm: "Uniform
  macro definition vars can conflict with other parameters"). A parameter, local, struct member, function
  or define with such a name, or a member access ``.name``, breaks there while OpenGL accepts it - the
  crowd shader's ``float deform_factor`` parameter did exactly that. Samplers, vertex inputs, varyings,
  fragment outputs and create-info defines are held to the same rule: shadowing them is legal GLSL but
  hides the resource and differs between backends.
* **Names Metal's C++ cannot take.** Metal compiles the sources as members of a C++ class in the Metal
  Shading Language: C++ and MSL keywords (``vertex``, ``device``, ``constant``, ``thread``, ``half``,
  ``class`` ...) and the names Blender's translation layer itself defines (``texture``, ``PushConstants``,
  ``global_uniforms`` ...) cannot be declared; names with ``__`` or the ``gl_`` prefix are reserved in
  GLSL and C++ alike.
* **The GLSL subset Metal has.** No ``double`` types (Metal has no 64-bit floats), no ``precision`` or
  precision qualifiers, no ``subroutine``.
* **Push constants fit in 128 bytes**, the size Vulkan guarantees (Blender's Python API warns beyond it).

The check is lexical: comments are removed, every branch of ``#if`` is checked, and a declaration is a
type (a GLSL type or a struct declared in the sources) followed by a name, plus the names after commas
of the same declaration statement.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

#: GLSL types that can start a declaration (plus structs found in the sources).
GLSL_TYPES = frozenset(
    ["void", "bool", "int", "uint", "float", "double"]
    + [f"{p}vec{n}" for p in ("", "i", "u", "b", "d") for n in (2, 3, 4)]
    + [f"{p}mat{n}" for p in ("", "d") for n in (2, 3, 4)]
    + [f"{p}mat{a}x{b}" for p in ("", "d") for a in (2, 3, 4) for b in (2, 3, 4)]
    + [
        f"{p}sampler{s}"
        for p in ("", "i", "u")
        for s in ("1D", "2D", "3D", "Cube", "2DArray", "1DArray", "Buffer", "2DRect", "CubeArray", "2DMS")
    ]
    + ["sampler2DShadow", "sampler2DArrayShadow", "samplerCubeShadow"]
)
#: Qualifiers that may precede a type in a declaration.
QUALIFIERS = frozenset(
    ["const", "in", "out", "inout", "flat", "smooth", "noperspective", "centroid", "highp", "mediump", "lowp"]
)
#: Storage qualifiers that declare shader interface at global scope: the create-info's job.
INTERFACE_QUALIFIERS = frozenset(
    ["in", "out", "inout", "uniform", "buffer", "attribute", "varying", "shared"]
)
#: Types and qualifiers outside the GLSL subset every backend (Metal) accepts.
UNSUPPORTED = {
    **{t: "Metal has no 64-bit floats" for t in GLSL_TYPES if t.startswith(("double", "dvec", "dmat"))},
    "precision": "precision statements are not part of Blender's cross-backend GLSL",
    "highp": "precision qualifiers are not part of Blender's cross-backend GLSL",
    "mediump": "precision qualifiers are not part of Blender's cross-backend GLSL",
    "lowp": "precision qualifiers are not part of Blender's cross-backend GLSL",
    "subroutine": "subroutines do not exist in Metal",
}
#: C++ and Metal Shading Language keywords (Metal compiles the GLSL as C++ class members).
CPP_MSL_KEYWORDS = frozenset(
    """alignas alignof and asm auto bitand bitor break case catch char char16_t char32_t class compl concept
    const_cast constexpr continue decltype default delete do dynamic_cast else enum explicit export extern
    false for friend goto if inline long mutable namespace new noexcept not nullptr operator or private
    protected public register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast switch template this thread_local throw true try typedef typeid typename union unsigned using
    virtual volatile wchar_t while xor
    device constant thread threadgroup threadgroup_imageblock ray_data object_data vertex fragment kernel
    half half2 half3 half4 float2 float3 float4 int2 int3 int4 uint2 uint3 uint4 float2x2 float3x3 float4x4
    texture1d texture2d texture3d texturecube texture2d_array depth2d sampler array metal packed_float3
    visible stitchable intersection mesh object""".split()
)
#: Names Blender's own translation layers declare or define around the sources.
BLENDER_RESERVED = frozenset(
    """texture textureLod PushConstants PushConstantBlock global_uniforms FragmentOut VertexIn VertexOut
    main""".split()
)
#: Built-in functions: a declaration with such a name hides the function (C++ and GLSL alike).
GLSL_BUILTINS = frozenset(
    """abs sign floor ceil trunc round fract mod min max clamp mix step smoothstep sqrt inversesqrt pow exp
    exp2 log log2 sin cos tan asin acos atan length distance dot cross normalize reflect refract transpose
    inverse determinant outerProduct texelFetch textureSize texture textureLod floatBitsToInt floatBitsToUint
    intBitsToFloat uintBitsToFloat isnan isinf any all not lessThan lessThanEqual greaterThan
    greaterThanEqual equal notEqual radians degrees fma""".split()
)
PUSH_CONSTANT_LIMIT = 128
#: std430 size and alignment (bytes) of the push-constant types the add-on can declare.
_PUSH_CONSTANT_LAYOUT = {
    "FLOAT": (4, 4), "INT": (4, 4), "UINT": (4, 4), "BOOL": (4, 4), "VEC2": (8, 8), "IVEC2": (8, 8),
    "VEC3": (12, 16), "IVEC3": (12, 16), "VEC4": (16, 16), "IVEC4": (16, 16), "MAT3": (48, 16),
    "MAT4": (64, 16),
}  # fmt: skip

_TOKEN = re.compile(r"(?P<id>[A-Za-z_]\w*)|(?P<num>\d[\w.]*)|(?P<punct>\S)")


@dataclass(frozen=True)
class Source:
    """One GLSL file as the shader sees it: its name (for messages) and its text."""

    name: str
    text: str


@dataclass(frozen=True)
class Resources:
    """What a shader's create-info declares, by kind of resource (names only, plus push-constant types)."""

    push_constants: Sequence[tuple[str, str]] = ()  # (type, name), e.g. ("FLOAT", "deform_factor")
    uniform_blocks: Sequence[str] = ()
    samplers: Sequence[str] = ()
    vertex_inputs: Sequence[str] = ()
    varyings: Sequence[str] = ()
    fragment_outputs: Sequence[str] = ()
    defines: Sequence[str] = ()

    def macro_names(self) -> set[str]:
        """Names that Vulkan or Metal turn into macros: push constants and uniform blocks."""
        return {name for _type, name in self.push_constants} | set(self.uniform_blocks)

    def by_name(self) -> dict[str, str]:
        """Every resource name and what it is, for messages."""
        kinds = {name: "push constant" for _type, name in self.push_constants}
        for label, names in (
            ("uniform block", self.uniform_blocks),
            ("sampler", self.samplers),
            ("vertex input", self.vertex_inputs),
            ("varying", self.varyings),
            ("fragment output", self.fragment_outputs),
            ("create-info define", self.defines),
        ):
            kinds.update(dict.fromkeys(names, label))
        return kinds


@dataclass(frozen=True)
class Violation:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class _Token:
    text: str
    kind: str  # "id", "num", "punct", "directive"
    line: int


@dataclass
class _Scanner:
    """Comment-free tokens of one source with line numbers; preprocessor lines become one token each."""

    source: Source
    tokens: list[_Token] = field(default_factory=list)

    def __post_init__(self) -> None:
        text = _strip_comments(self.source.text)
        for number, line in enumerate(text.splitlines(), start=1):
            if line.lstrip().startswith("#"):
                self.tokens.append(_Token(line.strip(), "directive", number))
                continue
            for match in _TOKEN.finditer(line):
                self.tokens.append(_Token(match.group(), match.lastgroup or "punct", number))


def _strip_comments(text: str) -> str:
    """Replace comments by spaces, keeping every newline so line numbers stay right."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group())

    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def struct_names(sources: Iterable[Source]) -> set[str]:
    """Names of the structs the sources declare (they start declarations like built-in types)."""
    names: set[str] = set()
    for source in sources:
        names.update(re.findall(r"\bstruct\s+([A-Za-z_]\w*)", _strip_comments(source.text)))
    return names


def _declared_names(tokens: list[_Token], types: set[str]) -> Iterable[tuple[_Token, str]]:
    """(token, what) for every name a declaration introduces: variables, parameters, members, functions."""
    depth = 0  # parentheses and brackets
    declaration_depth: int | None = None  # depth of the declaration statement being read, if any
    for i, token in enumerate(tokens):
        text = token.text
        if token.kind == "directive":
            continue
        if text in "([":
            depth += 1
        elif text in ")]":
            depth -= 1
            if declaration_depth is not None and depth < declaration_depth:
                declaration_depth = None
        elif text in ";{}":
            declaration_depth = None
        elif text == "struct" and i + 1 < len(tokens):
            yield tokens[i + 1], "struct"
        elif text in types and i + 1 < len(tokens) and tokens[i + 1].kind == "id":
            following = tokens[i + 2].text if i + 2 < len(tokens) else ""
            name = tokens[i + 1]
            if name.text in types or name.text in QUALIFIERS:
                continue
            yield name, "function" if following == "(" and depth == 0 else "variable or parameter"
            if following != "(":
                declaration_depth = depth
        elif text == "," and declaration_depth == depth and i + 1 < len(tokens):
            name = tokens[i + 1]
            if name.kind == "id" and name.text not in types and name.text not in QUALIFIERS:
                yield name, "variable"


def check_stage(
    sources: Sequence[Source], resources: Resources, extra_types: Iterable[str] = ()
) -> list[Violation]:
    """Every rule of this module for one shader stage: ``sources`` in the order Blender concatenates them
    (libraries first), ``resources`` as its create-info declares them, ``extra_types`` the structs of
    ``typedef_source`` (they are types in the stage without being declared in it)."""
    types = set(GLSL_TYPES) | struct_names(sources) | set(extra_types)
    reserved = resources.by_name()
    macros = resources.macro_names()
    violations: list[Violation] = []
    for source in sources:
        tokens = _Scanner(source).tokens
        violations += _check_directives(source.name, tokens, reserved)
        violations += _check_global_interface(source.name, tokens, types)
        for token, what in _declared_names(tokens, types):
            problem = _name_problem(token.text, reserved)
            if problem:
                violations.append(Violation(source.name, token.line, f"{what} '{token.text}' {problem}"))
        for i, token in enumerate(tokens):
            if token.text in UNSUPPORTED:
                violations.append(
                    Violation(source.name, token.line, f"'{token.text}': {UNSUPPORTED[token.text]}")
                )
            if token.text == "layout" and token.kind == "id":
                violations.append(
                    Violation(
                        source.name,
                        token.line,
                        "layout qualifier: bindings and locations come from the create-info",
                    )
                )
            if token.text in macros and i > 0 and tokens[i - 1].text == ".":
                violations.append(
                    Violation(
                        source.name,
                        token.line,
                        f"member access '.{token.text}' names a {reserved[token.text]}, which Vulkan/Metal "
                        "declare as a macro",
                    )
                )
    return violations


def _name_problem(name: str, reserved: dict[str, str]) -> str | None:
    if name in reserved:
        what = reserved[name]
        why = (
            "(Vulkan and Metal declare it as a macro)"
            if what in ("push constant", "uniform block")
            else "(it would hide the resource)"
        )
        return f"has the name of a create-info {what} {why}"
    if name in CPP_MSL_KEYWORDS:
        return "is a C++/Metal Shading Language keyword (Metal compiles the sources as C++)"
    if name in BLENDER_RESERVED and name != "main":
        return "is a name Blender's Metal/Vulkan translation defines itself"
    if name in GLSL_BUILTINS:
        return "hides a GLSL built-in function"
    if name.startswith("gl_") or "__" in name:
        return "is reserved (gl_ prefix or double underscore)"
    return None


def _check_directives(file: str, tokens: list[_Token], reserved: dict[str, str]) -> list[Violation]:
    violations = []
    for token in tokens:
        if token.kind != "directive":
            continue
        directive = token.text[1:].split()
        word = directive[0] if directive else ""
        if word in ("version", "extension", "include"):
            violations.append(
                Violation(
                    file, token.line, f"#{word}: Blender writes each backend's preamble; sources have none"
                )
            )
        elif word == "define" and len(directive) > 1:
            name = re.match(r"[A-Za-z_]\w*", directive[1])
            if name and (problem := _name_problem(name.group(), reserved)):
                violations.append(Violation(file, token.line, f"define '{name.group()}' {problem}"))
    return violations


def _check_global_interface(file: str, tokens: list[_Token], types: set[str]) -> list[Violation]:
    """Storage qualifiers at global scope (outside braces and parentheses) declare shader interface."""
    violations = []
    braces = parens = 0
    for i, token in enumerate(tokens):
        text = token.text
        braces += (text == "{") - (text == "}")
        parens += (text == "(") - (text == ")")
        if braces == 0 and parens == 0 and token.kind == "id" and text in INTERFACE_QUALIFIERS:
            following = tokens[i + 1].text if i + 1 < len(tokens) else ""
            if (
                following in types
                or following in INTERFACE_QUALIFIERS
                or following in QUALIFIERS
                or text == "uniform"
            ):
                violations.append(
                    Violation(
                        file, token.line, f"global '{text}' declaration: the create-info declares interfaces"
                    )
                )
    return violations


def push_constant_bytes(push_constants: Sequence[tuple[str, str]]) -> int:
    """Size of the push-constant block with std430 alignment (what must fit Vulkan's 128 bytes)."""
    offset = 0
    for type_, _name in push_constants:
        size, align = _PUSH_CONSTANT_LAYOUT[type_]
        offset = -(-offset // align) * align + size
    return offset
