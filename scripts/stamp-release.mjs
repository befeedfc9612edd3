// `prepack`: a package packed from a release commit records which commit it is, so `hillclimb init`
// from an npm or tarball install (no git there) can pin the workflows without flags. The stamp,
// dist/release.json, is written only when HEAD is the tag v<package version> and the actions and
// workflows are exactly that commit's; otherwise any old stamp is removed, and init asks for
// --hillclimb-ref. Outside a git checkout it does nothing.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const stampPath = join(root, 'dist', 'release.json');

function git(...args) {
  return execFileSync('git', args, {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

let head;
try {
  head = git('rev-parse', '--verify', 'HEAD');
} catch {
  process.exit(0); // not a git checkout: keep what the package already holds
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const tag = `v${pkg.version}`;
let tagged = '';
try {
  tagged = git('rev-parse', '--verify', '--quiet', `${tag}^{commit}`);
} catch {
  // no such tag
}
const changed = git('status', '--porcelain', '--untracked-files=no', '--', 'actions', '.github/workflows');

if (tagged !== head || changed !== '') {
  rmSync(stampPath, { force: true });
  console.error(
    `release stamp: none (HEAD is not ${tag}${changed ? ', or actions/workflows have uncommitted changes' : ''}); ` +
      'hillclimb init from this package will need --hillclimb-repo and --hillclimb-ref',
  );
  process.exit(0);
}

const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
let origin = '';
try {
  origin = git('remote', 'get-url', 'origin');
} catch {
  // no origin
}
const match = /github\.com[:/]([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url || origin);
const repository = match ? `${match[1]}/${match[2]}` : null;
mkdirSync(join(root, 'dist'), { recursive: true });
writeFileSync(stampPath, `${JSON.stringify({ version: pkg.version, commit: head, repository }, null, 2)}\n`);
console.error(`release stamp: ${tag} = ${head}${repository ? ` (${repository})` : ''}`);
