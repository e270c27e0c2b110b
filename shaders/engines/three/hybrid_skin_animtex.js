/**
 * Hybrid Skin animation textures for three.js: load a bake (image + JSON sidecar) and play it on
 * InstancedMeshes, each instance with its own clip, time offset, speed, deform factor (bone kinds:
 * LBS ... DQS at runtime, or 'auto': each vertex's Auto factor where the bake carries Auto) and
 * cross-fade to a second clip.
 *
 * The decoding GLSL is not a copy: the shipped shaders/animtex_vertex.glsl, dual_quaternion_lib.glsl,
 * hybrid_skin_round.glsl (Auto) and animtex_bone.glsl are fetched and compiled as they are (WebGL2 = GLSL
 * ES 3.00, which they are written to), with their metadata read from the texture's embedded block, exactly
 * as Blender's crowd preview does.
 *
 *   import { loadAnimtexBake, animtexParts, AnimtexCrowd } from './hybrid_skin_animtex.js';
 *   const bake = await loadAnimtexBake('textures/robot.json');       // the sidecar; the image is beside it
 *   const parts = animtexParts((await new GLTFLoader().loadAsync('robot.glb')).scene);
 *   const crowd = new AnimtexCrowd(bake, parts, 100, { yUp: true });
 *   crowd.setInstance(7, { clip: 'Walking', timeOffset: 0.3, matrix });
 *   crowd.crossFade(7, 'Running', { duration: 0.4 });                 // starts at crowd.time
 *   scene.add(crowd);  ...  crowd.update(clock.getElapsedTime());      // every frame
 *
 * This file is the runtime's one entry point; the code lives beside it: animtex_bake.js (loading),
 * animtex_material.js (the GLSL chunk and material patch), animtex_crowd.js (the crowd), animtex_motion.js
 * (per instance on the CPU: root motion, culling boxes).
 * Needs three (tested with the version pinned in tests/engines/package.json) and, for EXR bakes,
 * three/addons/loaders/EXRLoader.js; an import map or bundler resolves 'three' and 'three/addons/'.
 */
export { AnimtexBake, AnimtexError, decodePng, loadAnimtexBake } from './animtex_bake.js';
export { animtexVertexChunk, patchMaterial } from './animtex_material.js';
export { AnimtexCrowd, animtexParts } from './animtex_crowd.js';
export { RootMotionTrack, characterBounds, clipInterval, clipSample } from './animtex_motion.js';
