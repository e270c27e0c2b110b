/**
 * A crowd of one baked character on InstancedMeshes, and the mesh parts of a loaded glTF.
 * Part of the three.js runtime; import everything from hybrid_skin_animtex.js.
 */
import {
  Box3, BufferAttribute, BufferGeometry, Frustum, InstancedBufferAttribute, InstancedMesh, Group, Matrix4, MeshDepthMaterial,
  PropertyBinding, RGBADepthPacking,
} from 'three';
import { AnimtexError } from './animtex_bake.js';
import { patchMaterial } from './animtex_material.js';
import {
  RootMotionTrack, blendMatrices, characterBounds, clipInterval, clipSample, geometryRootMotion,
} from './animtex_motion.js';

const _matrix = new Matrix4(), _root = new Matrix4(), _rootB = new Matrix4(), _box = new Box3(), _fadeBox = new Box3();
const _frustum = new Frustum(), _viewProjection = new Matrix4();

/**
 * Where a loaded mesh sits in its file at rest: its world matrix or, for a skinned mesh, where its skin
 * places it (mesh.matrixWorld · bindMatrixInverse · joint 0's world · its inverse bind matrix ·
 * bindMatrix: a bone bake's .glb keeps the placement on the skeleton's root, as glTF and its validator
 * ask; .glb files of older bakes kept it on the mesh, and the same product gives it).
 */
function restPlacement(object) {
  if (!object.isSkinnedMesh) return object.matrixWorld.clone();
  const { bones, boneInverses } = object.skeleton;
  return new Matrix4().multiplyMatrices(object.matrixWorld, object.bindMatrixInverse)
    .multiply(bones[0].matrixWorld).multiply(boneInverses[0]).multiply(object.bindMatrix);
}

/** three's GLTFLoader name of glTF TEXCOORD_k. */
function uvName(k) {
  return k === 0 ? 'uv' : k <= 3 ? `uv${k}` : `texcoord_${k}`;
}

/**
 * The bone data of an instancing mesh (the sidecar's `instancing`: a static .glb whose UV channels after the
 * mesh's own carry the palette indices, weights and Auto rest data, two values a channel as u and v, not
 * flipped) as vec4 attributes { bone_indices, bone_weights, auto_rest }, or null when the geometry is not one.
 */
function instancingAttributes(meta, geometry, partName) {
  const layout = meta.instancing;
  if (!layout) return null;
  const names = Object.keys(layout.first_uv_channel);
  const mesh = names.find((n) => PropertyBinding.sanitizeNodeName(n) === partName) ?? (names.length === 1 ? names[0] : null);
  if (mesh === null) return null;
  const first = layout.first_uv_channel[mesh];
  const count = geometry.getAttribute('position').count;
  const out = {};
  for (const [k, { mesh_attribute: key, components: [a, b] }] of layout.channels.entries()) {
    const uv = geometry.getAttribute(uvName(first + k));
    if (!uv) throw new AnimtexError(`the instancing mesh's geometry has no UV channel ${first + k} ('${uvName(first + k)}')`);
    out[key] ??= new Float32Array(count * 4);
    for (let i = 0; i < count; i++) {
      out[key][4 * i + a] = uv.getX(i);
      out[key][4 * i + b] = uv.getY(i); // data, not texture coordinates: v as it is
    }
  }
  return Object.fromEntries(Object.entries(out).map(([key, array]) => [key, new BufferAttribute(array, 4)]));
}

/**
 * The mesh parts of a loaded glTF scene (e.g. GLTFLoader's `gltf.scene`) for AnimtexCrowd:
 * [{ name, geometry, material, matrix }], `matrix` where the file places the part (see restPlacement).
 */
export function animtexParts(root) {
  root.updateMatrixWorld(true);
  const parts = [];
  root.traverse((o) => {
    if (o.isMesh) parts.push({ name: o.name, geometry: o.geometry, material: o.material, matrix: restPlacement(o) });
  });
  return parts;
}

