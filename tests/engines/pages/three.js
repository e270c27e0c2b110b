// The three.js runtime test page (pytest: tests/engines/test_three_runtime.py).
//
// job.mode "readback": for each character (bake + glTF), an AnimtexCrowd with the job's instances; every
//   part's decoded positions and normals for every instance are written by the runtime's own GLSL
//   (animtexVertexChunk, the shader the crowd's materials run) as one point per vertex and instance
//   into an RGBA32F target and read back.
// job.mode "colours": a bone-kind .glb loaded with the README's own code (GLTFLoader, each mesh's geometry
//   and material as the file gives them), drawn as a crowd under an ambient and a directional light to an
//   RGBA8 target; then each part alone (its coverage), then all again with every material's vertexColors
//   forced off (what the picture must equal when no vertex colour reaches the crowd).
// job.mode "culling": a crowd culled by a camera (AnimtexCrowd's culling by the baked boxes): the instances
//   drawn, every instance's box, matrices and decoded vertices (tests/engines/test_three_culling.py).
// job.mode "screenshot": the crowd drawn with MeshStandardMaterial (the patched material users get) to a
//   PNG, then only the hero instance again with a transparent background: its coverage mask, and the
//   camera's view-projection matrix, so pytest can project Blender's truth and compare silhouettes.
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { AnimtexCrowd, animtexParts, animtexVertexChunk, loadAnimtexBake } from '/repo/shaders/engines/three/hybrid_skin_animtex.js';
import { b64, run } from './common.js';

async function character(spec) {
  const bake = await loadAnimtexBake(spec.sidecar);
  const gltf = await new GLTFLoader().loadAsync(spec.gltf);
  return { bake, parts: animtexParts(gltf.scene) };
}

function play(crowd, instances) {
  instances.forEach((spec, i) => {
    const matrix = spec.matrix ? new THREE.Matrix4().fromArray(spec.matrix) : undefined;
    crowd.setInstance(i, { clip: spec.clip, timeOffset: spec.timeOffset, speed: spec.speed, deformFactor: spec.deformFactor, matrix });
    if (spec.fade) crowd.crossFade(i, spec.fade.clip, spec.fade);
  });
}

function readbackMaterial(crowd, vertices, width, height, output, tangents = false) {
  return new THREE.ShaderMaterial({
    uniforms: {
      ...crowd.uniforms,
      readbackSize: { value: new THREE.Vector2(width, height) },
      readbackOutput: { value: output },
      readbackVertices: { value: vertices },
    },
    vertexShader: `${animtexVertexChunk(crowd.bake, crowd.chunkOptions)}
uniform vec2 readbackSize;
uniform int readbackOutput;
uniform int readbackVertices;
flat out vec4 readbackValue;
${tangents ? 'attribute vec4 animtexRestTangent;' : ''}
void main() {
  vec3 p, n;
  vec4 t = vec4(0.0, 0.0, 0.0, 1.0);
  ${tangents ? 'animtex_decode_tangent(position, normal, animtexRestTangent, p, n, t);' : 'animtex_decode(position, normal, p, n);'}
  readbackValue = readbackOutput == 2 ? vec4(t.xyz, t.w) : vec4(readbackOutput == 1 ? n : p, 1.0);
  int id = gl_InstanceID * readbackVertices + gl_VertexID;
  int w = int(readbackSize.x);
  gl_Position = vec4((vec2(float(id % w), float(id / w)) + 0.5) / readbackSize * 2.0 - 1.0, 0.0, 1.0);
  gl_PointSize = 1.0;
}`,
    fragmentShader: 'flat in vec4 readbackValue;\nvoid main() { gl_FragColor = readbackValue; }',
  });
}

/** Every vertex of `mesh` (a crowd part) for every instance: (instances x vertices x 4) floats per output. */
function readbackPart(renderer, crowd, mesh) {
  const vertices = mesh.geometry.getAttribute('position').count;
  const total = vertices * crowd.count;
  const width = Math.min(total, 4096), height = Math.ceil(total / width);
  const geometry = new THREE.InstancedBufferGeometry(); // no index: every vertex once, gl_VertexID = its number
  for (const [name, attribute] of Object.entries(mesh.geometry.attributes)) geometry.setAttribute(name, attribute);
  geometry.instanceCount = crowd.count;
  const tangents = !!mesh.geometry.getAttribute('tangent');
  if (tangents) geometry.setAttribute('animtexRestTangent', mesh.geometry.getAttribute('tangent'));
  const target = new THREE.WebGLRenderTarget(width, height, {
    type: THREE.FloatType, format: THREE.RGBAFormat, minFilter: THREE.NearestFilter, magFilter: THREE.NearestFilter, depthBuffer: false,
  });
  const camera = new THREE.Camera();
  const out = {};
  const outputs = [[0, 'positions'], [1, 'normals'], ...(tangents ? [[2, 'tangents']] : [])];
  for (const [output, key] of outputs) {
    const points = new THREE.Points(geometry, readbackMaterial(crowd, vertices, width, height, output, tangents));
    points.frustumCulled = false;
    const scene = new THREE.Scene();
    scene.add(points);
    renderer.setRenderTarget(target);
    renderer.setClearColor(0x000000, 0);
    renderer.clear();
    renderer.render(scene, camera);
    const pixels = new Float32Array(width * height * 4);
    renderer.readRenderTargetPixels(target, 0, 0, width, height, pixels);
    renderer.setRenderTarget(null);
    const values = pixels.subarray(0, total * 4);
    for (let i = 0; i < total; i++) {
      const drawn = output === 2 ? Math.abs(values[4 * i + 3]) === 1 : values[4 * i + 3] === 1; // a tangent's w: its sign
      if (!drawn) throw new Error(`vertex ${i % vertices} of instance ${Math.floor(i / vertices)} was not drawn`);
    }
    out[key] = b64(values);
    points.material.dispose();
  }
  target.dispose();
  const attr = (name) => mesh.geometry.getAttribute(name);
  const attributes = {};
  for (const [name, a] of Object.entries(mesh.geometry.attributes)) {
    if (name.startsWith('_animtex_') || name === 'normal' || name === 'tangent') attributes[name] = b64(new Float32Array(a.array));
  }
  return {
    attributes,
    name: mesh.name,
    vertices,
    blender_vertex: b64(new Float32Array((attr('_animtex_vertex') ?? attr('_hs_vertex')).array)),
    rest: b64(new Float32Array(attr('position').array)),
    ...out,
  };
}

