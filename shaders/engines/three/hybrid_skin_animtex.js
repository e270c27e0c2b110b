/**
 * Hybrid Skin animation textures for three.js: load a bake (image + JSON sidecar) and play it on
 * InstancedMeshes, each instance with its own clip, time offset, speed, deform factor (bone kinds:
 * LBS ... DQS at runtime, or 'auto': each vertex's Auto factor where the bake carries Auto) and
 * cross-fade to a second clip.
 *
 * The decoding GLSL is not a copy: the shipped shaders/animtex_vertex.glsl, dual_quaternion_lib.glsl,
 * hybrid_skin_round.glsl (Auto) and animtex_bone.glsl are fetched and compiled as they are (WebGL2 = GLSL ES 3.00, which they are written to), with their
 * metadata read from the texture's embedded block, exactly as Blender's crowd preview does.
 *
 *   import { loadAnimtexBake, AnimtexCrowd } from './hybrid_skin_animtex.js';
 *   const bake = await loadAnimtexBake('textures/robot.json');       // the sidecar; the image is beside it
 *   const crowd = new AnimtexCrowd(bake, [{ geometry, material }], 100);
 *   crowd.setInstance(7, { clip: 'Walking', timeOffset: 0.3, matrix });
 *   crowd.crossFade(7, 'Running', { duration: 0.4 });                 // starts at crowd.time
 *   scene.add(crowd);  ...  crowd.update(clock.getElapsedTime());      // every frame
 *
 * Needs three (tested with the version pinned in tests/engines/package.json) and, for EXR bakes,
 * three/addons/loaders/EXRLoader.js; an import map or bundler resolves 'three' and 'three/addons/'.
 */
import {
  BufferGeometry, DataTexture, FloatType, Group, InstancedBufferAttribute, InstancedMesh, Matrix4, MeshDepthMaterial,
  NearestFilter, RGBADepthPacking, RGBAFormat,
} from 'three';
import { EXRLoader } from 'three/addons/loaders/EXRLoader.js';

/** One clear sentence for anything a bake or a call gets wrong. */
export class AnimtexError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AnimtexError';
  }
}

const FORMAT = 'hybrid_skin.animtex';
const FORMAT_VERSIONS = [1];
const KINDS = ['VERTEX', 'BONE_MATRIX', 'BONE_DQ'];
/** Floats of Auto rest data per vertex this runtime reads (one vec4 attribute; the sidecar's auto.vertex_floats). */
const AUTO_REST_FLOATS = 4;
const DEFAULT_SHADER_BASE = new URL('../../', import.meta.url);

// ------------------------------------------------------------------------------------------ images
/** PNG (8 or 16 bit RGBA, not interlaced, as Blender writes it) -> stored codes, rows bottom-up. */
export async function decodePng(buffer) {
  const bytes = new Uint8Array(buffer);
  const view = new DataView(buffer);
  const signature = [137, 80, 78, 71, 13, 10, 26, 10];
  if (!signature.every((b, i) => bytes[i] === b)) throw new AnimtexError('the image is not a PNG file');
  let pos = 8, width = 0, height = 0, depth = 0, color = 0, interlace = 0;
  const idat = [];
  while (pos < bytes.length) {
    const length = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    const body = bytes.subarray(pos + 8, pos + 8 + length);
    if (type === 'IHDR') {
      width = view.getUint32(pos + 8);
      height = view.getUint32(pos + 12);
      [depth, color] = [body[8], body[9]];
      interlace = body[12];
    } else if (type === 'IDAT') {
      idat.push(body);
    } else if (type === 'IEND') {
      break;
    }
    pos += 12 + length;
  }
  if (color !== 6 || interlace !== 0 || (depth !== 8 && depth !== 16)) {
    throw new AnimtexError(`PNG must be 8 or 16 bit RGBA, not interlaced (got depth ${depth}, colour type ${color})`);
  }
  const stream = new Blob(idat).stream().pipeThrough(new DecompressionStream('deflate'));
  const raw = new Uint8Array(await new Response(stream).arrayBuffer());
  const bpp = 4 * depth / 8, stride = width * bpp;
  if (raw.length !== height * (stride + 1)) throw new AnimtexError('the PNG image data is truncated');
  const lines = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = y * (stride + 1) + 1, dst = y * stride, prev = dst - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? lines[dst + x - bpp] : 0;
      const b = y > 0 ? lines[prev + x] : 0;
      const c = x >= bpp && y > 0 ? lines[prev + x - bpp] : 0;
      let predictor = 0;
      if (filter === 1) predictor = a;
      else if (filter === 2) predictor = b;
      else if (filter === 3) predictor = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
      } else if (filter !== 0) throw new AnimtexError(`PNG filter ${filter} is not valid`);
      lines[dst + x] = (raw[src + x] + predictor) & 255;
    }
  }
  // Row 0 of the texture (texelFetch y = 0, Blender's Image.pixels row 0) is the last row of the file.
  const codes = depth === 8 ? new Uint8Array(width * height * 4) : new Uint16Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const line = (height - 1 - y) * stride, out = y * width * 4;
    for (let i = 0; i < width * 4; i++) {
      codes[out + i] = depth === 8 ? lines[line + i] : (lines[line + 2 * i] << 8) | lines[line + 2 * i + 1];
    }
  }
  return { width, height, depth, codes };
}

