// Shared by the test pages: read the job pytest wrote, post one JSON result (or the error) back.

export async function job() {
  const url = new URLSearchParams(location.search).get('job');
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load the job ${url} (HTTP ${response.status})`);
  return response.json();
}

export async function post(result) {
  await fetch('/result', { method: 'POST', body: JSON.stringify(result) });
}

/** Run `work` and post what it returns, or the error with its stack. */
export async function run(work) {
  let result;
  try {
    result = await work(await job());
  } catch (error) {
    result = { error: `${error.name}: ${error.message}\n${error.stack ?? ''}` };
  }
  await post(result);
}

/** float32 array -> base64 of its little-endian bytes (browser.floats decodes it). */
export function b64(array) {
  const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
