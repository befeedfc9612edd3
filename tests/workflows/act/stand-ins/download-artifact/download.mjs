// The download-artifact stand-in (see action.yml and ../README.md).
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const input = (name) => (process.env[`INPUT_${name.toUpperCase()}`] ?? '').trim();
const name = input('name');
const pattern = input('pattern');
const path = resolve(process.env.GITHUB_WORKSPACE ?? '.', input('path') || '.');
const run = join(process.env.HILLCLIMB_ACT_ARTIFACTS ?? '', process.env.GITHUB_RUN_ID ?? '1');
if (!process.env.HILLCLIMB_ACT_ARTIFACTS) {
  console.log('::error::HILLCLIMB_ACT_ARTIFACTS is not set: the act helper sets it');
  process.exit(1);
}
if (name) {
  const from = join(run, name);
  if (!existsSync(from)) {
    console.log(`::error::Unable to download artifact(s): Artifact not found for name: ${name}`);
    process.exit(1);
  }
  mkdirSync(path, { recursive: true });
  cpSync(from, path, { recursive: true });
  console.log(`Artifact ${name} was downloaded to ${path}`);
} else {
  // The real action lists the run's artifacts and keeps those the pattern matches (minimatch; names
  // have no slashes, so * within a name is all this needs). None matching downloads nothing.
  const escaped = (pattern || '*').replace(/[.+^${}()|[\]\\?]/g, '\\$&').replaceAll('*', '[^/]*');
  const matcher = new RegExp(`^${escaped}$`);
  const names = existsSync(run) ? readdirSync(run).filter((n) => matcher.test(n)) : [];
  const merge = input('merge-multiple') === 'true' || names.length === 1;
  for (const n of names) {
    const to = merge ? path : join(path, n);
    mkdirSync(to, { recursive: true });
    cpSync(join(run, n), to, { recursive: true });
  }
  console.log(`${names.length} artifact(s) matching ${pattern || '*'} were downloaded to ${path}`);
}
appendFileSync(process.env.GITHUB_OUTPUT, `download-path=${path}\n`);