/** Each instance's matrix now and each part's matrix (row-major 4x4 as three's toArray: column-major). */
function placements(crowd) {
  return {
    instance_matrices: Array.from({ length: crowd.count }, (_, i) => crowd.instanceMatrix(i).toArray()),
    part_matrices: crowd.parts.map((mesh) => mesh.userData.partMatrix.toArray()),
  };
}

async function readback(job) {
  const renderer = new THREE.WebGLRenderer({ antialias: false });
  const results = [];
  for (const spec of job.characters) {
    const { bake, parts } = await character(spec);
    const crowd = new AnimtexCrowd(bake, parts, spec.instances.length,
      { itemFromUv: spec.itemFromUv ?? null, yUp: !!spec.yUp, rootMotion: !!spec.rootMotion });
    play(crowd, spec.instances);
    crowd.update(spec.time);
    crowd.parts.forEach((mesh, k) => { mesh.name = parts[k].name; });
    results.push({ id: spec.id, parts: crowd.parts.map((mesh) => readbackPart(renderer, crowd, mesh)), ...placements(crowd) });
    crowd.dispose();
    bake.texture.dispose();
  }
  renderer.dispose();
  return { characters: results, renderer: renderer.getContext().getParameter(renderer.getContext().VERSION) };
}

async function screenshot(job) {
  const { width, height } = job;
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  document.body.appendChild(canvas);
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: false, alpha: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  renderer.setSize(width, height, false);
  const { bake, parts } = await character(job); // the glTF's own (textured) materials, patched by the runtime
  const crowd = new AnimtexCrowd(bake, parts, job.instances.length);
  play(crowd, job.instances);
  crowd.update(job.time);
  const scene = new THREE.Scene();
  scene.add(crowd);
  scene.add(new THREE.HemisphereLight(0xdde8ff, 0x403830, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 2.2);
  sun.position.set(...job.sun);
  scene.add(sun);
  const ground = new THREE.Mesh(new THREE.PlaneGeometry(400, 400), new THREE.MeshStandardMaterial({ color: 0x7c8a78, roughness: 0.9 }));
  ground.rotation.x = -Math.PI / 2;
  scene.add(ground);
  const camera = new THREE.PerspectiveCamera(job.camera.fov, width / height, job.camera.near, job.camera.far);
  camera.position.set(...job.camera.position);
  camera.lookAt(new THREE.Vector3(...job.camera.target));
  camera.updateMatrixWorld(true);
  scene.background = new THREE.Color(0xb9c9d9);
  renderer.render(scene, camera);
  const png = canvas.toDataURL('image/png').split(',')[1];

  // Hero alone, transparent background, no ground: its coverage is the alpha channel.
  const hidden = new THREE.Matrix4().makeScale(0, 0, 0);
  job.instances.forEach((spec, i) => {
    if (i !== job.hero) crowd.setInstance(i, { ...spec, matrix: hidden });
  });
  crowd.update(job.time);
  scene.remove(ground);
  scene.background = null;
  renderer.setClearColor(0x000000, 0);
  const target = new THREE.WebGLRenderTarget(width, height, { depthBuffer: true });
  renderer.setRenderTarget(target);
  renderer.clear();
  renderer.render(scene, camera);
  const pixels = new Uint8Array(width * height * 4);
  renderer.readRenderTargetPixels(target, 0, 0, width, height, pixels);
  renderer.setRenderTarget(null);
  const mask = new Float32Array(width * height);
  for (let i = 0; i < mask.length; i++) mask[i] = pixels[4 * i + 3] > 0 ? 1 : 0;
  const viewProjection = new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
  return { png, mask: b64(mask), view_projection: viewProjection.toArray() };
}

/** A crowd culled by a camera: which instances update(time, camera) drew, each instance's culling box, and
 * (from the same crowd updated without a camera: every instance drawn) every vertex of every instance. */
async function culling(job) {
  const renderer = new THREE.WebGLRenderer({ antialias: false });
  const { bake, parts } = await character(job);
  const crowd = new AnimtexCrowd(bake, parts, job.instances.length, { yUp: true, culling: true, rootMotion: !!job.rootMotion });
  crowd.parts.forEach((mesh, k) => { mesh.name = parts[k].name; });
  play(crowd, job.instances);
  const camera = new THREE.PerspectiveCamera(job.fov, job.aspect, job.near, job.far);
  camera.position.set(...job.camera);
  camera.lookAt(...job.target);
  crowd.update(job.time, camera);
  const drawn = Array.from(crowd.drawn.subarray(0, crowd.visible));
  const counts = crowd.parts.map((mesh) => mesh.count);
  const boxes = Array.from({ length: crowd.count }, (_, i) => {
    const box = crowd.instanceBox(i);
    return [...box.min.toArray(), ...box.max.toArray()];
  });
  crowd.update(job.time); // no camera: every instance, in its own slot
  camera.updateMatrixWorld();
  const viewProjection = new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
  return {
    drawn, counts, boxes, view_projection: viewProjection.toArray(), ...placements(crowd),
    parts: crowd.parts.map((mesh) => readbackPart(renderer, crowd, mesh)),
  };
}

/** Each bad input gives one AnimtexError sentence: the messages, in the job's order. */
async function errors(job) {
  const messages = [];
  const attempt = async (work) => {
    try {
      await work();
      messages.push(null);
    } catch (error) {
      messages.push(`${error.name}: ${error.message}`);
    }
  };
  for (const sidecar of job.sidecars) await attempt(() => loadAnimtexBake(sidecar));
  const { bake, parts } = await character(job);
  const crowd = new AnimtexCrowd(bake, parts, 2);
  await attempt(() => crowd.setInstance(0, { clip: 'Nope' }));
  await attempt(() => crowd.setInstance(1, { deformFactor: 2 }));
  await attempt(() => crowd.setInstance(1, { deformFactor: 'auto' }));
  await attempt(() => crowd.crossFade(5, 0));
  const bare = parts.map((p) => ({ ...p, geometry: new THREE.BoxGeometry() }));
  await attempt(() => new AnimtexCrowd(bake, bare, 1));
  return { messages };
}

async function colours(job) {
  const { width, height } = job;
  const renderer = new THREE.WebGLRenderer({ antialias: false });
  // --- shaders/engines/three/README.md, word for word
  const bake = await loadAnimtexBake(job.sidecar, { renderer });           // the image is beside the JSON
  const gltf = await new GLTFLoader().loadAsync(job.gltf);                 // the baked meshes
  const parts = animtexParts(gltf.scene);                                  // each where the file places it
  const crowd = new AnimtexCrowd(bake, parts, job.instances.length, { yUp: true });
  // ---
  play(crowd, job.instances);
  crowd.update(job.time);
  const scene = new THREE.Scene();
  scene.add(crowd);
  scene.add(new THREE.AmbientLight(0xffffff, 1.5));
  const sun = new THREE.DirectionalLight(0xffffff, 2.0);
  sun.position.set(...job.sun);
  scene.add(sun);
  const camera = new THREE.PerspectiveCamera(job.camera.fov, width / height, 0.05, 100);
  camera.position.set(...job.camera.position);
  camera.lookAt(new THREE.Vector3(...job.camera.target));
  const target = new THREE.WebGLRenderTarget(width, height, { depthBuffer: true });
  const draw = () => {
    renderer.setRenderTarget(target);
    renderer.setClearColor(0x000000, 0);
    renderer.clear();
    renderer.render(scene, camera);
    const pixels = new Uint8Array(width * height * 4);
    renderer.readRenderTargetPixels(target, 0, 0, width, height, pixels);
    renderer.setRenderTarget(null);
    return pixels;
  };
  const asLoaded = draw();
  const masks = crowd.parts.map((mesh) => {
    crowd.parts.forEach((other) => { other.visible = other === mesh; });
    const alpha = draw().filter((_, i) => i % 4 === 3);
    return b64(Float32Array.from(alpha, (a) => (a > 0 ? 1 : 0)));
  });
  crowd.parts.forEach((mesh) => { mesh.visible = true; });
  const materials = crowd.parts.map((mesh) => ({ vertexColors: mesh.material.vertexColors, type: mesh.material.type,
    color: mesh.material.color ? mesh.material.color.toArray() : null }));
  for (const mesh of crowd.parts) { mesh.material.vertexColors = false; mesh.material.needsUpdate = true; }
  const withoutVertexColours = draw();
  return {
    parts: parts.map((p, k) => ({ attributes: Object.keys(p.geometry.attributes).sort(), ...materials[k], mask: masks[k] })),
    as_loaded: b64(new Float32Array(asLoaded)),
    without_vertex_colours: b64(new Float32Array(withoutVertexColours)),
  };
}

const MODES = { readback, screenshot, errors, colours, culling };
run((job) => MODES[job.mode](job));