/** Sampler channels as the shaders expect them: PNG codes / 255 or / 65535, EXR floats; rows bottom-up. */
async function decodeImage(buffer, precision) {
  if (precision === 'EXR16' || precision === 'EXR32') {
    const exr = new EXRLoader().setDataType(FloatType).parse(buffer);
    if (exr.format !== RGBAFormat) throw new AnimtexError('the EXR image must have R, G, B and A channels');
    return { width: exr.width, height: exr.height, data: exr.data }; // EXRLoader already puts row 0 at the bottom
  }
  const png = await decodePng(buffer);
  const expected = precision === 'PNG8' ? 8 : 16;
  if (png.depth !== expected) throw new AnimtexError(`the sidecar says ${precision} but the PNG has ${png.depth} bits`);
  const q = png.depth === 8 ? 255 : 65535;
  const data = new Float32Array(png.codes.length);
  for (let i = 0; i < data.length; i++) data[i] = png.codes[i] / q;
  return { width: png.width, height: png.height, data };
}

async function fetchOk(url, what) {
  const response = await fetch(url);
  if (!response.ok) throw new AnimtexError(`cannot load the ${what} ${url} (HTTP ${response.status})`);
  return response;
}

// -------------------------------------------------------------------------------------------- bake
/**
 * A loaded bake: the sidecar (`meta`), the float DataTexture (nearest, no mipmaps, rows bottom-up) and
 * the decoder GLSL. `options.shaderBase` is the folder holding animtex_vertex.glsl / dual_quaternion_lib.glsl /
 * hybrid_skin_round.glsl / animtex_bone.glsl (default: two folders above this module, i.e. the repository's shaders/).
 */
export async function loadAnimtexBake(jsonUrl, options = {}) {
  const url = new URL(jsonUrl, globalThis.location?.href);
  const meta = await (await fetchOk(url, 'sidecar')).json();
  if (meta.format !== FORMAT) throw new AnimtexError(`${url} is not a ${FORMAT} sidecar`);
  if (!FORMAT_VERSIONS.includes(meta.format_version)) {
    throw new AnimtexError(`format_version ${meta.format_version} is not supported (this runtime reads ${FORMAT_VERSIONS})`);
  }
  if (!KINDS.includes(meta.kind)) throw new AnimtexError(`unknown kind ${meta.kind}`);
  if (!meta.embedded_metadata) {
    throw new AnimtexError('the bake has no embedded metadata block: bake again without --no-embed');
  }
  if (meta.auto && meta.auto.vertex_floats > AUTO_REST_FLOATS) {
    throw new AnimtexError(`the bake's Auto has ${meta.auto.vertex_floats} floats of rest data per vertex; this runtime reads ${AUTO_REST_FLOATS}: update it`);
  }
  const imageUrl = new URL(options.image ?? meta.image, url);
  const image = await decodeImage(await (await fetchOk(imageUrl, 'image')).arrayBuffer(), meta.precision);
  if (image.width !== meta.layout.width || image.height !== meta.layout.height) {
    throw new AnimtexError(`the image is ${image.width}x${image.height}, the sidecar says ${meta.layout.width}x${meta.layout.height}`);
  }
  const texture = new DataTexture(image.data, image.width, image.height, RGBAFormat, FloatType);
  texture.minFilter = texture.magFilter = NearestFilter; // neighbouring texels hold other vertices
  texture.generateMipmaps = false;
  texture.flipY = false;
  texture.needsUpdate = true;
  const base = new URL(options.shaderBase ?? DEFAULT_SHADER_BASE, url);
  const bones = ['dual_quaternion_lib.glsl', 'hybrid_skin_round.glsl', 'animtex_bone.glsl'];
  const files = ['animtex_vertex.glsl', ...(meta.kind === 'VERTEX' ? [] : bones)];
  const glsl = (await Promise.all(files.map(async (f) => (await fetchOk(new URL(f, base), 'shader')).text()))).join('\n');
  return new AnimtexBake(meta, texture, glsl);
}

