// The loop's fault handling, on the toy target: each fault ends in the right verdict or a clear stop,
// with the evidence kept.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { Journal } from '../../src/loop/state/journal.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from './toy-repo.js';

const AGENTS = join(import.meta.dirname, 'agents');
const noSleep = async () => undefined;
const python = systemPython();

beforeAll(() => {
  process.env.HILLCLIMB_PYTHON = python;
});

/** The toy config with the agent swapped for a command agent running one of tests/loop/agents. */
/**
 * The toy with a command agent running `script`. Its idle limit is its whole 30 s unless a case is about
 * that limit (`idleMinutes`): an agent that is silent while the sandbox is built, Python starts and its
 * command runs would otherwise end as a timeout on a loaded machine, whatever the case tests.
 */
function commandAgentConfig(script: string, extra = '', idleMinutes = 0.5): string {
  return TOY_CONFIG.replace(
    'agent:\n  kind: replay\n  replay: {dir: replay}\n',
    `agent:\n  kind: command\n  timeout_minutes: 0.5\n  idle_timeout_minutes: ${idleMinutes}\n  command:\n    command: ["sh", "${join(AGENTS, script)}"]\n${extra}`,
  );
}

function loop(repo: string, extra: Partial<Parameters<typeof runLoop>[0]> = {}) {
  return runLoop({
    configFile: join(repo, 'hillclimb.yml'),
    logger: memoryLogger(),
    sleep: noSleep,
    ...extra,
  });
}

describe('agent faults', () => {
  const t = tempDir('hc-faults-agent-');
  afterAll(t.cleanup);

  it('an agent that crashes without a commit gives no-op, and three alike stop the loop as stuck', async () => {
    const repo = join(t.dir, 'crash');
    makeToyRepo(repo, [], commandAgentConfig('crash.sh'));
    const r = await loop(repo, { overrides: { 'loop.iterations': 5 } });
    expect(r.iterations.map((i) => i.verdict)).toEqual(['no-op', 'no-op', 'no-op']);
    expect(r.iterations[0]!.reason).toBe('the agent failed (exit code 7) without a commit');
    expect(r.endReason).toBe('stuck');
    expect(r.message).toContain('a human should look');
    expect(existsSync(join(r.iterations[0]!.bundleDir, 'agent', 'attempt-1', 'agent.log'))).toBe(true);
  });

  it('an agent whose tool is not in the sandbox: the verdict quotes the shell and says what the sandbox shows', async () => {
    const repo = join(t.dir, 'missing-tool');
    makeToyRepo(repo, [], commandAgentConfig('missing-tool.sh'));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.iterations[0]!.verdict).toBe('no-op');
    expect(r.iterations[0]!.reason).toMatch(
      /^the agent failed \(exit code 127\) without a commit: .*pyenv-shim-python3: not found \(in the sandbox PATH shows the system folders, .*\{python\}\)$/,
    );
  });

  it('an agent that hangs is killed by the idle timeout: no-op, evidence kept', async () => {
    const repo = join(t.dir, 'hang');
    // It prints one line and hangs: a 2 s idle limit ends it long before the 30 s one.
    makeToyRepo(repo, [], commandAgentConfig('hang.sh', '', 0.03));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.iterations[0]!.verdict).toBe('no-op');
    expect(r.iterations[0]!.reason).toBe('the agent timed out without a commit');
    expect(r.iterations[0]!.evidence.agent?.status).toBe('timeout');
  });

  it('a commit made before the agent failed is still judged on its merits', async () => {
    const repo = join(t.dir, 'commit-then-crash');
    makeToyRepo(repo, [], commandAgentConfig('commit-then-crash.sh'));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.iterations[0]!.verdict).toBe('improved');
    expect(r.iterations[0]!.evidence.steps.propose?.note).toContain('agent failed, but it committed');
  });

  it('the prompt’s test command runs in a login shell that resets PATH (as Codex runs commands)', async () => {
    const repo = join(t.dir, 'login-shell');
    makeToyRepo(repo, [], commandAgentConfig('login-shell-tests.sh'));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    const it1 = r.iterations[0]!;
    const prompt = readFileSync(join(it1.bundleDir, 'agent', 'prompt.md'), 'utf8');
    // The interpreter is named by its absolute path, not as a bare `python` on the agent's PATH.
    expect(prompt).toContain(`(\`${python} harness/check.py --junit `);
    const log = readFileSync(join(it1.bundleDir, 'agent', 'attempt-1', 'tests.log'), 'utf8');
    expect(it1.evidence.agent?.result?.summary, log).toBe('tests exit 0');
    expect(existsSync(join(it1.bundleDir, 'agent', 'attempt-1', 'junit.xml'))).toBe(true);
  });

  it('a git repository the agent leaves inside its tree is refused: its filter never runs', async () => {
    const repo = join(t.dir, 'nested');
    const proof = join(t.dir, 'nested-filter-ran');
    makeToyRepo(
      repo,
      [],
      commandAgentConfig('nested-repo.sh').replace(
        `["sh", "${join(AGENTS, 'nested-repo.sh')}"]`,
        `["sh", "${join(AGENTS, 'nested-repo.sh')}", "${proof}"]`,
      ),
    );
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    const it1 = r.iterations[0]!;
    expect(it1.verdict).toBe('invalid');
    expect(it1.reason).toContain('toy/evil/.git: a nested git repository is never taken from an agent');
    // Nothing of it reached the harness's side, and git ran no filter of its.
    gitIn(repo, 'status', '--porcelain');
    expect(existsSync(proof)).toBe(false);
    expect(gitIn(repo, 'branch', '--list', 'hillclimb/*').trim()).toBe('');
  });

  it('no commit with a result file is a no-op that keeps the agent’s reasoning', async () => {
    const repo = join(t.dir, 'no-commit');
    makeToyRepo(repo, [], commandAgentConfig('no-commit.sh'));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.iterations[0]!.verdict).toBe('no-op');
    expect(r.iterations[0]!.reason).toBe('the agent made no commit');
    expect(r.iterations[0]!.evidence.agent?.result?.summary).toBe('no change');
  });
});

