// `npm run release -- <version>`: the commit users pin. From a clean tree it bumps package.json and
// package-lock.json, adds a CHANGELOG.md entry (the commit subjects since the last release), rebuilds
// and checks the action bundles, commits `release: v<version>`, tags it `v<version>` (annotated) and
// prints the full SHA with the `uses:` recipe. Nothing is pushed: that stays the maintainer's step.
// Every git call takes an argument array; a refusal names what to do and changes nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const SEMVER = /^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$/;
const CHANGELOG_HEADER = `# Changelog

Each release is one commit, tagged \`v<version>\`. Pin its full SHA, never the tag (docs/setup.md):
\`uses: <owner>/hillclimb/actions/<name>@<sha> # v<version>\`.
`;

function fail(message, hint) {
  console.error(`release: ${message}${hint ? `\n  hint: ${hint}` : ''}`);
  process.exit(2);
}

function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trimEnd();
}

/** Negative when a < b, by major.minor.patch; a pre-release sorts before its release. */
function compareVersions(a, b) {
  const [pa, pb] = [SEMVER.exec(a), SEMVER.exec(b)];
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  if (pa[4] === pb[4]) return 0;
  if (pa[4] === undefined) return 1;
  if (pb[4] === undefined) return -1;
  return pa[4] < pb[4] ? -1 : 1;
}

/** A package file's version (and the lock's root package's) set, written back as npm writes it. */
function setVersion(file, version) {
  const path = join(root, file);
  const text = readFileSync(path, 'utf8');
  const json = JSON.parse(text);
  json.version = version;
  if (json.packages?.['']) json.packages[''].version = version;
  writeFileSync(path, `${JSON.stringify(json, null, 2)}\n`);
}

const version = process.argv[2];
if (!version || process.argv.length > 3) fail('usage: npm run release -- <version>   (e.g. 0.2.0)');
if (!SEMVER.test(version)) fail(`"${version}" is not a version x.y.z (or x.y.z-pre)`);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (compareVersions(version, pkg.version) <= 0) {
  fail(`${version} is not after the current version ${pkg.version}`, 'pick a higher version');
}
const tag = `v${version}`;
if (git('tag', '--list', tag) !== '') fail(`tag ${tag} already exists`, 'pick another version');
const dirty = git('status', '--porcelain', '--untracked-files=no');
if (dirty !== '') {
  fail(
    `the working tree has uncommitted changes:\n${dirty}`,
    'commit or stash them: a release is exactly one commit',
  );
}

// The subjects since the last release tag (all history before the first release).
let previous = '';
try {
  previous = git('describe', '--tags', '--abbrev=0', '--match', 'v[0-9]*', 'HEAD');
} catch {
  // no release yet
}
const range = previous ? [`${previous}..HEAD`] : ['HEAD'];
const subjects = git('log', '--no-merges', '--format=%s', ...range)
  .split('\n')
  .filter((s) => s !== '' && !s.startsWith('release: '));
const date = new Date().toISOString().slice(0, 10);
const entry = [
  `## ${tag} — ${date}`,
  '',
  previous ? `Since ${previous}:` : 'Everything up to this release:',
  '',
  ...(subjects.length > 0 ? subjects.map((s) => `- ${s}`) : ['- (no changes besides the version)']),
  '',
].join('\n');
const changelogPath = join(root, 'CHANGELOG.md');
const changelog = existsSync(changelogPath) ? readFileSync(changelogPath, 'utf8') : CHANGELOG_HEADER;
const cut = changelog.indexOf('\n## ');
writeFileSync(
  changelogPath,
  cut === -1
    ? `${changelog.trimEnd()}\n\n${entry}`
    : `${changelog.slice(0, cut + 1)}${entry}\n${changelog.slice(cut + 1)}`,
);

setVersion('package.json', version);
setVersion('package-lock.json', version);
// The bundles users run are the ones this commit holds: rebuilt from this tree, then checked.
execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--check'], {
  cwd: root,
  stdio: 'inherit',
});

git('add', '--', 'package.json', 'package-lock.json', 'CHANGELOG.md', 'actions');
git('commit', '-q', '-m', `release: ${tag}`);
git('tag', '-a', tag, '-m', `hillclimb ${tag}`);
const sha = git('rev-parse', 'HEAD');
console.log(`hillclimb ${tag}: commit ${sha} (tag ${tag}, not pushed)

Push it:     git push origin HEAD ${tag}
Pin it:      uses: <owner>/hillclimb/actions/<name>@${sha} # ${tag}
Or let init: hillclimb init --hillclimb-ref ${sha}`);
