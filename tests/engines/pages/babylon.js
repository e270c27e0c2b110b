// The Babylon.js test page (pytest: tests/engines/test_babylon_runtime.py).
//
// A bone bake exported for Babylon.js (`bake-textures --babylon`: the skinned .glb and <name>.babylon.json)
// is loaded the way shaders/engines/babylon/README.md shows: Babylon's glTF loader, VertexAnimationBaker's
// loadBakedVertexDataFromJSON + textureFromBakedVertexData, one BakedVertexAnimationManager, thin
// instances each with its own bakedVertexAnimationSettingsInstanced (from, to, offset, frames per second).
// Every vertex of every instance is then drawn as a point by a ShaderMaterial built from Babylon's own
// shader includes (instancesVertex, bakedVertexAnimation: the player's code, unchanged) into a float
// target, its world position read back.
import { b64, run } from './common.js';

const B = globalThis.BABYLON;

B.Effect.ShadersStore.vatReadbackVertexShader = `
precision highp float;
attribute vec3 position;
#include<bonesDeclaration>
#include<bakedVertexAnimationDeclaration>
#include<instancesDeclaration>
uniform vec2 readbackSize;
uniform float readbackVertices;
varying vec4 vValue;
void main(void) {
#include<instancesVertex>
#include<bakedVertexAnimation>
  vValue = vec4((finalWorld * vec4(position, 1.0)).xyz, 1.0);
  int id = gl_InstanceID * int(readbackVertices) + gl_VertexID;
  int w = int(readbackSize.x);
  gl_Position = vec4((vec2(float(id % w), float(id / w)) + 0.5) / readbackSize * 2.0 - 1.0, 0.0, 1.0);
  gl_PointSize = 1.0;
}`;
B.Effect.ShadersStore.vatReadbackFragmentShader = `
precision highp float;
varying vec4 vValue;
void main(void) { gl_FragColor = vValue; }`;

async function readback(scene, mesh, count) {
  const vertices = mesh.getTotalVertices();
  const total = vertices * count;
  const width = Math.min(total, 2048), height = Math.ceil(total / width);
  const material = new B.ShaderMaterial('vatReadback', scene, 'vatReadback', {
    attributes: ['position'], uniforms: ['world', 'readbackSize', 'readbackVertices'],
  });
  material.pointsCloud = true;
  material.backFaceCulling = false;
  material.setVector2('readbackSize', new B.Vector2(width, height));
  material.setFloat('readbackVertices', vertices);
  const target = new B.RenderTargetTexture(`readback_${mesh.name}`, { width, height }, scene, {
    generateMipMaps: false, type: B.Constants.TEXTURETYPE_FLOAT, samplingMode: B.Constants.TEXTURE_NEAREST_SAMPLINGMODE,
    generateDepthBuffer: false,
  });
  target.renderList = [mesh];
  target.setMaterialForRendering(mesh, material);
  target.clearColor = new B.Color4(0, 0, 0, 0);
  for (let attempt = 0; attempt < 200; attempt++) {
    if (material.isReady(mesh, true)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  target.render();
  const pixels = new Float32Array(await target.readPixels());
  const values = pixels.subarray(0, total * 4);
  for (let i = 0; i < total; i++) {
    if (values[4 * i + 3] !== 1) throw new Error(`${mesh.name}: vertex ${i % vertices} of instance ${Math.floor(i / vertices)} was not drawn`);
  }
  target.dispose();
  material.dispose();
  return b64(new Float32Array(values));
}

async function play(job) {
  const engine = new B.Engine(document.getElementById('canvas'), false, { preserveDrawingBuffer: true });
  if (engine.webGLVersion < 2) throw new Error('WebGL2 is needed (texelFetch in the VAT player)');
  const scene = new B.Scene(engine);
  new B.FreeCamera('camera', new B.Vector3(0, 0, -10), scene);
  // --- as shaders/engines/babylon/README.md shows
  const folder = job.glb.slice(0, job.glb.lastIndexOf('/') + 1);
  const file = job.glb.slice(folder.length);
  const loaded = await B.SceneLoader.ImportMeshAsync('', folder, file, scene);
  const meshes = loaded.meshes.filter((m) => m.skeleton && m.getTotalVertices() > 0);
  const baker = new B.VertexAnimationBaker(scene, meshes[0]);
  const json = await (await fetch(job.vat)).text();
  const texture = baker.textureFromBakedVertexData(baker.loadBakedVertexDataFromJSON(json));
  const manager = new B.BakedVertexAnimationManager(scene);
  manager.texture = texture;
  manager.time = job.time;
  const count = job.instances.length;
  const settings = new Float32Array(4 * count);
  const matrices = new Float32Array(16 * count);
  job.instances.forEach((spec, i) => {
    settings.set([spec.from, spec.to, spec.offset, spec.fps], 4 * i);
    matrices.set(spec.matrix, 16 * i);
  });
  for (const mesh of meshes) {
    mesh.bakedVertexAnimationManager = manager;
    mesh.thinInstanceSetBuffer('matrix', matrices, 16);
    mesh.thinInstanceRegisterAttribute('bakedVertexAnimationSettingsInstanced', 4);
    mesh.thinInstanceSetBuffer('bakedVertexAnimationSettingsInstanced', settings, 4);
    mesh.alwaysSelectAsActiveMesh = true;
  }
  // ---
  const parts = [];
  for (const mesh of meshes) {
    mesh.computeWorldMatrix(true);
    parts.push({
      name: mesh.name,
      vertices: mesh.getTotalVertices(),
      rest: b64(new Float32Array(mesh.getVerticesData(B.VertexBuffer.PositionKind))),
      joints: b64(new Float32Array(mesh.getVerticesData(B.VertexBuffer.MatricesIndicesKind))),
      world: Array.from(mesh.getWorldMatrix().toArray()),
      positions: await readback(scene, mesh, count),
    });
  }
  const size = texture.getSize();
  return { parts, bones: meshes[0].skeleton.bones.length, texture: [size.width, size.height], version: B.Engine.Version };
}

run(play);
