// The download-artifact stand-in (see action.yml and ../README.md).
import { appendFileSync, cpSync, existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const input = (name) => (process.env[`INPUT_${name.toUpperCase()}`] ?? '').trim();
const name = input('name');
const path = resolve(process.env.GITHUB_WORKSPACE ?? '.', input('path') || '.');
const from = join(process.env.HILLCLIMB_ACT_ARTIFACTS ?? '', process.env.GITHUB_RUN_ID ?? '1', name);
if (!process.env.HILLCLIMB_ACT_ARTIFACTS || !existsSync(from)) {
  console.log(`::error::Unable to download artifact(s): Artifact not found for name: ${name}`);
  process.exit(1);
}
mkdirSync(path, { recursive: true });
cpSync(from, path, { recursive: true });
console.log(`Artifact ${name} was downloaded to ${path}`);
appendFileSync(process.env.GITHUB_OUTPUT, `download-path=${path}\n`);
