/**
 * The key check before a run (src/agent/model-api.ts), against the fake model APIs' documented
 * `GET /v1/models`, and through `runLoop`: a refused key or an endpoint that is not there stops the run
 * in seconds, before the lock, the run folder or the champion's profile.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { checkModelApi, modelApiCheck } from '../../src/agent/model-api.js';
import { runLoop } from '../../src/loop/drivers/run.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { startMessagesServer } from '../helpers/model-servers/anthropic-messages.js';
import { startResponsesServer } from '../helpers/model-servers/openai-responses.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { codexBinary } from './real-cli.js';

const OPENAI_KEY = 'sk-test-check-0123456789';
const ANTHROPIC_KEY = 'sk-ant-test-check-0123456789';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});
const noSleep = async () => undefined;

async function openai() {
  const s = await startResponsesServer({ apiKey: OPENAI_KEY, replies: [] });
  closers.push(s.close);
  return s;
}

/** A port nothing listens on. */
async function closedUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

async function refusal(p: Promise<void>): Promise<HillclimbError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HillclimbError);
  return e as HillclimbError;
}

describe('the model API check', () => {
  it('codex: a valid key passes with one request to the model list', async () => {
    const s = await openai();
    await checkModelApi('codex', { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: s.baseUrl }, memoryLogger());
    expect(s.violations).toEqual([]);
    expect(s.requests).toEqual([]); // no model turn was spent
  });

  it('codex: a refused key is a setup error naming the variable and the endpoint', async () => {
    const s = await openai();
    const env = { OPENAI_API_KEY: 'sk-wrong-0123456789', OPENAI_BASE_URL: s.baseUrl };
    const e = await refusal(checkModelApi('codex', env, memoryLogger()));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe(
      `agent codex: the model API refused the credentials (401 from ${s.baseUrl}/models)`,
    );
    expect(e.hint).toContain('OPENAI_API_KEY (passed to codex as CODEX_API_KEY');
    expect(`${e.message} ${e.hint}`).not.toContain('sk-wrong');
  });

  it('claude: a refused key is a setup error; a valid one passes with anthropic-version sent', async () => {
    const s = await startMessagesServer({ apiKey: ANTHROPIC_KEY, replies: [] });
    closers.push(s.close);
    await checkModelApi(
      'claude',
      { ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: s.baseUrl },
      memoryLogger(),
    );
    expect(s.violations).toEqual([]);
    const e = await refusal(
      checkModelApi('claude', { ANTHROPIC_API_KEY: 'nope', ANTHROPIC_BASE_URL: s.baseUrl }, memoryLogger()),
    );
    expect(e.exitCode).toBe(2);
    expect(e.hint).toContain('ANTHROPIC_API_KEY was refused');
  });

  it('an endpoint that refuses connections is reported after a second try, naming the URL variable', async () => {
    const url = await closedUrl();
    let slept = 0;
    const e = await refusal(
      checkModelApi(
        'codex',
        { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: url },
        memoryLogger(),
        async () => {
          slept++;
        },
      ),
    );
    expect(slept).toBe(1);
    expect(e.exitCode).toBe(1);
    expect(e.message).toBe(`agent codex: cannot reach the model API at ${url}/models: connection refused`);
    expect(e.hint).toBe(
      'check OPENAI_BASE_URL, and that this machine reaches it directly: hillclimb holds the key and ' +
        'connects without an HTTP proxy (HTTPS_PROXY is not used; one in agent.pass_env does not help)',
    );
  });

  it('any other answer (a proxy without the list: 404; 429; 5xx) lets the run go on', async () => {
    for (const status of [404, 429, 503]) {
      const s = createServer((_req, res) => res.writeHead(status).end());
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
      try {
        await checkModelApi('codex', { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: base }, memoryLogger());
      } finally {
        await new Promise<void>((r) => s.close(() => r()));
      }
    }
  });

  it('no key to send (a ChatGPT login, an OAuth token, the other agents): nothing is checked', () => {
    expect(modelApiCheck('codex', {})).toBeUndefined();
    expect(modelApiCheck('claude', { CLAUDE_CODE_OAUTH_TOKEN: 'tok' })).toBeUndefined();
    expect(modelApiCheck('command', { OPENAI_API_KEY: OPENAI_KEY })).toBeUndefined();
    expect(modelApiCheck('codex', { OPENAI_API_KEY: OPENAI_KEY })?.url).toBe(
      'https://api.openai.com/v1/models',
    );
    expect(modelApiCheck('claude', { ANTHROPIC_API_KEY: 'k' })?.url).toBe(
      'https://api.anthropic.com/v1/models',
    );
  });
});

describe('the check before a loop', () => {
  const t = tempDir('hc-model-api-loop-');
  const saved = {
    key: process.env.OPENAI_API_KEY,
    url: process.env.OPENAI_BASE_URL,
    python: process.env.HILLCLIMB_PYTHON,
  };
  process.env.HILLCLIMB_PYTHON = systemPython();
  afterAll(() => {
    for (const [k, v] of [
      ['OPENAI_API_KEY', saved.key],
      ['OPENAI_BASE_URL', saved.url],
      ['HILLCLIMB_PYTHON', saved.python],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    t.cleanup();
  });

  it('a refused key and an unreachable endpoint stop the loop in seconds, before anything is started', async () => {
    const repo = join(t.dir, 'repo');
    makeToyRepo(
      repo,
      [],
      TOY_CONFIG.replace(
        'agent:\n  kind: replay\n  replay: {dir: replay}\n',
        `agent:\n  kind: codex\n  codex: {binary: "${codexBinary()}", model: gpt-5.5}\n`,
      ),
    );
    const s = await openai();
    const loop = () =>
      runLoop({ configFile: join(repo, 'hillclimb.yml'), logger: memoryLogger(), sleep: noSleep });

    process.env.OPENAI_API_KEY = 'sk-wrong-0123456789';
    process.env.OPENAI_BASE_URL = s.baseUrl;
    let started = Date.now();
    const refused = await loop().catch((e: unknown) => e);
    expect((refused as HillclimbError).message).toMatch(
      /^agent codex: the model API refused the credentials/,
    );
    expect(Date.now() - started).toBeLessThan(5000);

    process.env.OPENAI_API_KEY = OPENAI_KEY;
    process.env.OPENAI_BASE_URL = await closedUrl();
    started = Date.now();
    const unreachable = await loop().catch((e: unknown) => e);
    expect((unreachable as HillclimbError).message).toMatch(/^agent codex: cannot reach the model API/);
    expect(Date.now() - started).toBeLessThan(10_000);
    // No run was started: no run folder, no lock left.
    expect(existsSync(join(repo, '.hillclimb', 'runs'))).toBe(false);
  });
});