/**
 * A stand-in for a model API that fails the way real ones do: each request gets the next answer of the
 * script (`fail` = 503, `hang` = no answer at all, `ok` = 200); the last answer repeats.
 */
async function flakyApi(script: Array<'fail' | 'hang' | 'ok'>) {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = createServer((_req, res) => {
    const answer = script[Math.min(requests++, script.length - 1)];
    if (answer === 'hang') return;
    res.writeHead(answer === 'ok' ? 200 : 503).end(answer === 'ok' ? 'ok' : 'overloaded');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests: () => requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** One iteration of the toy in `repo` that must fail before it ends: the error, and the retries' waits. */
async function failedRun(repo: string) {
  const waits: number[] = [];
  const logger = memoryLogger();
  const err = await runLoop({
    configFile: join(repo, 'hillclimb.yml'),
    logger,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
    overrides: { 'loop.iterations': 1 },
  }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(HillclimbError);
  return { error: err as HillclimbError, waits, logger };
}

describe('a champion whose target module fails on its own', () => {
  const t = tempDir('hc-faults-champion-');
  afterAll(t.cleanup);

  it('stops the run before the agent, quoting the error, with no retry', async () => {
    const repo = join(t.dir, 'broken');
    makeToyRepo(repo);
    // The newcomer's first run: the target module imports something the venv does not have.
    const programs = join(repo, 'harness', 'programs.py');
    writeFileSync(programs, `import not_installed_anywhere  # noqa\n${readFileSync(programs, 'utf8')}`);
    gitIn(repo, 'commit', '-qam', 'bench imports a missing module');
    const { error: e, waits, logger } = await failedRun(repo);
    expect(e.name).toBe('ChampionFailure');
    // The first process of the target module to run is its requests step, in the harness's own tree.
    expect(e.message).toMatch(
      /^the target module's requests step \(harness\.programs\) exited 1: ModuleNotFoundError: No module named 'not_installed_anywhere'/,
    );
    expect(e.hint).toContain('targets.toy.programs.module: harness.programs');
    expect(e.hint).not.toContain('passed before');
    expect(waits).toEqual([]); // never retried
    // Stopped at the prompt's profile of the champion: the agent never ran.
    expect(logger.lines.join('\n')).not.toMatch(/agent: /);
  }, 120_000);
});

describe('a target module whose verifier is older than this hillclimb', () => {
  const t = tempDir('hc-faults-older-bench-');
  afterAll(t.cleanup);

  it('stops the run at the first measurement with a hint that names the upgrade and the key, with no retry', async () => {
    const repo = join(t.dir, 'older');
    makeToyRepo(repo);
    // A verifier from before bench.min_time_ms: argparse refuses the flag, as an older hillclimb-bench does.
    const programs = join(repo, 'harness', 'programs.py');
    const text = readFileSync(programs, 'utf8');
    const flag = '    p.add_argument("--min-time-ms", type=int, default=0)\n';
    expect(text).toContain(flag);
    writeFileSync(programs, text.replace(flag, ''));
    gitIn(repo, 'commit', '-qam', 'the verifier of an older hillclimb-bench');
    const { error: e, waits } = await failedRun(repo);
    expect(e.name, String(e)).toBe('ChampionFailure');
    expect(e.message).toMatch(
      /^the verifier exited 2 without a session: .*unrecognized arguments: --min-time-ms 1000/,
    );
    expect(e.hint).toContain("the target module's verifier does not take --min-time-ms");
    expect(e.hint).toContain('Run hillclimb setup');
    expect(e.hint).toContain('set targets.toy.bench.min_time_ms: 0 in hillclimb.yml');
    expect(waits).toEqual([]); // never retried
  }, 120_000);
});

describe('agent infrastructure failures are retried', () => {
  const t = tempDir('hc-faults-retry-');
  afterAll(t.cleanup);
  const flakyConfig = (url: string) =>
    commandAgentConfig('flaky-api.sh', '').replace(
      `["sh", "${join(AGENTS, 'flaky-api.sh')}"]`,
      // It calls a service of its own on the machine's loopback: it asks for the machine's network.
      `["sh", "${join(AGENTS, 'flaky-api.sh')}", "${url}"]\n    network: host`,
    );

  it('an agent whose API failed once (exit 75) is run again, and the retry completes the iteration', async () => {
    const api = await flakyApi(['fail', 'ok']);
    try {
      const repo = join(t.dir, 'once');
      makeToyRepo(repo, [], flakyConfig(api.url));
      const logger = memoryLogger();
      const r = await loop(repo, { overrides: { 'loop.iterations': 1 }, logger });
      const it1 = r.iterations[0]!;
      expect(it1.verdict).toBe('improved');
      expect(api.requests()).toBe(2);
      // The retry's warning says what the agent said, and where its whole log is.
      const warning = logger.lines.find((l) => l.includes('retry 1/'));
      expect(warning).toContain(
        `propose: agent command: the agent reported an infrastructure failure (exit code 75): model API: ${api.url} is not answering; retry 1/`,
      );
      expect(warning).toContain(
        `(the agent log is ${join(it1.bundleDir, 'agent', 'attempt-1', 'agent.log')})`,
      );
      expect(it1.evidence.agent).toMatchObject({
        status: 'finished',
        attempts: 2,
        logFile: 'agent/attempt-2/agent.log',
        earlier: [{ attempt: 1, status: 'failed', exitCode: 75, logFile: 'agent/attempt-1/agent.log' }],
      });
      expect(it1.evidence.agent!.earlier![0]!.infraError).toContain('exit code 75');
      expect(it1.evidence.failedAttempts?.propose).toEqual([
        { attempt: 1, at: expect.any(String), message: expect.stringContaining('agent command:') },
      ]);
      // Each attempt kept its own output; the first one's log says why it failed.
      const bundle = it1.bundleDir;
      expect(readFileSync(join(bundle, 'agent', 'attempt-1', 'agent.log'), 'utf8')).toContain(
        'is not answering',
      );
      expect(existsSync(join(bundle, 'agent', 'attempt-2', 'result.json'))).toBe(true);
      expect(readFileSync(join(bundle, 'report', 'log-entry.md'), 'utf8')).toMatch(
        /2 attempts; before: attempt 1 failed \(.*exit code 75/,
      );
      const attempts = new Journal(r.runDir).entries().filter((e) => e.t === 'attempt');
      expect(attempts).toEqual([expect.objectContaining({ iteration: 1, step: 'propose', attempt: 1 })]);
    } finally {
      await api.close();
    }
  });

  it('an API that stays down ends the iteration as error, with every attempt listed', async () => {
    const api = await flakyApi(['fail']);
    try {
      const repo = join(t.dir, 'down');
      makeToyRepo(repo, [], flakyConfig(api.url));
      const r = await loop(repo, { overrides: { 'loop.iterations': 1, 'loop.infra_retries': 2 } });
      const it1 = r.iterations[0]!;
      expect(it1.verdict).toBe('error');
      expect(it1.reason).toMatch(/^propose: agent command: .*exit code 75.* \(3 attempts\)$/);
      expect(it1.evidence.failedAttempts?.propose?.map((a) => a.attempt)).toEqual([1, 2, 3]);
      expect(it1.evidence.agent?.earlier?.map((a) => a.attempt)).toEqual([1, 2]);
      for (const n of [1, 2, 3])
        expect(existsSync(join(it1.bundleDir, 'agent', `attempt-${n}`, 'agent.log'))).toBe(true);
      expect(gitIn(repo, 'branch', '--list', 'hillclimb/*').trim()).toBe('');
    } finally {
      await api.close();
    }
  });

  it('hillclimb loop exits 3 with a summary when every iteration ended in error', async () => {
    const api = await flakyApi(['fail']);
    try {
      const repo = join(t.dir, 'all-errors');
      makeToyRepo(repo, [], flakyConfig(api.url));
      // Two errors are within the failure budget: the run "completes", but it produced nothing.
      const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'loop', '--root', repo, '--iterations', '2'], {
          env: { ...process.env, HILLCLIMB_PYTHON: python },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d));
        child.stderr.on('data', (d: Buffer) => (stderr += d));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(r.stdout).toMatch(/run \S+: completed/);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(
        /^error: no iteration completed: all 2 iterations ended in error \(i001: propose: agent command: the agent reported an infrastructure failure \(exit code 75\): model API: .* is not answering \(2 attempts\)\); the evidence of each is under .*\.hillclimb\/runs\/\S+$/m,
      );
    } finally {
      await api.close();
    }
  }, 120_000);

  it('--resume after a kill during the retry continues with that attempt and completes', async () => {
    // The first request fails, the second never answers (the loop is killed while the retry waits on
    // it), and the API is back for the resumed run.
    const api = await flakyApi(['fail', 'hang', 'ok']);
    try {
      const repo = join(t.dir, 'resume');
      makeToyRepo(repo, [], flakyConfig(api.url).replace('infra_retries: 1', 'infra_retries: 3'));
      const child = spawn(process.execPath, [CLI, 'loop', '--root', repo, '--iterations', '1'], {
        env: { ...process.env, HILLCLIMB_PYTHON: python },
        stdio: 'ignore',
      });
      const exited = new Promise((r) => child.once('exit', r));
      while (api.requests() < 2) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGKILL');
      await exited;
      // The agent was waiting on the API when the loop died: nothing of it outlives the loop (its
      // sandbox dies with the harness; what else a killed loop left, the next one ends: issue 35).
      const agentProcesses = () =>
        readdirSync('/proc').filter((p) => {
          try {
            return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(api.url);
          } catch {
            return false;
          }
        });
      for (let i = 0; agentProcesses().length > 0 && i < 200; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(agentProcesses()).toEqual([]);
      expect(existsSync(join(repo, '.hillclimb', 'processes.json'))).toBe(true); // the killed loop's ledger

      const r = await loop(repo, { resume: true });
      const it1 = r.iterations[0]!;
      expect(it1.verdict).toBe('improved');
      expect(r.endReason).toBe('completed');
      // Attempt 2 was cut off before it was recorded: it was made again, as attempt 2.
      expect(it1.evidence.agent).toMatchObject({ status: 'finished', attempts: 2 });
      expect(it1.evidence.failedAttempts?.propose?.map((a) => a.attempt)).toEqual([1]);
      expect(api.requests()).toBe(3);
      expect(existsSync(join(repo, '.hillclimb', 'processes.json'))).toBe(false);
    } finally {
      await api.close();
    }
  }, 120_000);
});

describe('preflight', () => {
  const t = tempDir('hc-faults-preflight-');
  afterAll(t.cleanup);

  it('a missing project interpreter stops the run before it starts, saying to run setup', async () => {
    const repo = join(t.dir, 'novenv');
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1));
    process.env.HILLCLIMB_PYTHON = join(t.dir, 'no-venv', 'bin', 'python');
    try {
      const err = await loop(repo).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HillclimbError);
      expect((err as HillclimbError).message).toBe(
        `the project interpreter ${process.env.HILLCLIMB_PYTHON} does not exist`,
      );
      expect((err as HillclimbError).hint).toContain('run: hillclimb setup');
      // Nothing was started: no run, no branch.
      expect(existsSync(join(repo, '.hillclimb', 'runs'))).toBe(false);
      expect(gitIn(repo, 'branch', '--list', 'hillclimb/*').trim()).toBe('');
      // A dry run on the local backend prints the gate's command instead: it needs no interpreter.
      const dry = await loop(repo, { dryRun: true });
      expect(dry.iterations).toHaveLength(1);
      // It walks every step, printing commands: no step failed, no verdict, "dry run" in the title.
      const ev = dry.iterations[0]!.evidence;
      expect(dry.iterations[0]!.verdict).toBe('dry-run');
      expect(ev).toMatchObject({ dryRun: true, verdictReasons: [] });
      expect(ev.verdict).toBeUndefined();
      expect(Object.values(ev.steps).some((st) => st?.status === 'failed')).toBe(false);
      expect(ev.steps['cpu-gate']).toMatchObject({
        status: 'skipped',
        note: expect.stringContaining('dry run'),
      });
      expect(ev.steps.measure).toMatchObject({ status: 'skipped', note: expect.stringContaining('dry run') });
      expect(ev.steps.publish?.note).toContain('PR "[dry run] toy: ');
    } finally {
      process.env.HILLCLIMB_PYTHON = python;
    }
  });
});

describe('a machine that cannot build the sandbox', () => {
  const t = tempDir('hc-faults-nosandbox-');
  afterAll(t.cleanup);

  /** The loop as a process whose `unshare` is refused, as on an Ubuntu 24.04 desktop. */
  function loopWithoutUserNamespaces(repo: string) {
    const bin = join(t.dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, 'unshare'),
      '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n',
    );
    chmodSync(join(bin, 'unshare'), 0o755);
    return spawnSync(process.execPath, [CLI, 'loop', '--root', repo, '--iterations', '1'], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, HILLCLIMB_PYTHON: python },
      encoding: 'utf8',
      timeout: 120_000,
    });
  }

  it('the loop refuses to start unless the config names the opt-out, and then says so loudly', () => {
    const repo = join(t.dir, 'required');
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1));
    const refused = loopWithoutUserNamespaces(repo);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      'this machine cannot build the sandbox the agent and candidate code run in (unshare: unshare failed: Operation not permitted)',
    );
    expect(refused.stderr).toContain('kernel.apparmor_restrict_unprivileged_userns=0');
    expect(refused.stderr).toContain('set sandbox.mode: allow-unsandboxed');
    expect(existsSync(join(repo, '.hillclimb', 'runs'))).toBe(false);

    const optedOut = join(t.dir, 'opted-out');
    makeToyRepo(optedOut, STANDARD_PATCHES.slice(0, 1), `${TOY_CONFIG}sandbox:\n  mode: allow-unsandboxed\n`);
    const ran = loopWithoutUserNamespaces(optedOut);
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(
      /UNSANDBOXED \(sandbox\.mode: allow-unsandboxed\): the agent and candidate code run with your rights/,
    );
    // The improvement it measured is unverified: a person decides, no champion moves.
    expect(ran.stdout).toContain('needs-human');
  }, 180_000);

  it('the retired sandbox.mode auto is refused with what to write instead', () => {
    const repo = join(t.dir, 'auto');
    makeToyRepo(repo, [], `${TOY_CONFIG}sandbox:\n  mode: auto\n`);
    const r = spawnSync(process.execPath, [CLI, 'loop', '--root', repo], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/sandbox\.mode: auto is retired: .*set allow-unsandboxed/s);
  });
});