/**
 * A crowd of one baked character: one InstancedMesh per mesh part, sharing the per-instance playback
 * attributes. `parts`: [{ name, geometry, material, matrix }] (animtexParts(gltf.scene) gives them) -
 * geometry with the rest `position`, `normal` and the sidecar's mesh attributes; `matrix` the part's
 * placement in the character (default identity); `name` its mesh's name (matches the sidecar's
 * pose_bounds for culling). Bone kinds whose bake carries Auto also need the sidecar's `auto_rest`
 * attribute for instances to play 'auto' (the default then).
 * Options: `itemFromUv` - the name of the geometry's UV attribute holding the sidecar's texel UV (e.g. 'uv'
 * or 'uv1' from glTF) to use instead of the texel index attribute; `yUp` (see animtexVertexChunk: true for
 * glTF exported with Blender's default +Y Up); `castShadow`; `rootMotion` - move each instance by its
 * clip's baked root motion (default false: in place); `culling` - with a camera passed to update(), draw
 * only the instances whose baked box (their clip's interval, placed) meets its frustum: true, false, or
 * 'auto' (default: where the bake has boxes for every part).
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
    // Each instance's playback (instance i), and what the GPU draws (slot j: the i-th visible instance).
    this.state = { play: new Float32Array(count * 4), fade: new Float32Array(count * 4), fadeTime: new Float32Array(count * 2) };
    this.play = new InstancedBufferAttribute(new Float32Array(count * 4), 4);
    this.fade = new InstancedBufferAttribute(new Float32Array(count * 4), 4);
    this.fadeTime = new InstancedBufferAttribute(new Float32Array(count * 2), 2);
    this.placements = Array.from({ length: count }, () => new Matrix4());
    /** Root motion: where each instance's current clip (and a fade's clip) started; set by setInstance. */
    this.fadeStarts = Array.from({ length: count }, () => new Matrix4());
    /** How many instances the last update drew (all of them without culling), and which: drawn[slot]. */
    this.visible = count;
    this.drawn = new Int32Array(count);
    /** Whether every part has its vertices' Auto rest data: instances of a bake with Auto may play 'auto'. */
    this.autoReady = bake.auto;
    this.yUp = !!options.yUp;
    this.rootMotion = !!options.rootMotion;
    this.tracks = bake.meta.clips.map((clip) => (clip.root_motion ? new RootMotionTrack(clip) : null));
    this.parts = parts.map((part) => this._part(part, options));
    this._setupCulling(parts, options.culling ?? 'auto');
    // the first baked mesh's part: its matrix carries the root motion into the character's space
    const first = bake.meta.pose_bounds?.meshes?.[0];
    const anchor = parts.find((p) => p.name && first && p.name === PropertyBinding.sanitizeNodeName(first)) ?? parts[0];
    this.anchor = (anchor.matrix ?? new Matrix4()).clone();
    this.anchorInverse = this.anchor.clone().invert();
    this._dirty = true;
    for (let i = 0; i < count; i++) this.setInstance(i, {});
    this._write(null);
  }

  _setupCulling(parts, culling) {
    const sanitize = PropertyBinding.sanitizeNodeName;
    const placed = parts.map((p) => ({ name: p.name, matrix: p.matrix ?? new Matrix4() }));
    this.bounds = characterBounds(this.bake.meta, placed, { yUp: this.yUp, sanitize });
    if (culling === true && !this.bounds) {
      throw new AnimtexError(this.bake.meta.pose_bounds
        ? "culling needs each part's mesh name as the sidecar's pose_bounds.meshes names it (animtexParts gives them)"
        : 'culling needs a bake with culling boxes (pose_bounds): bake it again');
    }
    /** Whether update(time, camera) culls instances by the baked boxes. */
    this.culling = culling !== false && !!this.bounds;
  }

  _part({ name, geometry, material, matrix }, options) {
    const g = new BufferGeometry(); // the caller's attributes, shared, under the names the GLSL reads
    g.setIndex(geometry.index);
    for (const [name, attribute] of Object.entries(geometry.attributes)) g.setAttribute(name, attribute);
    if (this.bake.bones) {
      const fromUv = !this.bake.hasAttribute(g, 'bone_indices') && instancingAttributes(this.bake.meta, g, name);
      const get = (key) => (fromUv ? fromUv[key] : g.getAttribute(this.bake.attributeName(g, key)));
      g.setAttribute('animtexBoneIndices', get('bone_indices'));
      g.setAttribute('animtexBoneWeights', get('bone_weights'));
      if (this.bake.auto && (fromUv ? fromUv.auto_rest : this.bake.hasAttribute(g, 'auto_rest'))) {
        g.setAttribute('animtexAutoRest', get('auto_rest'));
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
    mesh.frustumCulled = false; // the rest pose's bounds do not hold the animation: culled per instance instead
    mesh.castShadow = !!options.castShadow;
    mesh.customDepthMaterial = patchMaterial(new MeshDepthMaterial({ depthPacking: RGBADepthPacking }), this.bake, this.uniforms, chunk);
    mesh.userData.partMatrix = (matrix ?? new Matrix4()).clone();
    this.add(mesh);
    return mesh;
  }

  /** Playback of instance `i`: clip (name or number), timeOffset (s), speed, deformFactor (bone kinds: a
   * number in 0..1, or 'auto' where the bake carries Auto; default 'auto' there, else the bake's factor),
   * matrix (placement of the whole character; with root motion: where the clip's time 0 stands). Clears a
   * cross-fade. */
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
    const { play, fade, fadeTime } = this.state;
    play.set([this.bake.clipIndex(clip), timeOffset, speed, factor === 'auto' ? -1 : factor], 4 * i);
    fade.set([-1, 0, 0, 0], 4 * i);
    fadeTime.set([0, 0], 2 * i);
    if (matrix) this.placements[i].copy(matrix);
    this._dirty = true;
  }

  /** Fade instance `i` to `clip` over `duration` seconds from `start` (default: now). The new clip plays
   * from its start unless `timeOffset` says otherwise; `update` makes it the instance's clip when done.
   * With root motion the new clip's motion starts where the old clip's stands at `start`. */
  crossFade(i, clip, { duration = 0.25, start = this.time, speed = 1, timeOffset } = {}) {
    this._check(i);
    const offset = timeOffset ?? -start * speed;
    const index = this.bake.clipIndex(clip);
    this.state.fade.set([index, offset, speed, 0], 4 * i);
    this.state.fadeTime.set([start, Math.max(0, duration)], 2 * i);
    // where the faded-to clip's time 0 stands: the old clip's root at `start`, less the new clip's motion by then
    const p = this.state.play;
    this.rootAt(p[4 * i], start * p[4 * i + 2] + p[4 * i + 1], _root);
    this.rootAt(index, start * speed + offset, _rootB);
    this.fadeStarts[i].copy(this.placements[i]).multiply(_root).multiply(_rootB.invert());
    this._dirty = true;
  }

  /** `target` = the root motion of `clip` at `seconds` of its own time, in the character's space (the
   * identity without root motion, or for a clip that has none). */
  rootAt(clip, seconds, target) {
    const track = this.rootMotion ? this.tracks[clip] : null;
    if (!track) return target.identity();
    geometryRootMotion(track.at(clipSample(this.bake.meta.clips[clip], seconds), target), this.yUp);
    return target.premultiply(this.anchor).multiply(this.anchorInverse);
  }

  /** Set the crowd's clock (seconds) and finish cross-fades that are complete; with `camera` (and culling
   * on), draw only the instances whose baked box meets its view. */
  update(time, camera = null) {
    this.time = time;
    this.uniforms.animtexTime.value = time;
    const { play, fade, fadeTime } = this.state;
    for (let i = 0; i < this.count; i++) {
      if (fade[4 * i] >= 0 && time >= fadeTime[2 * i] + fadeTime[2 * i + 1]) {
        play.set(fade.subarray(4 * i, 4 * i + 3), 4 * i);
        fade[4 * i] = -1;
        this.placements[i].copy(this.fadeStarts[i]);
        this._dirty = true;
      }
    }
    this._write(this.culling ? camera : null);
  }

  /** The matrix instance `i` is drawn with now (its placement and root motion; before a part's matrix). */
  instanceMatrix(i, target = new Matrix4()) {
    const p = this.state.play, f = this.state.fade, t = this.time;
    target.copy(this.placements[i]).multiply(this.rootAt(p[4 * i], t * p[4 * i + 2] + p[4 * i + 1], _root));
    if (this.rootMotion && f[4 * i] >= 0) { // fading: the two clips' placements blended by the fade's weight
      const [start, duration] = [this.state.fadeTime[2 * i], this.state.fadeTime[2 * i + 1]];
      const w = duration > 0 ? Math.min(Math.max((t - start) / duration, 0), 1) : (t >= start ? 1 : 0);
      _rootB.copy(this.fadeStarts[i]).multiply(this.rootAt(f[4 * i], t * f[4 * i + 2] + f[4 * i + 1], _root));
      blendMatrices(target, _rootB, w);
    }
    return target;
  }

  /** `target` = instance `i`'s culling box now, in the crowd's space: its clip's box for the interval
   * playing (a fade: both clips', for bone kinds grown by half the boxes' diagonal, the most a dual
   * quaternion blend turns outside them), placed by its instance matrix (`matrix`, default computed). */
  instanceBox(i, target = new Box3(), matrix = null) {
    if (!this.bounds) throw new AnimtexError('this crowd has no culling boxes (a bake without pose_bounds, or parts its names do not match)');
    const p = this.state.play, f = this.state.fade, t = this.time;
    const clips = this.bake.meta.clips;
    const boxOf = (clip, seconds) => this.bounds[clip].frames[clipInterval(clips[clip], clipSample(clips[clip], seconds))];
    target.copy(boxOf(p[4 * i], t * p[4 * i + 2] + p[4 * i + 1]));
    if (f[4 * i] >= 0) {
      target.union(_fadeBox.copy(boxOf(f[4 * i], t * f[4 * i + 2] + f[4 * i + 1])));
      if (this.bake.bones) target.expandByScalar(0.5 * target.max.distanceTo(target.min));
    }
    return target.applyMatrix4(matrix ?? this.instanceMatrix(i, _rootB));
  }

  /** The visible instances (all without `camera`) into the first slots of the GPU's buffers. */
  _write(camera) {
    if (!camera && !this.rootMotion && !this._dirty) return;
    if (camera) {
      this.updateMatrixWorld();
      camera.updateMatrixWorld();
      _viewProjection.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse).multiply(this.matrixWorld);
      _frustum.setFromProjectionMatrix(_viewProjection);
    }
    const { play, fade, fadeTime } = this.state;
    let slot = 0;
    for (let i = 0; i < this.count; i++) {
      this.instanceMatrix(i, _matrix);
      if (camera && !_frustum.intersectsBox(this.instanceBox(i, _box, _matrix))) continue;
      this.drawn[slot] = i;
      this.play.array.set(play.subarray(4 * i, 4 * i + 4), 4 * slot);
      this.fade.array.set(fade.subarray(4 * i, 4 * i + 4), 4 * slot);
      this.fadeTime.array.set(fadeTime.subarray(2 * i, 2 * i + 2), 2 * slot);
      for (const mesh of this.parts) mesh.setMatrixAt(slot, _rootB.multiplyMatrices(_matrix, mesh.userData.partMatrix));
      slot++;
    }
    for (const mesh of this.parts) {
      mesh.count = slot;
      mesh.instanceMatrix.needsUpdate = true;
    }
    this.play.needsUpdate = this.fade.needsUpdate = this.fadeTime.needsUpdate = true;
    this.visible = slot;
    this._dirty = !!camera; // a culled layout is not every instance in its own slot: written again next time
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