export class AnimtexBake {
  constructor(meta, texture, glsl) {
    this.meta = meta;
    this.texture = texture;
    this.glsl = glsl;
    this.kind = meta.kind;
    this.bones = meta.kind !== 'VERTEX';
    /** Whether the bake carries Auto (bone kinds baked from meshes in factor mode Auto): instances may play 'auto'. */
    this.auto = this.bones && !!meta.auto;
  }

  /** Clip number from a name or a number. */
  clipIndex(clip) {
    const names = this.meta.clips.map((c) => c.name);
    const index = typeof clip === 'number' ? clip : names.indexOf(clip);
    if (!Number.isInteger(index) || index < 0 || index >= names.length) {
      throw new AnimtexError(`no clip ${JSON.stringify(clip)}; the clips are ${names.join(', ')}`);
    }
    return index;
  }

  /** The deform factor the bake recorded (VERTEX: the one baked in; bone kinds: the rig's default, which
   * instances play when they play no Auto). */
  get defaultDeformFactor() {
    return this.meta.deform_factor?.value ?? 0.5;
  }

  /** Whether the geometry carries mesh attribute `key` of the sidecar, under any name attributeName accepts. */
  hasAttribute(geometry, key) {
    const name = this.meta.mesh_attributes?.[key];
    return !!name && [name, `_${name}`.toLowerCase(), name.toLowerCase()].some((n) => geometry.getAttribute(n));
  }

  /**
   * The geometry attribute holding mesh attribute `key` of the sidecar (texel_index, bone_indices, ...):
   * its own name, or the name a glTF round trip gives it (Blender exports custom attributes starting
   * with "_" in upper case; three's GLTFLoader lower-cases them).
   */
  attributeName(geometry, key) {
    const name = this.meta.mesh_attributes?.[key];
    if (!name) throw new AnimtexError(`the sidecar names no mesh attribute ${key}`);
    const found = [name, `_${name}`.toLowerCase(), name.toLowerCase()].find((n) => geometry.getAttribute(n));
    if (!found) {
      const have = Object.keys(geometry.attributes).join(', ');
      throw new AnimtexError(`the geometry has no attribute '${name}' (or '_${name}'); it has ${have}`);
    }
    return found;
  }
}

// ------------------------------------------------------------------------------------------- GLSL
/**
 * The vertex-stage GLSL that decodes this bake: declarations, the shipped decoders and
 * `void animtex_decode(vec3 rest_position, vec3 rest_normal, out vec3 position, out vec3 normal)`,
 * reading the instance attributes animtexPlay / animtexFade / animtexFadeTime and the uniforms
 * animtexTexture / animtexTime. Bone kinds: animtexPlay.w is the deform factor, negative for Auto (each
 * vertex's factor from the bake's Auto data and its animtexAutoRest, the sidecar's auto_rest attribute). `itemFromUv`: find each vertex's texels through the attribute animtexUv
 * (the sidecar's texel UV after a glTF round trip, v = 1 - Blender's v) instead of animtexIndex (the
 * texel index attribute). VERTEX only; bone kinds read animtexBoneIndices / animtexBoneWeights.
 * `yUp`: the geometry is in glTF's Y-up axes (Blender's glTF exporter with its default "+Y Up"); the
 * textures are in the baked mesh's own (Blender, Z-up) axes, so rest data is turned into those before
 * decoding and the results back: Blender (x, y, z) is glTF (x, z, -y).
 */
