/**
 * The real `codex` and `claude` binaries as the loop's agent, on the toy target, against fake model
 * APIs that fail the way real ones do and then recover: a 429, a 529 that goes on, an endpoint that
 * refuses connections. Each iteration must complete (the loop retries the propose step, each attempt in
 * its own output folder), never crash. The adapters' own classification of these failures is tested in
 * tests/agent/*.real.int.test.ts; here the point is what the loop does next.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { claudeBinary, codexBinary } from '../agent/real-cli.js';
import { type MessagesServer, startMessagesServer } from '../helpers/model-servers/anthropic-messages.js';
import { type ResponsesServer, startResponsesServer } from '../helpers/model-servers/openai-responses.js';
import { tempDir } from '../helpers/paths.js';
import { userEnvironment } from '../helpers/user-env.js';
import { makeToyRepo, systemPython, TOY_CONFIG } from './toy-repo.js';

const OPENAI_KEY = 'sk-test-loop-codex-0123456789';
const ANTHROPIC_KEY = 'sk-ant-test-loop-0123456789';
const RESULT = { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Fuse.' };
const python = systemPython();

const PATCH = `*** Begin Patch
*** Update File: toy/kernel.py
@@
-DELAY_S = 0.02
+DELAY_S = 0.008
*** End Patch
`;

/** The toy config with a real CLI as the agent, and short limits so a failing API ends in seconds. */
function agentConfig(agent: string): string {
  return TOY_CONFIG.replace(
    'agent:\n  kind: replay\n  replay: {dir: replay}\n',
    `agent:\n  timeout_minutes: 2\n  idle_timeout_minutes: 1\n  api_retry_limit_minutes: 0.05\n  unreachable_limit_seconds: 2\n${agent}`,
  );
}

const env = userEnvironment();
const userEnv = env.set;