describe('one loop at a time per repository', () => {
  const t = tempDir('hc-faults-lock-');
  afterAll(t.cleanup);

  it('a second loop is refused while one runs; a lock left by a dead process is taken over', async () => {
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1));
    const first = loop(repo, { overrides: { 'loop.iterations': 1 } });
    const lock = join(repo, '.hillclimb', 'loop.lock');
    while (!existsSync(lock)) await new Promise((r) => setTimeout(r, 5));
    const err = await loop(repo).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toMatch(
      new RegExp(
        `^another hillclimb loop \\(pid ${process.pid}, started .*\\) is running on this repository$`,
      ),
    );
    expect((await first).endReason).toBe('completed');
    expect(existsSync(lock)).toBe(false);

    // kill -9 leaves the lock behind: its process is gone, so the next loop takes it over.
    const dead = spawn('sh', ['-c', 'exit 0']);
    await new Promise((r) => dead.once('exit', r));
    writeFileSync(lock, JSON.stringify({ pid: dead.pid, host: hostname(), startedAt: 'earlier' }));
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.endReason).toBe('completed');
  });

  it('the state folder ignores itself: a repository whose .gitignore omits it stays clean', async () => {
    const repo = join(t.dir, 'unignored');
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1));
    writeFileSync(join(repo, '.gitignore'), '__pycache__/\n');
    gitIn(repo, 'commit', '-qam', 'ignore only pycache');
    const r1 = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r1.endReason).toBe('completed');
    expect(gitIn(repo, 'status', '--porcelain').trim()).toBe('');
    // With dirty_tree: fail (the default), a second run starts: the first one's state is not a change.
    const r2 = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r2.endReason).toBe('completed');
  });
});

