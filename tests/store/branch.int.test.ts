// The branch store against real git: a working repository whose `origin` is a local bare repository,
// two concurrent writers, a writer held at its push while another wins, binary files, and a token
// that must never show up in an error.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { buildStore } from '../../src/store/factory.js';
import { BranchStore, githubRepository } from '../../src/store/stores/branch.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { git, initBareRemote, initRepo } from '../forge/git-fixtures.js';
import { installGitHubPushRules } from '../helpers/github-contract-server.js';
import { tempDir } from '../helpers/paths.js';

const BRANCH = 'hillclimb-data';

let tmp: ReturnType<typeof tempDir>;
let work: string;
let bare: string;

beforeEach(() => {
  tmp = tempDir('hc-branch-store-');
  work = initRepo(join(tmp.dir, 'work'));
  bare = initBareRemote(join(tmp.dir, 'remote.git'), work);
  git(work, 'remote', 'add', 'origin', bare);
});
afterEach(() => tmp.cleanup());

function store(opts: Partial<ConstructorParameters<typeof BranchStore>[0]> = {}): BranchStore {
  return new BranchStore({ repoDir: work, logger: memoryLogger(), retryDelayMs: () => 1, ...opts });
}

function file(name: string, content: string | Buffer): string {
  const p = join(tmp.dir, name);
  writeFileSync(p, content);
  return p;
}

function dataLog(): string[] {
  return git(bare, 'log', '--format=%s', BRANCH).split('\n');
}

/** The checkout's state: HEAD, branches, status and index, to prove the store never touches them. */
function checkoutState(): string {
  return [
    git(work, 'rev-parse', 'HEAD'),
    git(work, 'for-each-ref', '--format=%(refname) %(objectname)'),
    git(work, 'status', '--porcelain', '--untracked-files=all'),
    git(work, 'ls-files', '--stage'),
  ].join('\n---\n');
}

