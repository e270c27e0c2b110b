/**
 * Loading a Hybrid Skin bake for three.js: the JSON sidecar, its image (PNG8/PNG16 decoded here, EXR by
 * three's EXRLoader) as a float DataTexture, and the decoder GLSL (shaders/animtex_*.glsl, fetched).
 * Part of the three.js runtime; import everything from hybrid_skin_animtex.js.
 */
import { DataTexture, FloatType, NearestFilter, RGBAFormat } from 'three';
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
let deviceMaxTextureSize = null;

/** MAX_TEXTURE_SIZE of this browser's WebGL2 (`renderer`'s, or a throwaway context's, asked once). */
function maxTextureSize(renderer) {
  if (renderer) return renderer.capabilities.maxTextureSize;
  if (deviceMaxTextureSize === null) {
    const gl = globalThis.document?.createElement('canvas').getContext('webgl2');
    deviceMaxTextureSize = gl ? gl.getParameter(gl.MAX_TEXTURE_SIZE) : Infinity;
    gl?.getExtension('WEBGL_lose_context')?.loseContext();
  }
  return deviceMaxTextureSize;
}

/** The sidecar's image: a plain file name beside the sidecar (no folder, no URL), as a bake writes it. */
function imageName(meta) {
  const name = meta.image;
  if (typeof name !== 'string' || !/^[^/\\:?#]+$/.test(name) || name === '.' || name === '..') {
    throw new AnimtexError(`the sidecar's image ${JSON.stringify(name)} is not a plain file name beside it: a bake writes its image beside the sidecar (or pass options.image)`);
  }
  return name;
}

/**
 * A loaded bake: the sidecar (`meta`), the float DataTexture (nearest, no mipmaps, rows bottom-up) and
 * the decoder GLSL. `options.shaderBase` is the folder holding animtex_vertex.glsl / dual_quaternion_lib.glsl /
 * hybrid_skin_round.glsl / animtex_bone.glsl (default: two folders above this module, i.e. the repository's shaders/);
 * `options.renderer`: the WebGLRenderer that will draw it (its maxTextureSize is checked; default: this
 * browser's WebGL2); `options.image`: the image's URL instead of the sidecar's file name beside it.
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
  const limit = maxTextureSize(options.renderer);
  if (Math.max(meta.layout.width, meta.layout.height) > limit) {
    throw new AnimtexError(`the texture is ${meta.layout.width}x${meta.layout.height}, larger than this device's maxTextureSize ${limit}: bake it with a Max Width of at most ${limit} and fewer frames (a larger frame step or fewer clips)`);
  }
  const imageUrl = new URL(options.image ?? imageName(meta), url);
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

