// Runs vertex shaders as compute kernels in WebGL2 (pytest: tests/engines/test_ports.py): per job, one
// GLSL ES 3.00 vertex shader (a port cross-compiled by spirv-cross, or Godot's include with a prelude),
// float vertex inputs bound by name, one RGBA32F texture (nearest) bound to every sampler uniform named,
// and the named outputs captured with transform feedback - no rasterisation, every vertex's values.
import { b64, run } from './common.js';

function floats(text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new Float32Array(bytes.buffer);
}

function compile(gl, type, source) {
  const shader = gl.createShader(type);
  gl.shaderSource(shader, source);
  gl.compileShader(shader);
  if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) throw new Error(`compile: ${gl.getShaderInfoLog(shader)}`);
  return shader;
}

function kernel(gl, job) {
  const program = gl.createProgram();
  gl.attachShader(program, compile(gl, gl.VERTEX_SHADER, job.vertex));
  gl.attachShader(program, compile(gl, gl.FRAGMENT_SHADER, '#version 300 es\nprecision highp float;\nout vec4 c;\nvoid main() { c = vec4(0.0); }'));
  gl.transformFeedbackVaryings(program, job.outputs.map((o) => o.name), gl.SEPARATE_ATTRIBS);
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) throw new Error(`link: ${gl.getProgramInfoLog(program)}`);
  gl.useProgram(program);
  const vao = gl.createVertexArray();
  gl.bindVertexArray(vao);
  const bound = [];
  for (const [name, input] of Object.entries(job.inputs)) {
    const location = gl.getAttribLocation(program, name);
    if (location < 0) continue; // not used by this shader (optimised away)
    const buffer = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    gl.bufferData(gl.ARRAY_BUFFER, floats(input.data), gl.STATIC_DRAW);
    gl.enableVertexAttribArray(location);
    gl.vertexAttribPointer(location, input.size, gl.FLOAT, false, 0, 0);
    bound.push(name);
  }
  const texture = gl.createTexture();
  gl.activeTexture(gl.TEXTURE0);
  gl.bindTexture(gl.TEXTURE_2D, texture);
  gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
  gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA32F, job.texture.width, job.texture.height, 0, gl.RGBA, gl.FLOAT, floats(job.texture.data));
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
  for (const name of job.samplers) {
    const location = gl.getUniformLocation(program, name);
    if (location === null) throw new Error(`the shader has no sampler ${name}`);
    gl.uniform1i(location, 0);
  }
  const feedback = gl.createTransformFeedback();
  gl.bindTransformFeedback(gl.TRANSFORM_FEEDBACK, feedback);
  const buffers = job.outputs.map((o, k) => {
    const buffer = gl.createBuffer();
    gl.bindBuffer(gl.TRANSFORM_FEEDBACK_BUFFER, buffer);
    gl.bufferData(gl.TRANSFORM_FEEDBACK_BUFFER, job.count * o.size * 4, gl.STREAM_READ);
    gl.bindBufferBase(gl.TRANSFORM_FEEDBACK_BUFFER, k, buffer);
    return buffer;
  });
  gl.enable(gl.RASTERIZER_DISCARD);
  gl.beginTransformFeedback(gl.POINTS);
  gl.drawArrays(gl.POINTS, 0, job.count);
  gl.endTransformFeedback();
  gl.disable(gl.RASTERIZER_DISCARD);
  const outputs = {};
  job.outputs.forEach((o, k) => {
    gl.bindBufferBase(gl.TRANSFORM_FEEDBACK_BUFFER, k, null);
    const values = new Float32Array(job.count * o.size);
    gl.bindBuffer(gl.COPY_READ_BUFFER, buffers[k]);
    gl.getBufferSubData(gl.COPY_READ_BUFFER, 0, values);
    outputs[o.name] = b64(values);
  });
  const error = gl.getError();
  if (error !== gl.NO_ERROR) throw new Error(`WebGL error ${error}`);
  return { outputs, bound };
}

run(async (job) => {
  const gl = document.createElement('canvas').getContext('webgl2');
  if (!gl) throw new Error('no WebGL2');
  return { kernels: job.kernels.map((k) => kernel(gl, k)) };
});