describe('dirty tree policy', () => {
  const t = tempDir('hc-faults-dirty-');
  afterAll(t.cleanup);

  it('fail: refuses to start and says what to do', async () => {
    const repo = join(t.dir, 'fail');
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1));
    writeFileSync(join(repo, 'notes.txt'), 'work in progress\n');
    const err = await loop(repo).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toContain('uncommitted changes');
    expect((err as HillclimbError).hint).toContain('dirty_tree: stash');
  });

  it('stash: stashes by SHA, runs, and restores the user’s changes afterwards', async () => {
    const repo = join(t.dir, 'stash');
    makeToyRepo(
      repo,
      STANDARD_PATCHES.slice(0, 1),
      TOY_CONFIG.replace('loop:\n', 'loop:\n  dirty_tree: stash\n'),
    );
    writeFileSync(join(repo, 'notes.txt'), 'work in progress\n');
    const kernel = join(repo, 'toy', 'kernel.py');
    writeFileSync(kernel, `${readFileSync(kernel, 'utf8')}# local edit\n`);
    const r = await loop(repo, { overrides: { 'loop.iterations': 1 } });
    expect(r.iterations[0]!.verdict).toBe('improved');
    // The run started from the committed HEAD, not from the edits …
    expect(r.iterations[0]!.evidence.base.commit).toBe(gitIn(repo, 'rev-parse', 'HEAD').trim());
    // … and the edits are back, with no stash left behind.
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('work in progress\n');
    expect(readFileSync(kernel, 'utf8')).toContain('# local edit');
    expect(gitIn(repo, 'stash', 'list').trim()).toBe('');
  });

  it('stash: a run whose loop context cannot be built ends in the journal and gives the changes back', async () => {
    // The agent is built with the context: one configured to receive a token is refused there.
    const repo = join(t.dir, 'stash-unbuildable');
    const config = TOY_CONFIG.replace('loop:\n', 'loop:\n  dirty_tree: stash\n').replace(
      'agent:\n',
      'agent:\n  pass_env: [GITHUB_TOKEN]\n',
    );
    makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1), config);
    writeFileSync(join(repo, 'notes.txt'), 'work in progress\n');
    const err = await loop(repo, { overrides: { 'loop.iterations': 1 } }).catch((e) => e);
    expect((err as Error).message).toContain('tokens and cloud credentials are never passed to an agent');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('work in progress\n');
    expect(gitIn(repo, 'stash', 'list').trim()).toBe('');
    const runs = join(repo, '.hillclimb', 'runs');
    const journal = readFileSync(join(runs, readdirSync(runs)[0]!, 'journal.jsonl'), 'utf8');
    expect(JSON.parse(journal.trim().split('\n').at(-1)!)).toMatchObject({ t: 'run-end', reason: 'fatal' });
  });
});

