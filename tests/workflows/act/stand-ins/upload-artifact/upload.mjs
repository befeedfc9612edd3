// The upload-artifact stand-in (see action.yml and ../README.md).
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const input = (name) => (process.env[`INPUT_${name.toUpperCase()}`] ?? '').trim();
const fail = (message) => {
  console.log(`::error::${message}`);
  process.exit(1);
};

const name = input('name') || 'artifact';
const path = input('path');
const hidden = input('include-hidden-files') === 'true';
const onEmpty = input('if-no-files-found') || 'warn';
const root = process.env.HILLCLIMB_ACT_ARTIFACTS;
if (!root) fail('HILLCLIMB_ACT_ARTIFACTS is not set: the act helper sets it');
const dest = join(root, process.env.GITHUB_RUN_ID ?? '1', name);

/** Regular files under `dir`, relative; dot-files and dot-folders only when hidden files are asked for. */
function files(dir, rel = '') {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    if (!hidden && e.name.startsWith('.')) return [];
    const r = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() ? files(dir, r) : e.isFile() ? [r] : [];
  });
}

// A wildcard in the last part of the path (`runs/r1/i003-c2*`): the real action's root is the folder
// before the wildcard, so the artifact holds each matching entry under its own name.
const wildcard = basename(path).includes('*');
if (wildcard && dirname(path).includes('*'))
  fail(`the stand-in takes a wildcard in the last part of a path only: ${path}`);
const searchRoot = wildcard ? dirname(path) : path;
const matcher = new RegExp(
  `^${basename(path)
    .replace(/[.+^${}()|[\]\\?]/g, '\\$&')
    .replaceAll('*', '.*')}$`,
);
const single = !wildcard && existsSync(path) && statSync(path).isFile();
const found = wildcard
  ? (existsSync(searchRoot) ? readdirSync(searchRoot) : [])
      .filter((n) => matcher.test(n) && (hidden || !n.startsWith('.')))
      .flatMap((n) => (statSync(join(searchRoot, n)).isDirectory() ? files(searchRoot, n) : [n]))
  : !existsSync(path)
    ? []
    : single
      ? [basename(path)]
      : files(path);
if (found.length === 0) {
  const message = `No files were found with the provided path: ${path}. No artifacts will be uploaded.`;
  if (onEmpty === 'error') fail(message);
  if (onEmpty === 'warn') console.log(`::warning::${message}`);
  process.exit(0);
}
if (existsSync(dest)) {
  if (input('overwrite') !== 'true') {
    fail(
      'Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: an artifact with this name already exists on the workflow run',
    );
  }
  rmSync(dest, { recursive: true, force: true });
}
mkdirSync(dest, { recursive: true });
for (const f of found) {
  const from = single ? path : join(searchRoot, f);
  mkdirSync(join(dest, f, '..'), { recursive: true });
  cpSync(from, join(dest, f));
}
console.log(`Artifact ${name} has been successfully uploaded! ${found.length} files`);
appendFileSync(process.env.GITHUB_OUTPUT, `artifact-id=${Date.now()}\n`);
