// Puts tests/compute/fixtures/fake-gcloud first on PATH for this test process (and the CLIs it starts),
// with a scenario, a call log and a "remote" home. CLOUDSDK_CONFIG points at an empty folder, so even
// a real gcloud reached by mistake would have no credentials: no test can make a cloud call.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/exec/exec.js';
import { tempDir } from '../helpers/paths.js';

export const FAKE_GCLOUD_DIR = join(import.meta.dirname, 'fixtures', 'fake-gcloud');

export interface FakeRule {
  /** Words after "tpus", e.g. "queued-resources create". */
  cmd: string;
  zone?: string;
  name?: string;
  replies?: Array<{ exit?: number; stdout?: unknown; stderr?: string; sleepMs?: number }>;
  /** ssh/scp: execute against the fake remote home. */
  run?: boolean;
}

export interface FakeGcloud {
  /** The fake remote home folder. */
  home: string;
  /** Scratch folder for the test (state dirs, outputs). */
  scratch: string;
  /** Replace the scenario (and reset its reply counters). */
  scenario(rules: FakeRule[]): void;
  /** Every argv the fake received, in order. */
  calls(): string[][];
  /** Calls whose words after "tpus" are `cmd`. */
  callsOf(cmd: string): string[][];
  /** Environment for child processes (the CLI) that must see the same fake. */
  env: Record<string, string>;
  restore(): void;
}

const VARS = [
  'PATH',
  'FAKE_GCLOUD_LOG',
  'FAKE_GCLOUD_SCENARIO',
  'FAKE_GCLOUD_HOME',
  'CLOUDSDK_CONFIG',
] as const;

export function useFakeGcloud(): FakeGcloud {
  const t = tempDir('hc-gcloud-');
  const home = join(t.dir, 'remote-home');
  const scratch = join(t.dir, 'scratch');
  mkdirSync(home);
  mkdirSync(scratch);
  mkdirSync(join(t.dir, 'cloudsdk'));
  const log = join(t.dir, 'calls.jsonl');
  const scenarioFile = join(t.dir, 'scenario.json');
  writeFileSync(log, '');
  writeFileSync(scenarioFile, '{"rules": []}');
  const saved = Object.fromEntries(VARS.map((k) => [k, process.env[k]]));
  const env = {
    PATH: `${FAKE_GCLOUD_DIR}:${process.env.PATH ?? ''}`,
    FAKE_GCLOUD_LOG: log,
    FAKE_GCLOUD_SCENARIO: scenarioFile,
    FAKE_GCLOUD_HOME: home,
    CLOUDSDK_CONFIG: join(t.dir, 'cloudsdk'),
  };
  Object.assign(process.env, env);
  const calls = (): string[][] =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { argv: string[] }).argv);
  return {
    home,
    scratch,
    env,
    scenario(rules) {
      writeFileSync(scenarioFile, JSON.stringify({ rules }));
      rmSync(`${scenarioFile}.state.json`, { force: true });
    },
    calls,
    callsOf(cmd) {
      return calls().filter((a) => {
        const i = a.indexOf('tpus');
        return i !== -1 && `${a[i + 1]} ${a[i + 2]}` === cmd;
      });
    },
    restore() {
      for (const k of VARS) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      t.cleanup();
    },
  };
}

/** The gcloud a spawned process would run, as the shell resolves it. */
export async function resolvedGcloud(): Promise<string> {
  return (await run('sh', ['-c', 'command -v gcloud'])).stdout.trim();
}
