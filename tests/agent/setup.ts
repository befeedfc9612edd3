// Shared set-up for the agent adapter tests: a real repo, request paths, the fakes first on PATH.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { AgentRequest } from '../../src/agent/agent.js';
import { makeRepo, type TestRepo } from '../workspace/repo.js';

export const FIXTURES = join(import.meta.dirname, 'fixtures');

export const KERNEL_FILES = {
  'kernels/gdn/chunk.py': 'def chunk(x):\n    return x\n',
  'kernels/harness/spec.json': '{"atol": 1e-5}\n',
};

/** Put the fake `codex` and `claude` first on PATH; returns the undo. */
export function fakesFirstOnPath(): () => void {
  const old = process.env.PATH;
  process.env.PATH = `${FIXTURES}:${old ?? ''}`;
  return () => {
    process.env.PATH = old;
  };
}

export interface AgentFixture {
  repo: TestRepo;
  request: AgentRequest;
  recordFile: string;
  /** What the fake recorded: argv, env, cwd, stdin. */
  record(): { argv: string[]; env: Record<string, string>; cwd: string; stdin: string };
}

/** A repo plus a request whose prompt tells the fake which `mode` to play. */
export function agentFixture(mode: string, overrides: Partial<AgentRequest> = {}): AgentFixture {
  const repo = makeRepo(KERNEL_FILES);
  const evidence = join(repo.base, 'evidence', 'i001');
  const resultFile = join(evidence, 'result.json');
  const recordFile = join(repo.base, 'record.json');
  const request: AgentRequest = {
    iteration: 1,
    workdir: repo.root,
    prompt: `# hillclimb iteration 1\nfake: ${mode}\nresult_file: ${resultFile}\nMake one change.\n`,
    resultFile,
    logFile: join(evidence, 'agent.log'),
    timeoutMs: 30_000,
    idleTimeoutMs: 20_000,
    env: { FAKE_RECORD: recordFile },
    ...overrides,
  };
  return {
    repo,
    request,
    recordFile,
    record: () => {
      if (!existsSync(recordFile)) throw new Error('the fake agent did not run (no record)');
      return JSON.parse(readFileSync(recordFile, 'utf8'));
    },
  };
}

/**
 * For a test file of one adapter: the fakes first on PATH for the whole file, and a `setup(mode)`
 * whose repos are removed after each test.
 */
export function useAgentFixtures(): (mode: string, overrides?: Partial<AgentRequest>) => AgentFixture {
  const fixtures: AgentFixture[] = [];
  let restorePath: () => void;
  beforeAll(() => {
    restorePath = fakesFirstOnPath();
  });
  afterAll(() => restorePath());
  afterEach(() => {
    for (const f of fixtures.splice(0)) f.repo.cleanup();
  });
  return (mode, overrides = {}) => {
    const f = agentFixture(mode, overrides);
    fixtures.push(f);
    return f;
  };
}
