// `hillclimb init` on a terminal: it asks what no flag gave, shows each default, and takes it on an
// empty answer. The terminal is a real pseudo-terminal from util-linux `script`; each answer is typed
// when its question appears (never on a timer).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, selectTarget } from '../../src/config/load.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { makeToyRepo, PIN, PIN_FLAGS } from './scratch.js';

const SCRIPT = ['/usr/bin/script', '/bin/script'].find(existsSync);
let running: ChildProcess | undefined;
// A question that never came leaves the terminal waiting: end it with the test.
afterEach(() => {
  if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
});

/** Run `command` on a pseudo-terminal, answering each question (matched in order) as it appears. */
function onTerminal(command: string, cwd: string, answers: Array<[RegExp, string]>) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(SCRIPT!, ['-qec', command, '/dev/null'], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    running = child;
    let output = '';
    let seen = 0;
    const pending = [...answers];
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const next = pending[0];
      if (!next) return;
      const m = next[0].exec(output.slice(seen));
      if (m) {
        seen += m.index + m[0].length;
        pending.shift();
        child.stdin.write(`${next[1]}\r`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

const cmd = [process.execPath, CLI, 'init', '--target', 'scale', ...PIN_FLAGS].map((a) => `'${a}'`).join(' ');
const TITLE = SCRIPT
  ? 'hillclimb init on a terminal'
  : 'hillclimb init on a terminal (skipped: no util-linux script here to make a pseudo-terminal)';

describe.skipIf(!SCRIPT)(TITLE, () => {
  it('asks, shows the defaults, and writes what was answered', async () => {
    const repo = tempDir('hc-init-tty-');
    try {
      makeToyRepo(repo.dir);
      const r = await onTerminal(cmd, repo.dir, [
        [/Paths the agent may edit[^:]*: /, 'src/mypkg/ops/**'],
        [
          /Correctness command[^\]]*\[\{python\} -m pytest -q -p no:cacheprovider --junitxml=\{junit\}\]: /,
          '',
        ],
        [/Target module[^:]*: /, 'bench.scale_target'],
        [/Verdict metric[^\]]*\[measurements\.fwd\.median_ms\]: /, ''],
        [/Which way is better[^\]]*\[lower\]: /, 'higher'],
        [/Agent \(codex, claude, command, replay\) \[codex\]: /, 'claude'],
        [/pip requirements file[^\]]*\[requirements\.txt\]: /, ''],
        [/Default branch \[main\]: /, ''],
        [
          /Protected paths[^\]]*\[\.github\/\*\*,hillclimb\.yml,hillclimb\/\*\*,tests\/\*\*,requirements\.txt,bench\/scale_target\.py,bench\/scale_target\/\*\*\]: /,
          '',
        ],
      ]);
      expect(r.output).toContain('created  hillclimb.yml');
      expect(r.code).toBe(0);
      // The target came from its flag: never asked.
      expect(r.output).not.toContain('Target name');
      const config = loadConfig(join(repo.dir, 'hillclimb.yml'));
      const target = selectTarget(config);
      expect(target.editable).toEqual(['src/mypkg/ops/**']);
      expect(target.bench.metric.direction).toBe('higher');
      expect(config.agent.kind).toBe('claude');
      expect(target.protected).toContain('bench/scale_target.py');
    } finally {
      repo.cleanup();
    }
  });

  it('asks for the GitHub repository of hillclimb when nothing names it, instead of stopping', async () => {
    const repo = tempDir('hc-init-tty-');
    try {
      makeToyRepo(repo.dir);
      // Only the commit is given, and this checkout has no GitHub remote and no repository field.
      const onlyRef = [process.execPath, CLI, 'init', '--target', 'scale', '--agent', 'replay']
        .concat(['--editable', 'src/mypkg/ops/**', '--programs', 'bench.scale_target'])
        .concat(['--hillclimb-ref', PIN.commit])
        .map((a) => `'${a}'`)
        .join(' ');
      const r = await onTerminal(onlyRef, repo.dir, [
        [/GitHub repository of this hillclimb[^:]*: /, PIN.repository],
        [/Correctness command.*?\]: /, ''],
        [/Verdict metric[^:]*: /, ''],
        [/Which way is better[^:]*: /, ''],
        [/pip requirements file[^:]*: /, ''],
        [/Default branch[^:]*: /, ''],
        [/Protected paths[^:]*: /, ''],
      ]);
      expect(r.output).toContain(`actions pinned to ${PIN.repository}@${PIN.commit}`);
      expect(r.code).toBe(0);
    } finally {
      repo.cleanup();
    }
  });

  it('stops at Ctrl+D with a message, writing nothing', async () => {
    const repo = tempDir('hc-init-tty-');
    try {
      makeToyRepo(repo.dir);
      const r = await onTerminal(cmd, repo.dir, [[/Paths the agent may edit[^:]*: /, '\x04']]);
      expect(r.code).toBe(2);
      expect(r.output).toContain('error: hillclimb init: no answer to "Paths the agent may edit');
      expect(r.output).not.toContain('internal error');
      expect(existsSync(join(repo.dir, 'hillclimb.yml'))).toBe(false);
    } finally {
      repo.cleanup();
    }
  });
});