describe('the real CLIs through the loop: a model API that fails, then answers', { timeout: 180_000 }, () => {
  const t = tempDir('hc-real-agents-');
  const servers: Array<ResponsesServer | MessagesServer> = [];
  beforeAll(() => {
    const home = join(t.dir, 'codex-home');
    mkdirSync(home, { recursive: true });
    userEnv({ HILLCLIMB_PYTHON: python, CODEX_HOME: home });
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  afterAll(() => {
    env.restore();
    t.cleanup();
  });

  const loop = (repo: string, sleep: () => Promise<void> = async () => undefined) =>
    runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      sleep,
      overrides: { 'loop.iterations': 1 },
    });
  const codexConfig = agentConfig(`  kind: codex\n  codex: {binary: "${codexBinary()}", model: gpt-5.5}\n`);

  it('codex: a 429, then the model answers: the retried attempt completes the iteration', async () => {
    const server = await startResponsesServer({
      apiKey: OPENAI_KEY,
      replies: [
        {
          status: 429,
          error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
        },
        { customToolCall: { name: 'apply_patch', input: PATCH } },
        { message: JSON.stringify(RESULT) },
      ],
    });
    servers.push(server);
    userEnv({ OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.baseUrl });
    const repo = join(t.dir, 'codex-429');
    makeToyRepo(repo, [], codexConfig);
    const r = await loop(repo);
    const it1 = r.iterations[0]!;
    expect(server.violations).toEqual([]);
    expect(it1.verdict).toBe('improved');
    expect(it1.evidence.agent).toMatchObject({ kind: 'codex', status: 'finished', attempts: 2 });
    expect(it1.evidence.agent!.earlier![0]!.infraError).toMatch(/429/);
    expect(it1.evidence.candidate?.changedPaths).toEqual(['toy/kernel.py']);
  });

  it('codex: connection refused, then the API is up: the retried attempt completes the iteration', async () => {
    // Up for the harness's key check before the run, down from then on until the loop's backoff.
    const first: ResponsesServer = await startResponsesServer({
      apiKey: OPENAI_KEY,
      replies: [],
      onModelList: () => void first.close(),
    });
    const port = Number(new URL(first.baseUrl).port);
    userEnv({ OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: first.baseUrl });
    const repo = join(t.dir, 'codex-refused');
    makeToyRepo(repo, [], codexConfig);
    // Between the attempts (the loop's backoff), the API comes up where the first attempt found nothing.
    const r = await loop(repo, async () => {
      if (servers.length > 0) return;
      servers.push(
        await startResponsesServer({
          apiKey: OPENAI_KEY,
          port,
          replies: [
            { customToolCall: { name: 'apply_patch', input: PATCH } },
            { message: JSON.stringify(RESULT) },
          ],
        }),
      );
    });
    const it1 = r.iterations[0]!;
    expect(it1.verdict).toBe('improved');
    expect(it1.evidence.agent).toMatchObject({ status: 'finished', attempts: 2 });
    expect(it1.evidence.agent!.earlier![0]!.infraError).toMatch(
      /^the model API (?:was unreachable|kept failing) for [23] s/,
    );
  });

  const claudeConfig = () =>
    agentConfig(
      `  kind: claude\n  claude:\n    binary: "${claudeBinary()}"\n    model: opus\n    allowed_tools: ["Bash(sed:*)", "Bash(git commit:*)"]\n`,
    );
  const claudeReplies = [
    {
      toolUse: {
        name: 'Bash',
        input: { command: "sed -i 's/DELAY_S = 0.02/DELAY_S = 0.008/' toy/kernel.py", description: 'Edit' },
      },
    },
    {
      toolUse: { name: 'Bash', input: { command: 'git commit -am "Shorter delay"', description: 'Commit' } },
    },
    { text: JSON.stringify(RESULT) },
  ];

  it('claude: connection refused, then the API is up: the retried attempt completes the iteration', async () => {
    const first: MessagesServer = await startMessagesServer({
      apiKey: ANTHROPIC_KEY,
      replies: [],
      onModelList: () => void first.close(),
    });
    const port = Number(new URL(first.baseUrl).port);
    userEnv({ ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: first.baseUrl });
    const repo = join(t.dir, 'claude-refused');
    makeToyRepo(repo, [], claudeConfig());
    const r = await loop(repo, async () => {
      if (servers.length > 0) return;
      servers.push(await startMessagesServer({ apiKey: ANTHROPIC_KEY, port, replies: claudeReplies }));
    });
    const it1 = r.iterations[0]!;
    expect(it1.verdict).toBe('improved');
    expect(it1.evidence.agent).toMatchObject({ kind: 'claude', status: 'finished', attempts: 2 });
    expect(it1.evidence.agent!.earlier![0]!.infraError).toMatch(
      /no HTTP response|Connection refused|Unable to connect/,
    );
  });

  it('claude: 529 Overloaded that goes on, then the API recovers: the retried attempt completes the iteration', async () => {
    let overloaded = true;
    const server = await startMessagesServer({
      apiKey: ANTHROPIC_KEY,
      replies: claudeReplies,
      // Every request is refused 529 until the loop's backoff (below) ends the outage.
      overloaded: () => overloaded,
    });
    servers.push(server);
    userEnv({ ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: server.baseUrl });
    const repo = join(t.dir, 'claude-529');
    makeToyRepo(repo, [], claudeConfig());
    const r = await loop(repo, async () => {
      overloaded = false;
    });
    const it1 = r.iterations[0]!;
    expect(server.violations).toEqual([]);
    expect(it1.verdict).toBe('improved');
    expect(it1.evidence.agent).toMatchObject({ kind: 'claude', status: 'finished', attempts: 2 });
    // Claude Code gives up by itself after a few 529s in a row (or the harness stops it after
    // agent.api_retry_limit_minutes): either way the attempt is infrastructure, and the loop retries it.
    expect(it1.evidence.agent!.earlier![0]!.infraError).toMatch(/529/);
  });
});
