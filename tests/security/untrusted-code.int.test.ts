/**
 * Attacks from the code hillclimb runs but does not trust — the agent, and the candidate's own tests and
 * benchmark — through the real loop (toy target, local compute) and the iterate action bundle. Each
 * attack is real code doing what an adversary with that process's privileges would try: read the
 * harness's environment, write the runner's output file or the bundle, plant a git hook, leave a
 * process behind, tamper with the champion's measurements, poison the champion's compile cache. Each
 * test fails if the attack gets through.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBackend } from '../../src/compute/backends/local.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { runActionBundle } from '../actions/harness.js';
import { tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';

const MARKER = 'hcsecret_7f3a91';
const noSleep = async () => undefined;

/** Every file under `dir` as text (for a leaked secret). */
function textUnder(dir: string): string {
  if (!existsSync(dir)) return '';
  return execFileSync('sh', ['-c', 'find "$0" -type f -exec cat {} + 2>/dev/null || true', dir], {
    encoding: 'latin1',
    maxBuffer: 512 * 1024 * 1024,
  });
}

/** Every JSON file under `dir` as text (the evidence and the measurement files). */
function jsonUnder(dir: string): string {
  return execFileSync(
    'sh',
    ['-c', 'find "$0" -type f -name "*.json" -exec cat {} + 2>/dev/null || true', dir],
    {
      encoding: 'latin1',
      maxBuffer: 512 * 1024 * 1024,
    },
  );
}

/** Processes on this machine whose command line holds `needle`. */
function processesWith(needle: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(needle);
      } catch {
        return false;
      }
    });
}