export function animtexVertexChunk(bake, { itemFromUv = false, yUp = false } = {}) {
  let inputs, body;
  if (bake.bones) {
    inputs = 'attribute vec4 animtexBoneIndices;\nattribute vec4 animtexBoneWeights;\nattribute vec4 animtexAutoRest;';
    body = `
  AnimtexBoneInfo info = animtex_bone_info(animtexTexture);
  animtex_bone_skin_crossfade_auto(animtexTexture, info, clip_a, sample_a, clip_b, sample_b, weight,
                                   ivec4(animtexBoneIndices + 0.5), animtexBoneWeights, animtexAutoRest,
                                   animtexPlay.w, rest, rest_n, position, normal);`;
  } else {
    inputs = itemFromUv ? 'attribute vec2 animtexUv;' : 'attribute float animtexIndex;';
    const item = itemFromUv
      ? 'animtex_item_from_uv(animtexTexture, vec2(animtexUv.x, 1.0 - animtexUv.y), 2, info.items_per_row)'
      : 'int(animtexIndex + 0.5)';
    body = `
  AnimtexVertexInfo info = animtex_vertex_info(animtexTexture);
  animtex_vertex_crossfade(animtexTexture, info, clip_a, sample_a, clip_b, sample_b, weight, ${item},
                           rest, position, normal);`;
  }
  const [toBake, fromBake] = yUp
    ? ['vec3 rest = vec3(rest_position.x, -rest_position.z, rest_position.y);\n  vec3 rest_n = vec3(rest_normal.x, -rest_normal.z, rest_normal.y);',
      '\n  position = vec3(position.x, position.z, -position.y);\n  normal = vec3(normal.x, normal.z, -normal.y);']
    : ['vec3 rest = rest_position;\n  vec3 rest_n = rest_normal;', ''];
  return `
uniform sampler2D animtexTexture;
uniform float animtexTime;
attribute vec4 animtexPlay;     /* clip, time offset (s), speed, deform factor (bone kinds; < 0: Auto) */
attribute vec4 animtexFade;     /* clip faded to (-1: none), its time offset (s), its speed, unused */
attribute vec2 animtexFadeTime; /* fade start (s of animtexTime), duration (s) */
${inputs}
${bake.glsl}
void animtex_decode(vec3 rest_position, vec3 rest_normal, out vec3 position, out vec3 normal)
{
  ${toBake}
  AnimtexClip clip_a = animtex_clip(animtexTexture, int(animtexPlay.x + 0.5));
  float sample_a = animtex_sample_at_time(clip_a, animtexTime * animtexPlay.z + animtexPlay.y);
  AnimtexClip clip_b = clip_a;
  float sample_b = sample_a;
  float weight = 0.0;
  if (animtexFade.x >= 0.0) {
    clip_b = animtex_clip(animtexTexture, int(animtexFade.x + 0.5));
    sample_b = animtex_sample_at_time(clip_b, animtexTime * animtexFade.z + animtexFade.y);
    float since = animtexTime - animtexFadeTime.x;
    weight = animtexFadeTime.y > 0.0 ? clamp(since / animtexFadeTime.y, 0.0, 1.0) : step(0.0, since);
  }${body}${fromBake}
}
`;
}

/**
 * Make `material` (any built-in three material, or a ShaderMaterial using three's vertex chunks) play
 * the bake: position and normal come from animtex_decode before three's own vertex chunks run.
 * Returns the same material. `uniforms` are shared (one time for the whole crowd).
 */
export function patchMaterial(material, bake, uniforms, chunkOptions = {}) {
  const chunk = animtexVertexChunk(bake, chunkOptions);
  const previous = material.onBeforeCompile;
  material.onBeforeCompile = (shader, renderer) => {
    previous?.call(material, shader, renderer);
    Object.assign(shader.uniforms, uniforms);
    const main = 'void main() {';
    if (!shader.vertexShader.includes(main) || !shader.vertexShader.includes('#include <begin_vertex>')) {
      throw new AnimtexError(`material ${material.type} has no three.js vertex chunks to patch`);
    }
    shader.vertexShader = shader.vertexShader
      .replace('#include <common>', `#include <common>\n${chunk}`)
      .replace(main, `${main}\n\tvec3 animtexPosition, animtexNormal;\n\tanimtex_decode(position, normal, animtexPosition, animtexNormal);`)
      .replace('#include <beginnormal_vertex>', '#include <beginnormal_vertex>\n\tobjectNormal = animtexNormal;')
      .replace('#include <begin_vertex>', '#include <begin_vertex>\n\ttransformed = animtexPosition;');
  };
  const key = `hybrid_skin_animtex:${bake.kind}:${chunkOptions.itemFromUv ? 'uv' : 'index'}:${chunkOptions.yUp ? 'y' : 'z'}`;
  const previousKey = material.customProgramCacheKey.bind(material);
  material.customProgramCacheKey = () => `${previousKey()}|${key}`;
  material.needsUpdate = true;
  return material;
}

