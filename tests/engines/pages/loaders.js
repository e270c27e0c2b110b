// The bake's glTF exports in the loaders engines use (pytest: tests/engines/test_gltf_validator.py).
//
// job.files: .glb URLs. Each is loaded by three.js's GLTFLoader (and its scene drawn once, so a loader or
// renderer warning about the data would show) and by Babylon.js's glTF loader (SceneLoader, one frame
// rendered). Every console warning and error while doing so is returned per file and loader, with what
// each loader made of the file (meshes, skinned meshes, bones), so the test knows they really loaded.
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { run } from './common.js';

const B = globalThis.BABYLON;

function taken() {
  return globalThis.consoleMessages.splice(0);
}

async function withThree(renderer, url) {
  const gltf = await new GLTFLoader().loadAsync(url);
  const scene = new THREE.Scene();
  scene.add(gltf.scene);
  scene.add(new THREE.DirectionalLight(0xffffff, 1));
  const camera = new THREE.PerspectiveCamera(50, 1, 0.01, 1000);
  camera.position.set(0, 1, 5);
  renderer.render(scene, camera);
  let meshes = 0, skinned = 0, bones = 0;
  gltf.scene.traverse((o) => {
    if (o.isMesh) meshes++;
    if (o.isSkinnedMesh) { skinned++; bones = o.skeleton.bones.length; }
  });
  return { meshes, skinned, bones };
}

async function withBabylon(engine, url) {
  const scene = new B.Scene(engine);
  new B.FreeCamera('camera', new B.Vector3(0, 1, -5), scene);
  new B.HemisphericLight('light', new B.Vector3(0, 1, 0), scene);
  const folder = url.slice(0, url.lastIndexOf('/') + 1);
  const loaded = await B.SceneLoader.ImportMeshAsync('', folder, url.slice(folder.length), scene);
  await scene.whenReadyAsync();
  scene.render();
  const meshes = loaded.meshes.filter((m) => m.getTotalVertices() > 0);
  const skeletons = loaded.skeletons;
  const result = {
    meshes: meshes.length,
    skinned: meshes.filter((m) => m.skeleton).length,
    bones: skeletons.length ? skeletons[0].bones.length : 0,
  };
  scene.dispose();
  return result;
}

async function check(job) {
  const renderer = new THREE.WebGLRenderer({ antialias: false });
  const engine = new B.Engine(document.getElementById('canvas'), false);
  taken(); // what the libraries said while starting is not about a file
  const files = [];
  for (const url of job.files) {
    const three = await withThree(renderer, url);
    const threeMessages = taken();
    const babylon = await withBabylon(engine, url);
    const babylonMessages = taken();
    files.push({ url, three: { ...three, messages: threeMessages }, babylon: { ...babylon, messages: babylonMessages } });
  }
  renderer.dispose();
  engine.dispose();
  return { files, three: THREE.REVISION, babylon: B.Engine.Version };
}

run(check);
