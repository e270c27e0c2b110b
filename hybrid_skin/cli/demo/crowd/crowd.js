// The demo's crowd (python -m hybrid_skin demo): the bake in crowd.json played on instanced meshes by
// shaders/engines/three/hybrid_skin_animtex.js, each instance with its own clip, time offset, speed and
// deform factor (LBS, hybrid, DQS). With ?screenshot it draws one frame at a fixed time and posts the
// picture to the server that opened it (the demo's headless Chromium run).
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { AnimtexCrowd, animtexParts, loadAnimtexBake } from './hybrid_skin_animtex.js';

const shot = new URLSearchParams(location.search).has('screenshot');
if (shot) {  // the demo's run waits for a picture or for the reason there is none
  window.addEventListener('error', (e) => fetch('/error', { method: 'POST', body: String(e.message) }));
  window.addEventListener('unhandledrejection', (e) => fetch('/error', { method: 'POST', body: String(e.reason) }));
}
const settings = await (await fetch('./crowd.json')).json();
const renderer = new THREE.WebGLRenderer({ antialias: !shot, preserveDrawingBuffer: shot });
renderer.setPixelRatio(shot ? 1 : window.devicePixelRatio);
renderer.setSize(shot ? settings.width : window.innerWidth, shot ? settings.height : window.innerHeight);
document.body.appendChild(renderer.domElement);
document.getElementById('info').textContent =
  `${settings.title}: ${settings.rows * settings.columns} instances of ${settings.sidecar}, ` +
  'played by Hybrid Skin\'s three.js runtime (LBS, hybrid and DQS per instance)';

// As shaders/engines/three/README.md shows: the bake, the meshes' .glb, a crowd.
const bake = await loadAnimtexBake(settings.sidecar, { shaderBase: new URL('./shaders/', location.href).href, renderer });
const gltf = await new GLTFLoader().loadAsync(settings.gltf);
const parts = animtexParts(gltf.scene);
if (settings.clay) {  // a light clay instead of the file's materials (dark ones hide the shapes)
  for (const part of parts) part.material = new THREE.MeshStandardMaterial({ color: settings.clay, roughness: 0.55 });
}
const crowd = new AnimtexCrowd(bake, parts, settings.rows * settings.columns, { yUp: true });

const clips = bake.meta.clips.map((c) => c.name);
const spacing = settings.spacing;
for (let row = 0, i = 0; row < settings.rows; row++) {
  for (let col = 0; col < settings.columns; col++, i++) {
    const x = (col - (settings.columns - 1) / 2) * spacing;
    const matrix = new THREE.Matrix4().makeRotationY(0.6 * Math.sin(7.1 * i)).setPosition(x, 0, -1.2 * row * spacing);
    crowd.setInstance(i, {
      clip: clips[i % clips.length], timeOffset: 0.37 * i, speed: 0.85 + 0.075 * ((i * 7) % 5),
      deformFactor: [0.0, 0.5, 1.0][i % 3], matrix,
    });
  }
}

const scene = new THREE.Scene();
scene.background = new THREE.Color(0xb9c9d9);
scene.add(crowd);
scene.add(new THREE.HemisphereLight(0xdde8ff, 0x403830, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 2.2);
sun.position.set(3, 6, 4);
scene.add(sun);
const ground = new THREE.Mesh(
  new THREE.PlaneGeometry(400, 400), new THREE.MeshStandardMaterial({ color: 0x7c8a78, roughness: 0.9 }));
ground.rotation.x = -Math.PI / 2;
scene.add(ground);
const aspect = renderer.domElement.width / renderer.domElement.height;
const camera = new THREE.PerspectiveCamera(40, aspect, 0.01 * spacing, 200 * spacing);
camera.position.set(...settings.camera);
camera.lookAt(new THREE.Vector3(...settings.target));

if (shot) {
  crowd.update(settings.time, camera); // instances out of view are not drawn (the bake's culling boxes)
  renderer.render(scene, camera);
  const png = renderer.domElement.toDataURL('image/png').split(',')[1];
  await fetch('/screenshot', { method: 'POST', body: png });
} else {
  const clock = new THREE.Clock();
  window.addEventListener('resize', () => {
    renderer.setSize(window.innerWidth, window.innerHeight);
    camera.aspect = window.innerWidth / window.innerHeight;
    camera.updateProjectionMatrix();
  });
  renderer.setAnimationLoop(() => {
    crowd.update(clock.getElapsedTime(), camera);
    renderer.render(scene, camera);
  });
}