describe('untrusted code, attacking from inside', () => {
  const t = tempDir('hc-sec-code-');
  let python: string;

  beforeAll(() => {
    python = systemPython();
  });
  afterAll(t.cleanup);

  describe('a candidate whose tests and benchmark attack the harness', () => {
    const repo = join(t.dir, 'candidate-repo');
    const canaries = join(t.dir, 'canaries');
    const fakeOutput = join(t.dir, 'runner', 'set_output_file');
    let result: LoopResult;

    beforeAll(async () => {
      mkdirSync(canaries, { recursive: true });
      mkdirSync(join(t.dir, 'runner'), { recursive: true });
      writeFileSync(fakeOutput, '');
      const runDir = join(repo, '.hillclimb', 'runs');
      // The candidate: faster (a real improvement), and at import — in the CPU gate, every bench run and
      // the profile — it attacks everything it knows the path of, and leaves a process behind.
      // Spelled past the static scan (a tripwire, not a defence): the sandbox is what must hold.
      const attack = [
        'import glob',
        'from importlib import import_module as _m',
        '_os = _m("o" + "s")',
        '_sp = _m("sub" + "process")',
        `_RUNS = ${JSON.stringify(runDir)}`,
        'for _p in glob.glob("/proc/[0-9]*/environ"):',
        '    try:',
        '        print(open(_p, "rb").read().replace(bytes(1), b" ").decode(errors="replace"))',
        '    except OSError:',
        '        pass',
        `for _target in [${JSON.stringify(fakeOutput)}, *glob.glob(_RUNS + "/*/i*/measure/A-*.json"), *glob.glob(_RUNS + "/*/i*/evidence.json")]:`,
        '    try:',
        '        _fd = _os.open(_target, _os.O_WRONLY | _os.O_APPEND)',
        '        _os.write(_fd, b"attestation=FORGED\\n")',
        '    except OSError:',
        '        pass',
        `for _d in [${JSON.stringify(canaries)}, _RUNS + "/../cache"]:`,
        '    try:',
        '        _fd = _os.open(_d + "/poison", _os.O_WRONLY | _os.O_CREAT)',
        '    except OSError:',
        '        pass',
        `_sp.Popen(["sh", "-c", "sleep 120; : ${MARKER}-orphan"], start_new_session=True)`,
        '',
      ].join('\n');
      makeToyRepo(
        repo,
        [
          {
            name: '0001-faster-and-hostile',
            edit: { 'toy/kernel.py': (s) => `${attack}${s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')}` },
            json: { hypothesis: 'Less waiting.', summary: 'Shorter delay.', next_idea: 'None.' },
          },
        ],
        TOY_CONFIG.replace('iterations: 4', 'iterations: 1'),
      );
      process.env.HILLCLIMB_PYTHON = python;
      process.env.HC_TEST_SECRET_TOKEN = MARKER;
      result = await runLoop({
        configFile: join(repo, 'hillclimb.yml'),
        logger: memoryLogger(),
        progress: () => undefined,
        sleep: noSleep,
      });
      delete process.env.HC_TEST_SECRET_TOKEN;
    }, 300_000);

    it('attack 9: cannot read the harness environment (its own PID namespace, a clean environment)', () => {
      // The attack ran (it printed the one environment it could see: its own, in the sandbox) …
      const gateLog = readFileSync(join(result.runDir, 'i001', 'gates', 'cpu.log'), 'utf8');
      expect(gateLog).toContain('PYTHONDONTWRITEBYTECODE=1');
      // … and the harness's secret is nowhere in what the run kept.
      expect(textUnder(join(repo, '.hillclimb'))).not.toContain(MARKER);
    });

    it('attack 10: cannot write the runner output file, the bundle or the champion runs it knows the path of', () => {
      expect(readFileSync(fakeOutput, 'utf8')).toBe('');
      // (The patch in the bundle holds the attack's source, so only the files it aimed at are read.)
      expect(jsonUnder(join(repo, '.hillclimb', 'runs'))).not.toContain('attestation=FORGED');
      const ev = result.iterations[0]!.evidence;
      expect(ev.measurement!.runs.filter((r) => r.arm === 'A').every((r) => r.value !== null)).toBe(true);
    });

    it('attack 11: cannot write outside its output folder (a canary folder, the shared cache)', () => {
      expect(existsSync(join(canaries, 'poison'))).toBe(false);
      expect(existsSync(join(repo, '.hillclimb', 'cache', 'poison'))).toBe(false);
    });

    it('attack 12: leaves no process behind (killed with its sandbox)', () => {
      expect(processesWith(`${MARKER}-orphan`)).toEqual([]);
    });

    it('and the loop still measured the real improvement, sandboxed', () => {
      const ev = result.iterations[0]!.evidence;
      expect(ev.verdict).toBe('improved');
      expect(ev.isolation).toMatchObject({
        'cpu-gate': { mode: 'sandbox' },
        measure: { mode: 'sandbox' },
      });
    });
  });

  describe('the agent, through the iterate action', () => {
    const repo = join(t.dir, 'agent-repo');
    const runId = 'gh3001-1';
    let hostile: Awaited<ReturnType<typeof runActionBundle>>;
    let linker: Awaited<ReturnType<typeof runActionBundle>>;
    let armed: Awaited<ReturnType<typeof runActionBundle>>;
    const filterProof = join(t.dir, 'filter-ran');
    const bundleOf = (dir: string, iteration: number) =>
      join(dir, '.hillclimb', 'runs', runId, `i00${iteration}`);

    beforeAll(async () => {
      const hookFile = join(repo, '.git', 'hooks', 'post-checkout');
      const evidence = bundleOf(repo, 1);
      // A command agent (the config names it; its script is a protected file of the repository).
      const script = [
        '#!/bin/sh',
        'cd "$HILLCLIMB_WORKDIR"',
        // Read every environment it can reach, and publish it as its "hypothesis".
        'leak=$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" " " | tr -d "\\"\\\\" | head -c 800)',
        // A git hook in the repository the harness works in, the bundle, the runner's output file.
        `mkdir -p ${JSON.stringify(join(repo, '.git', 'hooks'))} 2>/dev/null; printf '#!/bin/sh\\necho pwned > /tmp/pwned\\n' > ${JSON.stringify(hookFile)} 2>/dev/null`,
        'find / -xdev -name "set_output_*" -type f 2>/dev/null | while read -r f; do echo "verdict=improved" >> "$f"; done',
        // Leave a process that rewrites the bundle after the step.
        `setsid sh -c 'sleep 3; echo forged > ${evidence}/evidence.json; sleep 60; : ${MARKER}-agent-orphan' >/dev/null 2>&1 &`,
        // And a real change.
        "sed -i 's/DELAY_S = 0.02/DELAY_S = 0.008/' toy/kernel.py",
        'git commit -qam "Shorter delay"',
        'printf "{\\"hypothesis\\":\\"%s\\",\\"summary\\":\\"s\\",\\"next_idea\\":\\"n\\"}" "$leak" > "$HILLCLIMB_RESULT_FILE"',
        '',
      ].join('\n');
      makeToyRepo(
        repo,
        [],
        `${TOY_CONFIG.replace('agent:\n  kind: replay\n  replay: {dir: replay}\n', 'agent:\n  kind: command\n  command:\n    command: ["sh", "agents/evil.sh"]\n')}`,
      );
      mkdirSync(join(repo, 'agents'));
      writeFileSync(join(repo, 'agents', 'evil.sh'), script);
      gitIn(repo, 'add', '-A');
      gitIn(repo, 'commit', '-qm', 'the agent');
      const env = {
        HILLCLIMB_PYTHON: python,
        GITHUB_TOKEN: `ghs_${MARKER}`,
        ACTIONS_RUNTIME_TOKEN: `rt_${MARKER}`,
      };
      hostile = await runActionBundle('iterate', {
        cwd: repo,
        inputs: { 'run-id': runId, iteration: '1', forge: 'local', store: 'local' },
        env,
      });
      // Give the orphan its chance to strike.
      await new Promise((r) => setTimeout(r, 4000));

      // A second agent leaves its change as a link to its own environment.
      writeFileSync(
        join(repo, 'agents', 'evil.sh'),
        '#!/bin/sh\ncd "$HILLCLIMB_WORKDIR"\nsed -i "s/0.02/0.01/" toy/kernel.py\nmkdir -p docs\nrm -f docs/hillclimb-log.md\nln -s /proc/self/environ docs/hillclimb-log.md\n',
      );
      gitIn(repo, 'commit', '-qam', 'the second agent');
      linker = await runActionBundle('iterate', {
        cwd: repo,
        inputs: { 'run-id': runId, iteration: '2', forge: 'local', store: 'local' },
        env,
      });

      // A third agent arms its own repository against whoever runs git there next: a filter driver in
      // its .git/config and attributes, a commit hook, and a changed file that `git add` would feed it.
      writeFileSync(
        join(repo, 'agents', 'evil.sh'),
        [
          '#!/bin/sh',
          'cd "$HILLCLIMB_WORKDIR"',
          `printf '[filter "x"]\\n\\tclean = sh -c "env > ${filterProof}; cat"\\n' >> .git/config`,
          "printf '* filter=x\\n' > .git/info/attributes",
          `printf '#!/bin/sh\\ntouch ${filterProof}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
          "sed -i 's/DELAY_S = 0.02/DELAY_S = 0.009/' toy/kernel.py",
          '',
        ].join('\n'),
      );
      gitIn(repo, 'commit', '-qam', 'the third agent');
      armed = await runActionBundle('iterate', {
        cwd: repo,
        inputs: { 'run-id': runId, iteration: '3', forge: 'local', store: 'local' },
        env,
      });
    }, 300_000);

    it("attack 19: the harness never runs git in the agent's repository (its config, hooks and attributes)", () => {
      expect(armed.code, armed.stdout).toBe(0);
      expect(armed.outputs['candidate-commit']).toMatch(/^[0-9a-f]{40}$/);
      expect(existsSync(filterProof)).toBe(false);
      const ev = JSON.parse(readFileSync(join(bundleOf(repo, 3), 'evidence.json'), 'utf8'));
      expect(ev.candidate.changedPaths).toEqual(['toy/kernel.py']);
    });

    it('attack 13: the agent cannot read the harness environment (GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN)', () => {
      expect(hostile.code, hostile.stdout).toBe(0);
      expect(textUnder(bundleOf(repo, 1))).not.toContain(MARKER);
      expect(hostile.outputs.hypothesis).not.toContain(MARKER);
    });

    it('attack 14: the agent cannot plant a git hook in the repository the harness runs git in', () => {
      expect(existsSync(join(repo, '.git', 'hooks', 'post-checkout'))).toBe(false);
      expect(existsSync('/tmp/pwned')).toBe(false);
    });

    it("attack 15: the agent cannot set the step's outputs", () => {
      // The harness parses the output file strictly: a stray line would have failed the run.
      expect(hostile.outputs.verdict).toBe('');
      expect(hostile.files.output).not.toContain('verdict=improved');
    });

    it('attack 16: a process the agent leaves behind cannot rewrite the bundle after its step', () => {
      expect(processesWith(`${MARKER}-agent-orphan`)).toEqual([]);
      const ev = JSON.parse(readFileSync(join(bundleOf(repo, 1), 'evidence.json'), 'utf8'));
      expect(ev.candidate.changedPaths).toEqual(['toy/kernel.py']);
      expect(ev.isolation.propose.mode).toBe('sandbox');
    });

    it('attack 17: an agent change holding a link is refused, and nothing reads through it', () => {
      expect(linker.code, linker.stdout).toBe(0);
      expect(linker.outputs.verdict).toBe('invalid');
      expect(linker.outputs.reason).toMatch(/docs\/hillclimb-log\.md: a symbolic link/);
      expect(textUnder(bundleOf(repo, 2))).not.toContain(MARKER);
    });
  });

  describe('a job that pretends the sandbox failed', () => {
    it("attack 20: exiting 125 with the init's message is the job's own failure, not infrastructure to retry", async () => {
      const root = join(t.dir, 'fake-125');
      mkdirSync(root, { recursive: true });
      const backend = new LocalBackend({
        root,
        logger: memoryLogger(),
        cacheDir: join(t.dir, 'fake-125-cache'),
      });
      const r = await backend.run({
        id: 'fake-125',
        command: ['sh', '-c', 'echo "hillclimb sandbox: cannot mount a tmpfs" >&2; exit 125'],
        workdir: root,
        timeoutMs: 30_000,
        outputs: {},
        logFile: join(t.dir, 'fake-125.log'),
      });
      expect(r).toMatchObject({ exitCode: 125, isolation: 'sandbox' });
      expect(r.infraError).toBeUndefined();
    });
  });

  describe('the compile cache and the outputs of other jobs', () => {
    it("attack 18: a candidate job cannot poison the champion's compile cache or write another job's outputs", async () => {
      const root = join(t.dir, 'cache-repo');
      mkdirSync(root, { recursive: true });
      const cacheDir = join(t.dir, 'jobs-cache');
      const backend = new LocalBackend({ root, logger: memoryLogger(), cacheDir });
      const champion = join(t.dir, 'champion-out', 'metrics.json');
      mkdirSync(join(t.dir, 'champion-out'));
      writeFileSync(champion, '{"honest": true}\n');
      const run = (cacheKey: string, script: string, metrics: string) =>
        backend.run({
          id: `job-${cacheKey}`,
          command: ['sh', '-c', script, '{cache}', '{metrics}'],
          workdir: root,
          timeoutMs: 30_000,
          outputs: { metrics },
          logFile: join(t.dir, `${cacheKey}.log`),
          cacheKey,
        });
      const candidate = await run(
        'candidate-tree',
        `echo mine > "$0/entry"; for d in "$0"/../*; do echo poison > "$d/entry"; done; echo '{"forged": true}' > ${JSON.stringify(champion)}; echo '{}' > "$1"`,
        join(t.dir, 'candidate-out', 'metrics.json'),
      );
      expect(candidate).toMatchObject({ exitCode: 0, isolation: 'sandbox' });
      // A job with no key (nothing should run without one, but) cannot reach any code's cache either.
      const keyless = await backend.run({
        id: 'job-keyless',
        command: [
          'sh',
          '-c',
          'mkdir -p "$0/../by-code/champion-tree" && echo poison > "$0/../by-code/champion-tree/entry"; echo rc=$?',
          '{cache}',
        ],
        workdir: root,
        timeoutMs: 30_000,
        outputs: {},
        logFile: join(t.dir, 'keyless.log'),
      });
      expect(keyless.exitCode).toBe(0);
      // (Inside, the folders around its own cache are scratch on the sandbox's private /tmp.)
      expect(existsSync(join(cacheDir, 'by-code', 'champion-tree', 'entry'))).toBe(false);
      const champ = await run(
        'champion-tree',
        'cat "$0/entry" 2>/dev/null || echo clean; echo "{}" > "$1"',
        join(t.dir, 'champion-run', 'metrics.json'),
      );
      expect(champ.exitCode).toBe(0);
      expect(readFileSync(join(t.dir, 'champion-tree.log'), 'utf8')).toContain('clean');
      expect(readFileSync(champion, 'utf8')).toBe('{"honest": true}\n');
      // It could write only its own cache: the loop over its siblings found nothing else to poison.
      expect(readFileSync(join(cacheDir, 'by-code', 'candidate-tree', 'entry'), 'utf8')).toBe('poison\n');
      expect(readdirSync(join(cacheDir, 'by-code')).sort()).toEqual(['candidate-tree', 'champion-tree']);
    });
  });
});
