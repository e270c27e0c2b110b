// The Khronos glTF Validator (npm gltf-validator, pinned in package-lock.json) on files given as arguments.
// Prints one JSON object: {version, files: [{path, errors, warnings, infos, hints, messages: [...]}]}.
// Infos and hints are reported too; a caller decides what to allow (tests/engines/validator.py).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const validator = require('gltf-validator');

async function validate(file) {
  const bytes = new Uint8Array(await readFile(file));
  const report = await validator.validateBytes(bytes, {
    uri: path.basename(file),
    maxIssues: 0,  // all of them
    externalResourceFunction: (uri) => readFile(path.resolve(path.dirname(file), decodeURIComponent(uri))),
  });
  const issues = report.issues;
  return {
    path: file,
    errors: issues.numErrors,
    warnings: issues.numWarnings,
    infos: issues.numInfos,
    hints: issues.numHints,
    messages: issues.messages.map((m) => ({ code: m.code, severity: m.severity, pointer: m.pointer ?? null, message: m.message })),
  };
}

const files = [];
for (const file of process.argv.slice(2)) files.push(await validate(file));
process.stdout.write(JSON.stringify({ version: validator.version(), files }));