// ------------------------------------------------------------------------------------------ crowd
const _matrix = new Matrix4();

/**
 * A crowd of one baked character: one InstancedMesh per mesh part, sharing the per-instance playback
 * attributes. `parts`: [{ geometry, material, matrix }] - geometry with the rest `position`, `normal`
 * and the sidecar's mesh attributes; `matrix` the part's object matrix in the character (default
 * identity); bone kinds whose bake carries Auto also need the sidecar's `auto_rest` attribute for
 * instances to play 'auto' (the default then). Options: `itemFromUv` - the name of the geometry's UV attribute holding the sidecar's
 * texel UV (e.g. 'uv' or 'uv1' from glTF) to use instead of the texel index attribute; `yUp` (see
 * animtexVertexChunk: true for glTF exported with Blender's default +Y Up); `castShadow`.
 * Each part's material is cloned and patched (see patchMaterial).
 */
export class AnimtexCrowd extends Group {
  constructor(bake, parts, count, options = {}) {
    super();
    if (!(count >= 1)) throw new AnimtexError(`a crowd needs at least one instance, got ${count}`);
    if (!parts?.length) throw new AnimtexError('a crowd needs at least one mesh part');
    this.bake = bake;
    this.count = count;
    this.time = 0;
    this.uniforms = { animtexTexture: { value: bake.texture }, animtexTime: { value: 0 } };
    this.play = new InstancedBufferAttribute(new Float32Array(count * 4), 4);
    this.fade = new InstancedBufferAttribute(new Float32Array(count * 4), 4);
    this.fadeTime = new InstancedBufferAttribute(new Float32Array(count * 2), 2);
    this.placements = Array.from({ length: count }, () => new Matrix4());
    /** Whether every part has its vertices' Auto rest data: instances of a bake with Auto may play 'auto'. */
    this.autoReady = bake.auto;
    this.parts = parts.map((part) => this._part(part, options));
    for (let i = 0; i < count; i++) this.setInstance(i, {});
  }

  _part({ geometry, material, matrix }, options) {
    const g = new BufferGeometry(); // the caller's attributes, shared, under the names the GLSL reads
    g.setIndex(geometry.index);
    for (const [name, attribute] of Object.entries(geometry.attributes)) g.setAttribute(name, attribute);
    if (this.bake.bones) {
      g.setAttribute('animtexBoneIndices', g.getAttribute(this.bake.attributeName(g, 'bone_indices')));
      g.setAttribute('animtexBoneWeights', g.getAttribute(this.bake.attributeName(g, 'bone_weights')));
      if (this.bake.auto && this.bake.hasAttribute(g, 'auto_rest')) {
        g.setAttribute('animtexAutoRest', g.getAttribute(this.bake.attributeName(g, 'auto_rest')));
      } else {
        this.autoReady = false; // no Auto rest data: instances play one factor
      }
    } else if (options.itemFromUv) {
      const uv = g.getAttribute(options.itemFromUv);
      if (!uv) throw new AnimtexError(`the geometry has no UV attribute '${options.itemFromUv}'`);
      g.setAttribute('animtexUv', uv);
    } else {
      // Each split vertex's own item (corner_index: hard edges and custom normals get their normal);
      // texel_index, one item per Blender vertex, where a bake or an export lacks it.
      const key = this.bake.hasAttribute(g, 'corner_index') ? 'corner_index' : 'texel_index';
      g.setAttribute('animtexIndex', g.getAttribute(this.bake.attributeName(g, key)));
    }
    if (!g.getAttribute('normal')) g.computeVertexNormals();
    g.setAttribute('animtexPlay', this.play);
    g.setAttribute('animtexFade', this.fade);
    g.setAttribute('animtexFadeTime', this.fadeTime);
    const chunk = { itemFromUv: !!options.itemFromUv, yUp: !!options.yUp };
    this.chunkOptions = chunk;
    const mesh = new InstancedMesh(g, patchMaterial(material.clone(), this.bake, this.uniforms, chunk), this.count);
    mesh.frustumCulled = false; // the rest pose's bounds do not hold the animation
    mesh.castShadow = !!options.castShadow;
    mesh.customDepthMaterial = patchMaterial(new MeshDepthMaterial({ depthPacking: RGBADepthPacking }), this.bake, this.uniforms, chunk);
    mesh.userData.partMatrix = (matrix ?? new Matrix4()).clone();
    this.add(mesh);
    return mesh;
  }

