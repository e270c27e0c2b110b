/**
 * A crowd of one baked character on InstancedMeshes, and the mesh parts of a loaded glTF.
 * Part of the three.js runtime; import everything from hybrid_skin_animtex.js.
 */
import {
  BufferGeometry, InstancedBufferAttribute, InstancedMesh, Group, Matrix4, MeshDepthMaterial, RGBADepthPacking,
} from 'three';
import { AnimtexError } from './animtex_bake.js';
import { patchMaterial } from './animtex_material.js';

// ------------------------------------------------------------------------------------------ crowd
const _matrix = new Matrix4();

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