describe('candidate faults', () => {
  const t = tempDir('hc-faults-candidate-');
  afterAll(t.cleanup);
  const flag = (name: string, also?: (s: string) => string) => ({
    'toy/kernel.py': (s: string) => `${(also ?? ((x: string) => x))(s)}\n${name} = True\n`,
  });
  const patches = [
    {
      name: '0001-hang-tests',
      edit: flag('HANG_TESTS'),
      json: { hypothesis: 'h', summary: 'hang', next_idea: 'n' },
    },
    {
      name: '0002-crash-bench',
      edit: flag('CRASH_BENCH'),
      json: { hypothesis: 'h', summary: 'crash', next_idea: 'n' },
    },
    {
      name: '0003-no-metrics',
      edit: flag('NO_METRICS'),
      json: { hypothesis: 'h', summary: 'no metrics', next_idea: 'n' },
    },
    {
      name: '0004-garbled-program',
      edit: flag('GARBLED_PROGRAM', (s) => s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')),
      json: { hypothesis: 'h', summary: 'garbled', next_idea: 'n' },
    },
    {
      name: '0005-faster-corrupt-trace',
      edit: flag('CORRUPT_TRACE', (s) => s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')),
      json: { hypothesis: 'h', summary: 'faster', next_idea: 'n' },
    },
  ];
  let result: Awaited<ReturnType<typeof runLoop>>;

  beforeAll(async () => {
    const repo = join(t.dir, 'repo');
    makeToyRepo(
      repo,
      patches,
      TOY_CONFIG.replace('idle_timeout_minutes: 0.2', 'idle_timeout_minutes: 0.05').replace(
        'iterations: 4',
        'iterations: 5',
      ),
    );
    result = await loop(repo);
  }, 240_000);

  it('a hanging test suite is killed and makes the candidate invalid', () => {
    const it1 = result.iterations[0]!;
    expect(it1.verdict).toBe('invalid');
    expect(it1.reason).toContain('printed nothing for 0.05 min (hung), killed');
    expect(it1.evidence.gates.cpu?.status).toBe('failed');
  });

  it('a candidate whose export crashes is invalid at its gate, and the export log is kept', () => {
    const it2 = result.iterations[1]!;
    expect(it2.verdict).toBe('invalid');
    expect(it2.reason).toBe(
      "CPU correctness failed: the candidate's programs could not be exported: the export exited 3: export: failed: the kernel asked to crash",
    );
    const exported = it2.evidence.gates.cpu!.export!;
    expect(exported.status).toBe('failed');
    expect(readFileSync(join(it2.bundleDir, exported.logFile), 'utf8')).toContain(
      'the kernel asked to crash',
    );
    expect(it2.evidence.measurement).toBeUndefined();
  });

  it('a candidate whose export writes no programs is invalid, saying so', () => {
    const it3 = result.iterations[2]!;
    expect(it3.verdict).toBe('invalid');
    expect(it3.reason).toContain('the export wrote no programs (no manifest.json)');
  });

  it('a program the verifier cannot read fails the gate, naming the program', () => {
    const it4 = result.iterations[3]!;
    expect(it4.verdict).toBe('invalid');
    expect(it4.reason).toMatch(
      /1 of 1 exported programs failed verification, first: fwd_bwd@toy: .*does not deserialize/,
    );
    expect(it4.evidence.gates.cpu!.verifier).toMatchObject({ passed: false, total: 1, failed: 1 });
  });

  it('a corrupt trace is recorded as a failed profile; the measured verdict stands', () => {
    const it4 = result.iterations[4]!;
    expect(it4.verdict).toBe('improved');
    expect(it4.evidence.profile?.status).toBe('failed');
    expect(it4.evidence.profile?.reason).toMatch(/trace|gzip|JSON/i);
  });
});

/** Runs a bundle's evidence lists (0 while it is being written or has none). */
function recordedRuns(bundle: string): number {
  try {
    const ev = JSON.parse(readFileSync(join(bundle, 'evidence.json'), 'utf8')) as {
      measurement?: { runs: unknown[] };
    };
    return ev.measurement?.runs.length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Start `hillclimb loop` on the toy repo and send `signal` once iteration 1 has recorded a verifier
 * session's rounds; resolves when the process has exited.
 */
async function loopStoppedMidMeasurement(
  repo: string,
  signal: NodeJS.Signals,
): Promise<{ code: number | null; stderr: string; measureDir: string }> {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'loop', '--root', repo], {
    env: { ...process.env, HILLCLIMB_PYTHON: python },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const runs = join(repo, '.hillclimb', 'runs');
  const measureDir = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const run = existsSync(runs) ? readdirSync(runs)[0] : undefined;
      const dir = run === undefined ? undefined : join(runs, run, 'i001', 'measure');
      if (dir && existsSync(join(dir, 'B-02.json')) && recordedRuns(join(dir, '..')) >= 4) {
        clearInterval(timer);
        child.kill(signal);
        resolve(dir);
      }
    }, 20);
    child.once('exit', () => {
      clearInterval(timer);
      reject(new Error(`the loop finished before it could be sent ${signal}`));
    });
  });
  return { code: await exited, stderr, measureDir };
}