  /** Playback of instance `i`: clip (name or number), timeOffset (s), speed, deformFactor (bone kinds: a
   * number in 0..1, or 'auto' where the bake carries Auto; default 'auto' there, else the bake's factor),
   * matrix (placement of the whole character). Clears a cross-fade. */
  setInstance(i, { clip = 0, timeOffset = 0, speed = 1, deformFactor, matrix } = {}) {
    this._check(i);
    const factor = deformFactor ?? (this.autoReady ? 'auto' : this.bake.defaultDeformFactor);
    if (factor === 'auto') {
      if (!this.bake.auto) throw new AnimtexError("deform factor 'auto' needs a bake that carries Auto (a bone kind baked from meshes in factor mode Auto)");
      if (!this.autoReady) {
        throw new AnimtexError(`deform factor 'auto' needs every geometry's attribute '${this.bake.meta.mesh_attributes.auto_rest}' (the bake's .glb has it)`);
      }
    } else if (!(factor >= 0 && factor <= 1)) {
      throw new AnimtexError(`deform factor must be in 0..1, got ${factor} (or 'auto' where the bake carries Auto)`);
    }
    this.play.setXYZW(i, this.bake.clipIndex(clip), timeOffset, speed, factor === 'auto' ? -1 : factor);
    this.fade.setXYZW(i, -1, 0, 0, 0);
    this.fadeTime.setXY(i, 0, 0);
    this.play.needsUpdate = this.fade.needsUpdate = this.fadeTime.needsUpdate = true;
    if (matrix) this.placements[i].copy(matrix);
    this._placeInstance(i);
  }

  /** Fade instance `i` to `clip` over `duration` seconds from `start` (default: now). The new clip plays
   * from its start unless `timeOffset` says otherwise; `update` makes it the instance's clip when done. */
  crossFade(i, clip, { duration = 0.25, start = this.time, speed = 1, timeOffset } = {}) {
    this._check(i);
    const offset = timeOffset ?? -start * speed;
    this.fade.setXYZW(i, this.bake.clipIndex(clip), offset, speed, 0);
    this.fadeTime.setXY(i, start, Math.max(0, duration));
    this.fade.needsUpdate = this.fadeTime.needsUpdate = true;
  }

  /** Set the crowd's clock (seconds) and finish cross-fades that are complete. */
  update(time) {
    this.time = time;
    this.uniforms.animtexTime.value = time;
    for (let i = 0; i < this.count; i++) {
      const to = this.fade.getX(i);
      if (to >= 0 && time >= this.fadeTime.getX(i) + this.fadeTime.getY(i)) {
        this.play.setXYZ(i, to, this.fade.getY(i), this.fade.getZ(i));
        this.fade.setX(i, -1);
        this.play.needsUpdate = this.fade.needsUpdate = true;
      }
    }
  }

  _placeInstance(i) {
    for (const mesh of this.parts) {
      mesh.setMatrixAt(i, _matrix.multiplyMatrices(this.placements[i], mesh.userData.partMatrix));
      mesh.instanceMatrix.needsUpdate = true;
    }
  }

  _check(i) {
    if (!Number.isInteger(i) || i < 0 || i >= this.count) {
      throw new AnimtexError(`instance ${i} is out of range 0..${this.count - 1}`);
    }
  }

  dispose() {
    for (const mesh of this.parts) {
      mesh.geometry.dispose();
      mesh.customDepthMaterial.dispose();
      mesh.dispose();
    }
  }
}
