/**
 * Attacks on the hand-over between jobs, run through the committed action bundles as the workflows run
 * them: every job a fresh clone, the bundle passed as a copied folder ("artifact"), attestations as job
 * outputs, the GitHub contract server as the API, a bare repository as the remote. An honest iteration
 * (toy target, a real improvement) is measured once; each attack then tampers with what an untrusted
 * job could have handed on, and the next job must refuse it or shrug it off. Each test fails if the
 * attack gets through: an attacker commit or object on the remote, a secret in anything published, a
 * forged verdict or number believed, a champion moved.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActionName, type ActionRun, runActionBundle } from '../actions/harness.js';
import { GitHubContractServer } from '../helpers/github-contract-server.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';

const TOKEN = 'ghs_securityhandovertoken01';
const RUN_ID = 'gh2001-1';
const BUNDLE = join('.hillclimb', 'runs', RUN_ID, 'i001');
/** What a leaked environment would show: the writer's token. */
const SECRET = TOKEN;

describe('the hand-over between jobs, attacked', () => {
  const t = tempDir('hc-sec-handover-');
  const seedRemote = join(t.dir, 'seed.git');
  const artifacts = join(t.dir, 'artifacts');
  let server: GitHubContractServer;
  let python: string;
  let base = '';
  let remotes = 0;
  let jobs = 0;
  const honest: Record<string, ActionRun> = {};

  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', args, {
      cwd,
      encoding: 'utf8',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'mallory',
        GIT_AUTHOR_EMAIL: 'm@x',
        GIT_COMMITTER_NAME: 'mallory',
        GIT_COMMITTER_EMAIL: 'm@x',
      },
    }).trim();

  /** A remote of its own for one attack (a copy of the seed), registered with the contract server. */
  function freshRemote(): { repo: string; bare: string } {
    const name = `toy${++remotes}`;
    const bare = join(t.dir, `${name}.git`);
    execFileSync('git', ['clone', '-q', '--bare', seedRemote, bare]);
    server.addRepo(`octo/${name}`, bare);
    return { repo: `octo/${name}`, bare };
  }

  /** A fresh clone of `remote` with the named artifact (a bundle folder) downloaded into it. */
  function job(remote: string, artifact?: string): string {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', remote, dir]);
    if (artifact) cpSync(artifact, join(dir, BUNDLE), { recursive: true });
    return dir;
  }

  async function step(
    action: ActionName,
    cwd: string,
    inputs: Record<string, string>,
    env: Record<string, string> = {},
  ) {
    return runActionBundle(action, {
      cwd,
      inputs: { 'run-id': RUN_ID, iteration: '1', ...inputs },
      env: { HILLCLIMB_PYTHON: python, ...env },
    });
  }

  const ok = (run: ActionRun, what: string) => {
    if (run.code !== 0) throw new Error(`${what} failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
    return run;
  };

  /**
   * The publish job on its own remote, with a (tampered) bundle and whatever attestation it was given;
   * `inJob` tampers with the bundle where the job will read it (links do not survive a copy).
   */
  async function publish(
    bundleDir: string,
    inputs: Record<string, string>,
    inJob?: (bundle: string) => void,
  ) {
    const remote = freshRemote();
    const dir = job(remote.bare, bundleDir);
    inJob?.(join(dir, BUNDLE));
    const run = await step(
      'report',
      dir,
      {
        'config-overrides': JSON.stringify({
          'forge.github.repository': remote.repo,
          'forge.github.git_url': remote.bare,
        }),
        ...inputs,
      },
      { GITHUB_TOKEN: TOKEN },
    );
    return { run, remote, dir };
  }

  /** A copy of an artifact to tamper with. */
  function copyOf(artifact: string): string {
    const dir = join(t.dir, `tampered${++jobs}`);
    cpSync(join(artifacts, artifact), dir, { recursive: true });
    return dir;
  }

  const onRemote = (bare: string, sha: string) => {
    try {
      execFileSync('git', ['--git-dir', bare, 'cat-file', '-e', `${sha}^{commit}`], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  const branchesOf = (bare: string) =>
    execFileSync('git', ['--git-dir', bare, 'for-each-ref', '--format=%(refname)', 'refs/heads/'], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
  /** Every blob on every branch of the remote, for a leaked secret. */
  const remoteText = (bare: string) =>
    execFileSync(
      'sh',
      [
        '-c',
        `git --git-dir "$0" grep -a -I -e . $(git --git-dir "$0" for-each-ref --format='%(refname)') -- 2>/dev/null || true`,
        bare,
      ],
      {
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      },
    );
  /** Output without the runner's mask commands (the token is registered as a secret at birth). */
  const unmasked = (text: string) => text.replace(/^::add-mask::.*$/gm, '');
  const evidenceOf = (run: ActionRun) => JSON.parse(readFileSync(run.outputs['evidence-file']!, 'utf8'));

  /** A commit on top of `parent` made by the attacker in a scratch clone, with `edit` applied. */
  function attackerCommit(
    parent: string,
    edit: (dir: string) => void,
    message: string,
  ): { dir: string; sha: string } {
    const dir = job(seedRemote);
    // The honest candidate's objects come from the measured bundle.
    git(
      dir,
      'fetch',
      '-q',
      join(artifacts, 'measured', 'candidate', 'candidate.bundle'),
      `refs/hillclimb/candidates/${RUN_ID}/i001:refs/c`,
    );
    git(dir, 'checkout', '-q', '--detach', parent);
    edit(dir);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', message);
    return { dir, sha: git(dir, 'rev-parse', 'HEAD') };
  }

  beforeAll(async () => {
    python = systemPython();
    server = await GitHubContractServer.start();
    server.addToken(TOKEN, {
      login: 'hillclimb-app[bot]',
      kind: 'installation',
      permissions: { contents: 'write', pull_requests: 'write', issues: 'write' },
    });
    const seed = join(t.dir, 'seed');
    makeToyRepo(
      seed,
      STANDARD_PATCHES.slice(0, 1),
      `${TOY_CONFIG}forge:\n  kind: github\n  base: main\n  github:\n    repository: octo/toy0\n    api_url: ${server.url}\n    git_url: ${seedRemote}\nstore:\n  kind: branch\n`,
    );
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', seedRemote]);
    execFileSync('git', ['push', '-q', seedRemote, 'main:refs/heads/main'], { cwd: seed });
    base = git(seed, 'rev-parse', 'HEAD');
    mkdirSync(artifacts);

    // The honest iteration, job by job, as hillclimb.yml runs it.
    let dir = job(seedRemote);
    honest.propose = ok(await step('iterate', dir, { forge: 'local', store: 'local', base }), 'propose');
    cpSync(join(dir, BUNDLE), join(artifacts, 'proposed'), { recursive: true });
    dir = job(seedRemote, join(artifacts, 'proposed'));
    honest.cpu = ok(
      await step('kernel-test', dir, { gate: 'cpu', forge: 'local', store: 'local', base }),
      'cpu',
    );
    cpSync(join(dir, BUNDLE), join(artifacts, 'gated'), { recursive: true });
    dir = job(seedRemote, join(artifacts, 'gated'));
    const cpuAttestation = honest.cpu.outputs.attestation!;
    ok(
      await step('kernel-test', dir, {
        gate: 'accelerator',
        forge: 'local',
        store: 'local',
        base,
        attestation: cpuAttestation,
      }),
      'accelerator',
    );
    honest.measure = ok(await step('profile', dir, { forge: 'local', store: 'local', base }), 'measure');
    cpSync(join(dir, BUNDLE), join(artifacts, 'measured'), { recursive: true });
  }, 400_000);

  afterAll(async () => {
    await server?.close();
    t.cleanup();
  });

  it('the honest iteration is measured as improved and attested by the jobs that ran no untrusted code', () => {
    expect(honest.measure!.outputs.verdict).toBe('improved');
    expect(JSON.parse(honest.cpu!.outputs.attestation!)).toMatchObject({ verified: true, champion: base });
    expect(JSON.parse(honest.measure!.outputs.attestation!)).toMatchObject({
      verified: true,
      verdict: 'improved',
    });
  });

  it('an honest publish pushes the candidate plus the log commit, and moves the champion', async () => {
    const { run, remote } = await publish(join(artifacts, 'measured'), {
      base,
      attestation: honest.measure!.outputs.attestation!,
    });
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.verdict).toBe('improved');
    expect(branchesOf(remote.bare)).toContain(`refs/heads/hillclimb/toy/${RUN_ID}/i001`);
  });

  it('attack 1: a forged logCommit and an extra commit in the bundle are never pushed', async () => {
    const candidate = JSON.parse(honest.measure!.outputs.attestation!).candidate as string;
    // Mallory's commit edits the protected harness and the published action, on top of the candidate.
    const evil = attackerCommit(
      candidate,
      (dir) => {
        writeFileSync(join(dir, 'harness', 'check.py'), 'raise SystemExit(0)\n');
        mkdirSync(join(dir, 'actions', 'report', 'dist'), { recursive: true });
        writeFileSync(join(dir, 'actions', 'report', 'dist', 'index.js'), 'process.exit(0)\n');
      },
      'hillclimb: log entry (forged)',
    );
    const tampered = copyOf('measured');
    // A bundle whose header names only the candidate, but whose pack also carries Mallory's commit.
    const ref = `refs/hillclimb/candidates/${RUN_ID}/i001`;
    git(evil.dir, 'update-ref', ref, candidate);
    git(evil.dir, 'update-ref', 'refs/evil', evil.sha);
    const file = join(tampered, 'candidate', 'candidate.bundle');
    git(evil.dir, 'bundle', 'create', '-q', file, ref, 'refs/evil', `^${base}`);
    const raw = readFileSync(file);
    const headerEnd = raw.indexOf('\n\n') + 2;
    const header = raw
      .subarray(0, headerEnd)
      .toString('latin1')
      .replace(/^[0-9a-f]{40} refs\/evil\n/m, '');
    writeFileSync(file, Buffer.concat([Buffer.from(header, 'latin1'), raw.subarray(headerEnd)]));
    const ev = JSON.parse(readFileSync(join(tampered, 'evidence.json'), 'utf8'));
    ev.candidate.logCommit = evil.sha;
    writeFileSync(join(tampered, 'evidence.json'), JSON.stringify(ev));

    const { run, remote } = await publish(tampered, {
      base,
      attestation: honest.measure!.outputs.attestation!,
    });
    expect(onRemote(remote.bare, evil.sha)).toBe(false);
    expect(remoteText(remote.bare)).not.toContain('process.exit(0)');
    // The bundle no longer matches what the measuring job attested: nothing in it is believed.
    expect(run.outputs.verdict).toBe('error');
    expect(evidenceOf(run).verdictReasons[0]).toMatch(/no attested result reached the publishing job/);
  });

  it('attack 2: a forged verdict and measurement in an unattested bundle never make a champion', async () => {
    const tampered = copyOf('gated');
    const measured = JSON.parse(readFileSync(join(artifacts, 'measured', 'evidence.json'), 'utf8'));
    const ev = JSON.parse(readFileSync(join(tampered, 'evidence.json'), 'utf8'));
    ev.measurement = measured.measurement;
    ev.verdict = 'improved';
    ev.verdictReasons = ['forged'];
    writeFileSync(join(tampered, 'evidence.json'), JSON.stringify(ev));
    // The CPU gate job's attestation no longer matches; without one at all, the same.
    for (const attestation of [honest.cpu!.outputs.attestation!, '']) {
      const { run, remote } = await publish(tampered, { base, ...(attestation ? { attestation } : {}) });
      expect(run.outputs.verdict).toBe('error');
      const history = execFileSync(
        'git',
        ['--git-dir', remote.bare, 'show', 'hillclimb-data:history/toy.jsonl'],
        {
          encoding: 'utf8',
        },
      );
      const row = JSON.parse(history.trim().split('\n').at(-1)!);
      expect(row.verdict).toBe('error');
      expect(row.championAfter).toBe(base);
    }
  });

  it('attack 3: a forged CPU gate pass handed to the measuring job cannot become improved', async () => {
    const tampered = copyOf('proposed');
    const gated = JSON.parse(readFileSync(join(artifacts, 'gated', 'evidence.json'), 'utf8'));
    const ev = JSON.parse(readFileSync(join(tampered, 'evidence.json'), 'utf8'));
    ev.gates = gated.gates;
    ev.steps['cpu-gate'] = gated.steps['cpu-gate'];
    writeFileSync(join(tampered, 'evidence.json'), JSON.stringify(ev));
    const dir = job(seedRemote, tampered);
    const run = await step('profile', dir, { forge: 'local', store: 'local', base });
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.verdict).toBe('needs-human');
    expect(evidenceOf(run).verdictReasons[0]).toMatch(/no believable CPU gate pass/);
  });

  it('attack 4: a candidate whose log file is a link to the environment is refused before anything reads it', async () => {
    const evil = attackerCommit(
      base,
      (dir) => {
        writeFileSync(
          join(dir, 'toy', 'kernel.py'),
          readFileSync(join(dir, 'toy', 'kernel.py'), 'utf8').replace('0.02', '0.001'),
        );
        mkdirSync(join(dir, 'docs'), { recursive: true });
        symlinkSync('/proc/self/environ', join(dir, 'docs', 'hillclimb-log.md'));
      },
      'faster, and a log that is a link',
    );
    const tampered = copyOf('proposed');
    const ref = `refs/hillclimb/candidates/${RUN_ID}/i001`;
    git(evil.dir, 'update-ref', ref, evil.sha);
    git(evil.dir, 'bundle', 'create', '-q', join(tampered, 'candidate', 'candidate.bundle'), ref, `^${base}`);
    // The CPU gate job re-derives the candidate: the import refuses the link.
    const gate = await step('kernel-test', job(seedRemote, tampered), {
      gate: 'cpu',
      forge: 'local',
      store: 'local',
      base,
    });
    expect(gate.outputs.verdict).toBe('invalid');
    expect(gate.outputs.reason).toMatch(/docs\/hillclimb-log\.md a symbolic link/);
    // The writer, given it with no attestation, takes nothing from it and pushes nothing.
    const { run, remote } = await publish(tampered, { base });
    expect(run.outputs.verdict).toBe('invalid');
    expect(onRemote(remote.bare, evil.sha)).toBe(false);
    expect(branchesOf(remote.bare)).not.toContain(`refs/heads/hillclimb/toy/${RUN_ID}/i001`);
    expect(remoteText(remote.bare)).not.toContain(SECRET);
    expect(unmasked(run.stdout) + run.summary).not.toContain(SECRET);
  });

  it('attack 5: links and hard links planted in the bundle never reach the store or the PR', async () => {
    const secretFile = join(t.dir, 'runner-credentials');
    writeFileSync(secretFile, `token=${SECRET}\n`);
    const { run, remote } = await publish(
      join(artifacts, 'measured'),
      { base, attestation: honest.measure!.outputs.attestation! },
      (bundle) => {
        rmSync(join(bundle, 'agent', 'attempt-1', 'agent.log'), { force: true });
        symlinkSync('/proc/self/environ', join(bundle, 'agent', 'attempt-1', 'agent.log'));
        rmSync(join(bundle, 'candidate', 'candidate.patch'), { force: true });
        symlinkSync(secretFile, join(bundle, 'candidate', 'candidate.patch'));
        linkSync(secretFile, join(bundle, 'report-credentials.txt'));
      },
    );
    expect(run.stdout).toMatch(/left out agent\/attempt-1\/agent\.log: a symbolic link/);
    expect(run.stdout).toMatch(/left out report-credentials\.txt: a hard link/);
    expect(remoteText(remote.bare)).not.toContain(SECRET);
    for (const c of server.pullsOf(remote.repo).flatMap((p) => server.commentsOn(remote.repo, p.number))) {
      expect(c.body).not.toContain(SECRET);
    }
    expect(run.outputs.verdict).toBe('error'); // changed in transit: not what the measuring job attested
  });

  it('attack 6: a candidate that touches a protected path is never pushed (no branch, no PR)', async () => {
    const evil = attackerCommit(
      base,
      (dir) =>
        writeFileSync(
          join(dir, 'harness', 'check.py'),
          readFileSync(join(dir, 'harness', 'check.py'), 'utf8').replace('TOLERANCE = 0', 'TOLERANCE = 100'),
        ),
      'loosen the check',
    );
    const tampered = copyOf('proposed');
    const ref = `refs/hillclimb/candidates/${RUN_ID}/i001`;
    git(evil.dir, 'update-ref', ref, evil.sha);
    git(evil.dir, 'bundle', 'create', '-q', join(tampered, 'candidate', 'candidate.bundle'), ref, `^${base}`);
    const { run, remote } = await publish(tampered, { base });
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.verdict).toBe('invalid');
    expect(run.outputs.reason).toContain('harness/check.py');
    expect(branchesOf(remote.bare)).toEqual(['refs/heads/hillclimb-data', 'refs/heads/main']);
    expect(server.pullsOf(remote.repo)).toEqual([]);
    expect(onRemote(remote.bare, evil.sha)).toBe(false);
  });

  it('attack 7: a bundle for another champion, or an attestation for another bundle, is refused', async () => {
    const other = await publish(join(artifacts, 'measured'), {
      base: `${base.slice(0, 39)}${base.endsWith('0') ? '1' : '0'}`,
      attestation: honest.measure!.outputs.attestation!,
    });
    expect(other.run.code).not.toBe(0);
    // The CPU gate job's attestation replayed with the measured bundle: believed for nothing.
    const replayed = await publish(join(artifacts, 'measured'), {
      base,
      attestation: honest.cpu!.outputs.attestation!,
    });
    expect(replayed.run.outputs.verdict).toBe('error');
    expect(onRemote(replayed.remote.bare, JSON.parse(honest.measure!.outputs.attestation!).candidate)).toBe(
      true,
    );
    expect(branchesOf(replayed.remote.bare)).toContain(`refs/heads/hillclimb/toy/${RUN_ID}/i001`);
  });

  it('attack 22: who and where the iteration is come from the workflow, not from the bundle', async () => {
    const tampered = copyOf('measured');
    const ev = JSON.parse(readFileSync(join(tampered, 'evidence.json'), 'utf8'));
    ev.iteration = 7;
    ev.runId = 'someone-elses-run';
    ev.base.branch = 'release-old';
    ev.runStartedAt = '2999-01-01T00:00:00.000Z';
    writeFileSync(join(tampered, 'evidence.json'), JSON.stringify(ev));
    const { run, remote } = await publish(tampered, { base });
    expect(branchesOf(remote.bare)).toContain(`refs/heads/hillclimb/toy/${RUN_ID}/i001`);
    expect(branchesOf(remote.bare).some((b) => b.includes('i007') || b.includes('someone-elses-run'))).toBe(
      false,
    );
    for (const pr of server.pullsOf(remote.repo)) expect(pr.base).toBe('main');
    const out = evidenceOf(run);
    expect(out).toMatchObject({ iteration: 1, runId: RUN_ID });
    expect(out.runStartedAt < '2999').toBe(true);
  });

  it("attack 8: a person's PR bundle not made from the pinned commit is refused by the comment job", async () => {
    const remote = freshRemote();
    const dir = job(remote.bare, join(artifacts, 'measured'));
    const run = await step(
      'report',
      dir,
      {
        'pull-request': '1',
        base,
        'pinned-source': 'f'.repeat(40),
        attestation: honest.measure!.outputs.attestation!,
        'config-overrides': JSON.stringify({ 'forge.github.repository': remote.repo }),
      },
      { GITHUB_TOKEN: TOKEN },
    );
    expect(run.code).not.toBe(0);
    expect(run.errors.join('\n')).toMatch(/not an attested bundle of the pinned commit ffffffffffff/);
    expect(existsSync(join(dir, BUNDLE, 'report', 'comment.md'))).toBe(false);
  });
});