/**
 * The toy with its first two patches only (improved, then invalid at the CPU gate): the kill lands in
 * iteration 1's measurement, and the resumed run must still finish iteration 1 and run iteration 2.
 * The other two patches' iterations would only repeat what loop.int.test.ts proves.
 */
function makeResumeRepo(repo: string): void {
  makeToyRepo(repo, STANDARD_PATCHES.slice(0, 2), TOY_CONFIG.replace('iterations: 4', 'iterations: 2'));
}

describe('a process killed mid-iteration, then resumed', () => {
  const t = tempDir('hc-faults-resume-');
  afterAll(t.cleanup);

  it('continues from the journal without repeating finished work', async () => {
    const repo = join(t.dir, 'repo');
    makeResumeRepo(repo);
    // Kill it (SIGKILL: no clean-up at all) once iteration 1 has measured a session's rounds.
    const { measureDir: dir } = await loopStoppedMidMeasurement(repo, 'SIGKILL');
    // What the evidence recorded before the kill: a finished verifier session's rounds, if it got there.
    const evidence = JSON.parse(readFileSync(join(dir, '..', 'evidence.json'), 'utf8')) as {
      measurement?: { runs: Array<{ metricsFile: string }> };
    };
    const recorded = new Map(
      (evidence.measurement?.runs ?? []).map((run) => [
        run.metricsFile,
        statSync(join(dir, '..', run.metricsFile)).mtimeMs,
      ]),
    );

    const r = await loop(repo, { resume: true });
    expect(r.iterations.map((i) => i.verdict)).toEqual(['improved', 'invalid']);
    expect(r.endReason).toBe('completed');
    // Rounds recorded before the kill were kept, not measured again (a session in flight is redone).
    expect(recorded.size).toBeGreaterThanOrEqual(4);
    for (const [file, mtime] of recorded) expect(statSync(join(dir, '..', file)).mtimeMs, file).toBe(mtime);
    const entries = new Journal(r.runDir).entries();
    expect(entries.filter((e) => e.t === 'resume')).toHaveLength(1);
    const proposeDone = entries.filter((e) => e.t === 'step' && e.iteration === 1 && e.step === 'propose');
    expect(proposeDone).toHaveLength(1);
    const agentLog = readFileSync(
      join(r.iterations[0]!.bundleDir, 'agent', 'attempt-1', 'agent.log'),
      'utf8',
    );
    expect(agentLog.match(/applies/g)).toHaveLength(1);
    expect(gitIn(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
  }, 240_000);
});

describe('Ctrl-C mid-measurement, then resumed', () => {
  const t = tempDir('hc-faults-sigint-');
  afterAll(t.cleanup);

  it('stops the running step cleanly (exit 130, resume hint, worktrees removed) and resumes', async () => {
    const repo = join(t.dir, 'repo');
    makeResumeRepo(repo);
    const { code, stderr, measureDir } = await loopStoppedMidMeasurement(repo, 'SIGINT');
    expect(code).toBe(130);
    expect(stderr).toContain('hint: continue where it stopped with: hillclimb loop --resume');
    expect(stderr).not.toMatch(/\s+at .*\.js:\d+/);
    // Clean stop: the journal says so and no worktree is left behind.
    const runDir = join(measureDir, '..', '..');
    const ended = new Journal(runDir).entries().filter((e) => e.t === 'run-end');
    expect(ended.map((e) => (e as { reason: string }).reason)).toEqual(['interrupted']);
    expect(gitIn(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);

    const r = await loop(repo, { resume: true });
    expect(r.endReason).toBe('completed');
    expect(r.iterations.map((i) => i.verdict)).toEqual(['improved', 'invalid']);
  }, 240_000);
});

describe('a dry run', () => {
  const t = tempDir('hc-dry-run-');
  afterAll(t.cleanup);

  it('walks one iteration printing the commands, and pushes, publishes and records nothing', async () => {
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo);
    const logger = memoryLogger();
    const progress: string[] = [];
    const r = await loop(repo, { dryRun: true, logger, progress: (l) => progress.push(l) });
    expect(r.iterations).toHaveLength(1);
    expect(r.message).toMatch(/^dry run: compute commands were printed, not run; nothing was pushed/);
    const ev = r.iterations[0]!.evidence;
    // The agent proposed and the guard passed; every later step printed its commands, none failed, and
    // nothing decided a verdict.
    expect(ev.candidate?.commit).toBeDefined();
    expect(ev.steps.guard?.status).toBe('done');
    expect(ev.steps['cpu-gate']?.status).toBe('skipped');
    expect(ev.steps.decide).toMatchObject({ status: 'skipped', note: 'dry run: no verdict' });
    expect(ev.stoppedAt).toBeUndefined();
    expect(r.iterations[0]!.verdict).toBe('dry-run');
    expect(progress.at(-1)).toMatch(/\] dry run: no verdict \(commands printed, not run\)$/);
    expect(logger.lines.join('\n')).toMatch(
      /dry run: \S*python\S* harness\/check\.py --junit \S+cpu\.junit\.xml/,
    );
    // Nothing left the machine, and the shared history has no row for a run that measured nothing.
    expect(ev.steps.publish).toMatchObject({ status: 'skipped' });
    expect(ev.steps.publish!.note).toMatch(
      /^dry run: would push hillclimb\/toy\/\S+\/i001 and open or update the local PR/,
    );
    expect(existsSync(join(r.stateDir, 'forge'))).toBe(false);
    expect(existsSync(join(r.stateDir, 'store'))).toBe(false);
    expect(existsSync(join(r.stateDir, 'history.jsonl'))).toBe(false);
    // What would have been published is in the bundle.
    expect(readdirSync(join(r.iterations[0]!.bundleDir, 'report')).sort()).toEqual([
      'comment.md',
      'log-entry.md',
      'pr.md',
    ]);
    expect(progress.some((l) => l.includes('publish skipped: dry run'))).toBe(true);
    // The champion's profile command was printed for the prompt, without a warning about it.
    expect(logger.lines.join('\n')).toMatch(
      /dry run: \S*python\S* -m harness\.programs export --platform cpu /,
    );
    expect(logger.lines.filter((l) => l.startsWith('warning:'))).toEqual([]);
    expect(readFileSync(join(r.iterations[0]!.bundleDir, 'agent', 'prompt.md'), 'utf8')).toContain(
      "(dry run: the champion's profile command was printed, not run)",
    );
  });
});