describe('branch store', () => {
  it('stores, lists and reads back files on the data branch without touching the checkout', async () => {
    const before = checkoutState();
    const s = store();
    expect(await s.list('history/')).toEqual([]);
    const stored = await s.put('history/gdn.jsonl', file('h1', '{"iteration":1}\n'));
    expect(stored).toMatchObject({ key: 'history/gdn.jsonl', bytes: 16 });
    await s.put('history/gdn.jsonl', file('h2', '{"iteration":1}\n{"iteration":2}\n'));
    await s.put('runs/r1/i001/evidence.json', file('ev', '{}\n'));

    expect(await s.list('history/')).toEqual(['history/gdn.jsonl']);
    expect(await s.list('')).toEqual(['history/gdn.jsonl', 'runs/r1/i001/evidence.json']);
    const dest = join(tmp.dir, 'out', 'history.jsonl');
    await s.get('history/gdn.jsonl', dest);
    expect(readFileSync(dest, 'utf8')).toBe('{"iteration":1}\n{"iteration":2}\n');
    expect(dataLog()).toEqual([
      'hillclimb: store runs/r1/i001/evidence.json',
      'hillclimb: store history/gdn.jsonl',
      'hillclimb: store history/gdn.jsonl',
    ]);
    expect(checkoutState()).toBe(before);
    // main on the remote is untouched too.
    expect(git(bare, 'rev-parse', 'main')).toBe(git(work, 'rev-parse', 'main'));
  });

  it('writes a folder as one commit, keeps bytes exact and skips a commit that would change nothing', async () => {
    const s = store();
    // Binary content (a git bundle), byte for byte.
    const binary = gzipSync(Buffer.from('{"traceEvents":[]}'.repeat(200)));
    const plain = join(tmp.dir, 'plain');
    mkdirSync(join(plain, 'candidate'), { recursive: true });
    writeFileSync(join(plain, 'evidence.json'), '{"v":1}');
    writeFileSync(join(plain, 'candidate', 'candidate.bundle'), binary);
    const stored = await s.putDir('runs/r1/i002', plain);
    expect(stored.map((o) => o.key)).toEqual([
      'runs/r1/i002/candidate/candidate.bundle',
      'runs/r1/i002/evidence.json',
    ]);
    expect(dataLog()).toEqual(['hillclimb: store 2 files under runs/r1/i002']);
    const back = join(tmp.dir, 'back.bin');
    await s.get('runs/r1/i002/candidate/candidate.bundle', back);
    expect(readFileSync(back).equals(binary)).toBe(true);

    await s.putDir('runs/r1/i002', plain);
    expect(dataLog()).toHaveLength(1);
  });

  it('says which key is missing', async () => {
    const s = store();
    await expect(s.get('history/none.jsonl', join(tmp.dir, 'x'))).rejects.toThrow(
      /no object history\/none\.jsonl on the hillclimb-data branch/,
    );
    await s.put('a.txt', file('a', 'a'));
    const err = await s.get('b.txt', join(tmp.dir, 'x')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect(existsSync(join(tmp.dir, 'x'))).toBe(false);
  });

  it('keeps both writers’ files when two write concurrently', async () => {
    const jitter = () => 5 + Math.random() * 40;
    const a = store({ retryDelayMs: jitter });
    const b = store({ remote: bare, retryDelayMs: jitter });
    const writer = async (s: BranchStore, name: string) => {
      for (let i = 0; i < 4; i++) await s.put(`${name}/${i}.txt`, file(`${name}${i}`, `${name}${i}`));
    };
    await Promise.all([writer(a, 'a'), writer(b, 'b')]);
    expect(await a.list('')).toEqual([
      ...[0, 1, 2, 3].map((i) => `a/${i}.txt`),
      ...[0, 1, 2, 3].map((i) => `b/${i}.txt`),
    ]);
    expect(dataLog()).toHaveLength(8);
    // Linear history: no merges, every write a commit on top of the last.
    expect(git(bare, 'rev-list', '--min-parents=2', BRANCH)).toBe('');
  });

  it('re-applies its change on the new tip when another writer pushed between its fetch and its push', async () => {
    const gate = join(tmp.dir, 'gate');
    const wrapper = join(tmp.dir, 'git-held');
    // Holds the first push until the test opens the gate, so the other writer wins the race.
    writeFileSync(
      wrapper,
      `#!/bin/sh\nfor a; do if [ "$a" = push ] && [ ! -e '${gate}.used' ]; then touch '${gate}.used'; while [ ! -e '${gate}' ]; do sleep 0.02; done; fi; done\nexec git "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const logger = memoryLogger();
    const slow = store({ gitBinary: wrapper, logger });
    const fast = store();
    await fast.put('seed.txt', file('seed', 'seed'));

    const held = slow.put('history/gdn.jsonl', file('slow', 'slow row\n'));
    while (!existsSync(`${gate}.used`)) await new Promise((r) => setTimeout(r, 20));
    await fast.put('runs/r2/evidence.json', file('fast', '{}'));
    writeFileSync(gate, '');
    await held;

    expect(logger.lines.join('\n')).toContain('moved meanwhile; re-applying on the new tip');
    expect(await fast.list('')).toEqual(['history/gdn.jsonl', 'runs/r2/evidence.json', 'seed.txt']);
    expect(dataLog()).toEqual([
      'hillclimb: store history/gdn.jsonl',
      'hillclimb: store runs/r2/evidence.json',
      'hillclimb: store seed.txt',
    ]);
  });

  it('gives up after its push attempts when another writer keeps winning', async () => {
    // Before each push, "another writer" moves the data branch on the remote.
    const wrapper = join(tmp.dir, 'git-racer');
    const empty = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
    writeFileSync(
      wrapper,
      `#!/bin/sh
for a; do if [ "$a" = push ]; then
  export GIT_AUTHOR_NAME=o GIT_AUTHOR_EMAIL=o@o GIT_COMMITTER_NAME=o GIT_COMMITTER_EMAIL=o@o
  p=$(git --git-dir='${bare}' rev-parse -q --verify refs/heads/${BRANCH})
  c=$(git --git-dir='${bare}' commit-tree ${empty} -m other \${p:+-p $p})
  git --git-dir='${bare}' update-ref refs/heads/${BRANCH} "$c"
fi; done
exec git "$@"
`,
    );
    chmodSync(wrapper, 0o755);
    const logger = memoryLogger();
    const err = await store({ gitBinary: wrapper, pushAttempts: 3, logger })
      .put('a.txt', file('a', 'a'))
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('git push: the hillclimb-data branch kept moving (3 tries)');
    expect(logger.lines.filter((l) => l.includes('re-applying'))).toHaveLength(2);
    expect(dataLog()).toEqual(['other', 'other', 'other']);
  });

  it('reports a push the remote refuses instead of retrying it', async () => {
    // A pre-receive hook refuses every update (as branch protection would): not a race, so no retry.
    const hook = join(bare, 'hooks', 'pre-receive');
    const calls = join(tmp.dir, 'hook-calls');
    writeFileSync(hook, `#!/bin/sh\necho called >> '${calls}'\necho "protected branch" >&2\nexit 1\n`);
    chmodSync(hook, 0o755);
    const err = await store({ pushAttempts: 2 })
      .put('a.txt', file('a', 'a'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as Error).message).toMatch(/^git push: .*pre-receive hook declined.*protected branch/);
    expect(readFileSync(calls, 'utf8')).toBe('called\n');
  });

  it('keeps traces and large files off the data branch (GitHub refuses > 100 MiB: GH001), with a warning naming each', async () => {
    // GitHub's push rule, scaled: 2 MiB stands for 100 MiB; the store's own limit for its 10 MiB.
    installGitHubPushRules(bare, 2 * 1024 * 1024);
    const bundle = join(tmp.dir, 'bundle');
    const profile = join(bundle, 'profile', 'candidate-trace', 'plugins', 'profile', '2026_11_25');
    mkdirSync(profile, { recursive: true });
    mkdirSync(join(bundle, 'agent'));
    writeFileSync(join(bundle, 'evidence.json'), '{"verdict":"improved"}\n');
    writeFileSync(join(profile, 'host.xplane.pb'), Buffer.alloc(3 * 1024 * 1024, 7));
    writeFileSync(join(profile, 'host.trace.json.gz'), gzipSync(Buffer.alloc(1000, 1)));
    writeFileSync(join(bundle, 'agent', 'agent.log'), Buffer.alloc(1536 * 1024, 97));
    const logger = memoryLogger();
    const s = store({ logger, maxFileBytes: 1024 * 1024 });

    const stored = await s.putDir('runs/r1/i001', bundle);
    expect(stored.map((o) => o.key)).toEqual(['runs/r1/i001/evidence.json']);
    expect(await s.list('runs/')).toEqual(['runs/r1/i001/evidence.json']);
    const warning = logger.lines.find((l) =>
      l.includes('not putting 3 file(s) on the hillclimb-data branch'),
    );
    expect(warning).toContain('runs/r1/i001/agent/agent.log (1.5 MiB, over the 1.0 MiB limit)');
    expect(warning).toContain(
      'runs/r1/i001/profile/candidate-trace/plugins/profile/2026_11_25/host.xplane.pb (a profiler trace, 3.0 MiB)',
    );
    expect(warning).toContain('host.trace.json.gz (a profiler trace');
    expect(warning).toContain("the run's artifact keeps them (use store.kind: hf to store traces)");

    // One state file over the limit is an error, not a silent gap.
    await expect(s.put('history/big.jsonl', join(bundle, 'agent', 'agent.log'))).rejects.toThrow(
      /cannot store history\/big\.jsonl on the hillclimb-data branch: 1\.5 MiB is over the branch store's 1\.0 MiB per-file limit/,
    );
  });

  it('says GH001 plainly when GitHub refuses a file for its size', async () => {
    installGitHubPushRules(bare, 1024 * 1024);
    const err = await store({ maxFileBytes: 4 * 1024 * 1024 })
      .put('runs/r1/big.bin', file('big', Buffer.alloc(2 * 1024 * 1024, 1)))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as Error).message).toMatch(
      /^git push: .* \(hillclimb-data\) refused a file over GitHub's size limit \(GH001\): runs\/r1\/big\.bin is 2\.00 MB$/,
    );
    expect((err as HillclimbError).hint).toMatch(/GitHub refuses files over 100 MiB/);
  });

  it('keeps the token out of errors and never puts it on a command line', async () => {
    const token = 'ghs_branchstoretoken0001';
    const wrapper = join(tmp.dir, 'git-argv');
    const argvLog = join(tmp.dir, 'argv.log');
    writeFileSync(wrapper, `#!/bin/sh\necho "$@" >> '${argvLog}'\nexec git "$@"\n`);
    chmodSync(wrapper, 0o755);
    // Nothing listens on port 9 of loopback: the fetch fails fast.
    const s = store({ remote: 'https://127.0.0.1:9/octo/kernels.git', token, gitBinary: wrapper });
    const err = (await s.list('history/').catch((e: unknown) => e)) as HillclimbError;
    expect(err).toBeInstanceOf(HillclimbError);
    expect(err.message).toContain('git fetch');
    expect(`${err.message}\n${err.hint}`).not.toContain(token);
    expect(`${err.message}\n${err.hint}`).not.toContain(
      Buffer.from(`x-access-token:${token}`).toString('base64'),
    );
    expect(readFileSync(argvLog, 'utf8')).not.toContain(token);
  });

  it('links keys to GitHub blob pages when the remote is GitHub', () => {
    expect(store({ remote: 'https://github.com/octo/kernels.git' }).url('history/gdn.jsonl')).toBe(
      'https://github.com/octo/kernels/blob/hillclimb-data/history/gdn.jsonl',
    );
    expect(store({ webUrl: 'https://github.com/octo/kernels' }).url('runs/a b/x.json')).toBe(
      'https://github.com/octo/kernels/blob/hillclimb-data/runs/a%20b/x.json',
    );
    expect(store({ remote: bare }).url('k.txt')).toMatch(/^file:\/\/.*remote\.git#hillclimb-data:k\.txt$/);
    expect(githubRepository('git@github.com:octo/kernels.git')).toBe('octo/kernels');
    expect(githubRepository('https://gitlab.com/octo/kernels.git')).toBeUndefined();
  });

  it('is built by the factory from store.kind branch with every default filled in', async () => {
    const config = parseConfig(
      `version: 1
targets:
  k:
    editable: [k/**]
    protected: [h/**]
    correctness: {cpu: {command: ["true"]}}
    programs: {module: h.programs}
    bench: {metric: {path: m, direction: lower}}
store:
  kind: branch
`,
      join(work, 'hillclimb.yml'),
    );
    expect(config.store.branch).toEqual({
      name: 'hillclimb-data',
      remote: 'origin',
      token_env: 'GITHUB_TOKEN',
    });
    const built = buildStore(config, { root: work, logger: memoryLogger(), env: {} });
    expect(built.name).toBe('branch');
    await built.put('history/k.jsonl', file('k', 'row\n'));
    expect(dataLog()).toEqual(['hillclimb: store history/k.jsonl']);
  });
});
