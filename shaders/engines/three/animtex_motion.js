/**
 * What a crowd computes per instance on the CPU: where a clip's playback is (the sample and interval, as the
 * GLSL finds them), the baked root motion at that time (shaders/FORMAT.md section 6, "Root motion
 * playback"), and the culling box of that interval (the sidecar's pose_bounds, section 10).
 * Part of the three.js runtime; import everything from hybrid_skin_animtex.js.
 */
import { Box3, Matrix4, Quaternion, Vector3 } from 'three';

/** Blender's (Z up) axes to glTF's (Y up): (x, y, z) -> (x, z, -y), as Blender's glTF exporter turns vertices. */
export const Y_UP = new Matrix4().set(1, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1);
const Y_UP_INVERSE = Y_UP.clone().invert();

/** Clip sample at `seconds` of its own time (seconds * sample_rate), as animtex_sample_at_time. */
export function clipSample(clip, seconds) {
  return seconds * clip.sample_rate;
}

/** The stored frame whose interval (frame f to f + 1) plays at `sample`: loops wrap, other clips clamp. */
export function clipInterval(clip, sample) {
  const n = clip.frame_count;
  const s = clip.loop ? sample - n * Math.floor(sample / n) : Math.min(Math.max(sample, 0), n - 1);
  return Math.min(Math.floor(s), n - 1);
}

const _power = new Matrix4(), _base = new Matrix4();

/** `matrix`^`n` (n >= 1) by squaring: a walker hours into its loop costs a few products, not one per cycle. */
function power(matrix, n) {
  _power.identity();
  _base.copy(matrix);
  for (let k = n; k > 0; k = Math.floor(k / 2)) {
    if (k % 2) _power.multiply(_base);
    _base.multiply(_base);
  }
  return _power;
}

const _t0 = new Vector3(), _t1 = new Vector3(), _s0 = new Vector3(), _s1 = new Vector3();
const _q0 = new Quaternion();

/**
 * A clip's baked root motion (its sidecar `root_motion`): `at(sample, target)` sets `target` to M at that
 * sample, in the baked mesh's space: M_t = T(translation) R(rotation) S(scale) lerped (rotation: nlerp)
 * between the stored samples around it; a loop adds one `cycle` per wrap (cycle^n, n = floor(sample /
 * frame_count), negative before the clip's start), a clip that does not loop holds its ends.
 */
export class RootMotionTrack {
  constructor(clip) {
    const rm = clip.root_motion;
    this.count = clip.frame_count;
    this.loop = clip.loop;
    const quaternion = ([w, x, y, z]) => new Quaternion(x, y, z, w);
    this.translation = rm.translation.map((t) => new Vector3(...t));
    this.rotation = rm.rotation.map(quaternion);
    this.scale = rm.scale.map((s) => new Vector3(...s));
    if (this.loop) {
      if (!rm.cycle) throw new Error(`looping clip ${clip.name} has root motion without its cycle`);
      this.translation.push(new Vector3(...rm.cycle.translation));
      this.rotation.push(quaternion(rm.cycle.rotation));
      this.scale.push(new Vector3(...rm.cycle.scale));
      this.cycle = new Matrix4().compose(this.translation[this.count], this.rotation[this.count], this.scale[this.count]);
      this.cycleInverse = this.cycle.clone().invert();
    }
  }

  at(sample, target) {
    const n = this.count;
    let cycles = 0, s;
    if (this.loop) {
      cycles = Math.floor(sample / n);
      s = sample - cycles * n;
    } else {
      s = Math.min(Math.max(sample, 0), n - 1);
    }
    const f0 = Math.min(Math.floor(s), n - 1);
    const f1 = this.loop ? f0 + 1 : Math.min(f0 + 1, n - 1); // a loop's last interval ends at the cycle entry
    const alpha = s - f0;
    _t0.copy(this.translation[f0]).lerp(_t1.copy(this.translation[f1]), alpha);
    _s0.copy(this.scale[f0]).lerp(_s1.copy(this.scale[f1]), alpha);
    const q = this.rotation[f0], r = this.rotation[f1]; // stored on one hemisphere: a plain nlerp
    _q0.set(q.x + alpha * (r.x - q.x), q.y + alpha * (r.y - q.y), q.z + alpha * (r.z - q.z), q.w + alpha * (r.w - q.w)).normalize();
    target.compose(_t0, _q0, _s0);
    if (cycles !== 0) target.premultiply(power(cycles > 0 ? this.cycle : this.cycleInverse, Math.abs(cycles)));
    return target;
  }
}

/**
 * The crowd's culling boxes, in the character's space (the parts' matrices applied, glTF's Y up where the
 * geometry has it): per clip, one box per interval (the union over the parts of each part's box) and one
 * for the whole clip. `parts`: the crowd's parts ({ name, matrix }); `meshes`: the sidecar's
 * pose_bounds.meshes; each part is matched to its mesh by name (as three's GLTFLoader sanitises it). A
 * bone bake's meshes share one space, so a part no name matches takes the union of them all; a VERTEX
 * part no name matches has no box (null is returned: no culling).
 */
export function characterBounds(meta, parts, { yUp = false, sanitize = (name) => name } = {}) {
  const meshes = meta.pose_bounds?.meshes;
  if (!meshes || !meta.clips.every((c) => c.pose_bounds)) return null;
  const names = meshes.map(sanitize);
  const bones = meta.kind !== 'VERTEX';
  const which = parts.map((part) => {
    const found = names.indexOf(part.name ?? '');
    if (found >= 0) return [found];
    if (meshes.length === 1 || bones) return meshes.map((_, m) => m);
    return null;
  });
  if (which.some((w) => w === null)) return null;
  const box = new Box3(), corner = new Box3();
  const matrices = parts.map((part) => new Matrix4().multiplyMatrices(part.matrix, yUp ? Y_UP : new Matrix4()));
  const toCharacter = (lo, hi) => {
    const out = new Box3();
    parts.forEach((part, k) => {
      for (const m of which[k]) {
        corner.min.fromArray(lo[m]);
        corner.max.fromArray(hi[m]);
        out.union(box.copy(corner).applyMatrix4(matrices[k]));
      }
    });
    return out;
  };
  return meta.clips.map((clip) => {
    const b = clip.pose_bounds;
    return { clip: toCharacter(b.min, b.max), frames: b.frames.min.map((lo, f) => toCharacter(lo, b.frames.max[f])) };
  });
}

const _ta = new Vector3(), _tb = new Vector3(), _sa = new Vector3(), _sb = new Vector3();
const _qa = new Quaternion(), _qb = new Quaternion();

/** `a` = the blend of placements `a` and `b` by weight `w`: translation and scale lerped, rotation slerped. */
export function blendMatrices(a, b, w) {
  a.decompose(_ta, _qa, _sa);
  b.decompose(_tb, _qb, _sb);
  return a.compose(_ta.lerp(_tb, w), _qa.slerp(_qb, w), _sa.lerp(_sb, w));
}

/** glTF geometry's root motion: `Y_UP · M · Y_UP⁻¹` (Blender's axes in the track) or M itself. */
export function geometryRootMotion(matrix, yUp) {
  return yUp ? matrix.premultiply(Y_UP).multiply(Y_UP_INVERSE) : matrix;
}
