/**
 * Shared set-up for the tests that drive the real agent CLIs (the pinned `@openai/codex` and
 * `@anthropic-ai/claude-code` devDependencies) through hillclimb's adapters: where the binaries are,
 * a fresh repository with an isolated HOME per test, and the environment that keeps them offline: a
 * refusing proxy for every host but loopback, which also records any call the CLI makes that the
 * adapter did not switch off (codex.ts QUIET_CONFIG, claude.ts CLAUDE_QUIET_ENV).
 */
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';
import type { AgentRequest } from '../../src/agent/agent.js';
import { type RefusingProxy, startRefusingProxy } from '../helpers/model-servers/refusing-proxy.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { makeRepo, type TestRepo } from '../workspace/repo.js';
import { KERNEL_FILES } from './setup.js';

const require = createRequire(import.meta.url);

/** The version package.json pins for a devDependency. */
export function pinnedVersion(pkg: '@openai/codex' | '@anthropic-ai/claude-code'): string {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const pin = manifest.devDependencies[pkg];
  if (!pin) throw new Error(`package.json pins no ${pkg}`);
  return pin;
}

function missing(pkg: string): Error {
  return new Error(`${pkg} is not installed in node_modules: run \`npm ci\` (it is a pinned devDependency)`);
}

/** `codex` as npm installs it: the package's launcher, which runs the platform package's binary. */
export function codexBinary(): string {
  const bin = join(REPO_ROOT, 'node_modules', '.bin', 'codex');
  if (!existsSync(bin)) throw missing('@openai/codex');
  return bin;
}

/**
 * `claude` as npm installs it. Its postinstall copies the platform package's native binary over a
 * placeholder script in bin/; where install scripts were skipped, the platform package's binary is
 * used directly (the same file).
 */
export function claudeBinary(): string {
  const platform = `${process.platform}-${process.arch}`;
  try {
    const dir = dirname(require.resolve(`@anthropic-ai/claude-code-${platform}/package.json`));
    const native = join(dir, process.platform === 'win32' ? 'claude.exe' : 'claude');
    if (existsSync(native)) return native;
  } catch {
    // not this platform's package, or not installed: try the bin link
  }
  const bin = join(REPO_ROOT, 'node_modules', '.bin', 'claude');
  if (existsSync(bin) && statSync(bin).size > 1_000_000) return bin;
  throw missing('@anthropic-ai/claude-code');
}

export interface RealAgentFixture {
  repo: TestRepo;
  /** The request, with an isolated HOME (and CODEX_HOME) and the offline environment in `env`. */
  request: AgentRequest;
  home: string;
  proxy: RefusingProxy;
  /** A file beside the repository, outside every folder the agent may write. */
  outside: string;
}

/** Per test file: `setup()` gives a fresh repo, home and proxy, all removed after each test. */
export function useRealAgentFixtures(): (overrides?: Partial<AgentRequest>) => Promise<RealAgentFixture> {
  const made: RealAgentFixture[] = [];
  afterEach(async () => {
    for (const f of made.splice(0)) {
      await f.proxy.close();
      f.repo.cleanup();
    }
  });
  return async (overrides = {}) => {
    const repo = makeRepo(KERNEL_FILES);
    const home = join(repo.base, 'home');
    mkdirSync(join(home, '.codex'), { recursive: true });
    const evidence = join(repo.base, 'evidence', 'i001');
    const proxy = await startRefusingProxy();
    const request: AgentRequest = {
      iteration: 1,
      workdir: repo.root,
      prompt: '# hillclimb iteration 1\nMake one change to kernels/gdn/chunk.py and commit it.\n',
      resultFile: join(evidence, 'result.json'),
      logFile: join(evidence, 'agent.log'),
      timeoutMs: 60_000,
      idleTimeoutMs: 45_000,
      ...overrides,
      env: { HOME: home, CODEX_HOME: join(home, '.codex'), ...proxy.env, ...overrides.env },
    };
    const fixture = { repo, request, home, proxy, outside: join(repo.base, 'outside.txt') };
    made.push(fixture);
    return fixture;
  };
}
