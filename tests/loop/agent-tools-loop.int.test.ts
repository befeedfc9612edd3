/**
 * Issue 38's acceptance, through the whole loop on the toy target: the real `codex` and `claude`
 * binaries, driven by scripted model APIs, make a change that is wrong, call `check` (the harness's
 * export and verifier on a snapshot of their tree), read that it fails, fix the kernel, `check` again,
 * `screen` it against the champion, and finish. The iteration ends `improved`; the calls are journalled
 * in the evidence and counted in the PR comment, and no answer became evidence. The same script without
 * the tools commits the wrong kernel and ends `invalid`.
 *
 * The scripts are fixed (a fake model does not read), so what shows the tools at work is what the
 * model API was sent: each answer, in the request after the call.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { claudeBinary, codexBinary } from '../agent/real-cli.js';
import { type MessagesServer, startMessagesServer } from '../helpers/model-servers/anthropic-messages.js';
import { type ResponsesServer, startResponsesServer } from '../helpers/model-servers/openai-responses.js';
import { tempDir } from '../helpers/paths.js';
import { userEnvironment } from '../helpers/user-env.js';
import { makeToyRepo, TOY_CONFIG } from './toy-repo.js';

const OPENAI_KEY = 'sk-test-loop-tools-0123456789';
const ANTHROPIC_KEY = 'sk-ant-test-loop-tools-0123456789';
const RESULT = { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Fuse.' };
const python = execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();

/** The faster kernel with the wrong factor: what the model writes first. */
const WRONG = `*** Begin Patch
*** Update File: toy/kernel.py
@@
-DELAY_S = 0.02
+DELAY_S = 0.008
@@
-    return [2 * x for x in xs]
+    return [3 * x for x in xs]
*** End Patch
`;
const FIX = `*** Begin Patch
*** Update File: toy/kernel.py
@@
-    return [3 * x for x in xs]
+    return [2 * x for x in xs]
*** End Patch
`;

function agentConfig(agent: string, tools: boolean): string {
  return TOY_CONFIG.replace(
    'agent:\n  kind: replay\n  replay: {dir: replay}\n',
    `agent:\n  timeout_minutes: 2\n  idle_timeout_minutes: 1\n  tools: {enabled: ${tools}}\n${agent}`,
  );
}

const env = userEnvironment();
const userEnv = env.set;

describe('the agent tools through the loop, with the real CLIs', { timeout: 180_000 }, () => {
  const t = tempDir('hc-tools-loop-');
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

  const loop = async (repo: string) => {
    const r = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      sleep: async () => undefined,
      overrides: { 'loop.iterations': 1 },
    });
    return { r, it1: r.iterations[0]! };
  };

  /** The sticky comment of the iteration's PR. */
  const comment = (stateDir: string) => {
    const [pr] = listLocalPulls(stateDir);
    return showLocalPull(stateDir, pr!.number)!.comments[0]!.body;
  };

  it('codex: a wrong kernel fails check, the fix passes and screens faster, and the iteration ends improved', async () => {
    const tool = (name: string, args: Record<string, unknown> = {}) => ({
      functionCall: { name, namespace: 'mcp__hillclimb', arguments: args },
    });
    const server = await startResponsesServer({
      apiKey: OPENAI_KEY,
      replies: [
        { customToolCall: { name: 'apply_patch', input: WRONG } },
        { toolSearch: { query: 'hillclimb check screen' } },
        tool('check'),
        { customToolCall: { name: 'apply_patch', input: FIX } },
        tool('check'),
        tool('screen', { rounds: 3 }),
        { message: JSON.stringify(RESULT) },
      ],
    });
    servers.push(server);
    userEnv({ OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.baseUrl });
    const repo = join(t.dir, 'codex');
    makeToyRepo(
      repo,
      [],
      agentConfig(`  kind: codex\n  codex: {binary: "${codexBinary()}", model: gpt-5.5}\n`, true),
    );
    const { r, it1 } = await loop(repo);

    expect(server.violations).toEqual([]);
    expect(it1.verdict).toBe('improved');
    const calls = it1.evidence.tools!.calls;
    expect(calls.map((c) => [c.tool, c.isError])).toEqual([
      ['check', true],
      ['check', false],
      ['screen', false],
    ]);
    // The prompt told it of the tools and their budget.
    expect(JSON.stringify(server.requests[0]!.body.input)).toContain(
      "The harness's tools (MCP server `hillclimb`)",
    );
    // What the model was told, in the request after each call.
    const sent = JSON.stringify(server.requests.map((q) => q.body.input));
    expect(sent).toContain('check: failed verification on the CPU: 1 of 1 program(s)');
    expect(sent).toContain('check: passed: 1 program(s)');
    expect(sent).toContain('screen (advisory, never evidence)');
    // The committed tree is the one the last check passed.
    expect(calls[1]!.tree).toBe(calls[2]!.tree);
    expect(comment(r.stateDir)).toMatch(
      /#### Agent tools\n\nThe agent checked 2 times, screened once \(2 distinct tree\(s\), /,
    );
  });

  it('codex: the same script without the tools commits the wrong kernel, and the iteration ends invalid', async () => {
    const server = await startResponsesServer({
      apiKey: OPENAI_KEY,
      replies: [
        { customToolCall: { name: 'apply_patch', input: WRONG } },
        { message: JSON.stringify(RESULT) },
      ],
    });
    servers.push(server);
    userEnv({ OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.baseUrl });
    const repo = join(t.dir, 'codex-no-tools');
    makeToyRepo(
      repo,
      [],
      agentConfig(`  kind: codex\n  codex: {binary: "${codexBinary()}", model: gpt-5.5}\n`, false),
    );
    const { it1 } = await loop(repo);
    expect(it1.verdict).toBe('invalid');
    expect(it1.evidence.tools).toBeUndefined();
    // Neither the prompt nor codex's configuration named a tool server.
    expect(JSON.stringify(server.requests[0]!.body.input)).not.toContain("The harness's tools");
    expect(JSON.stringify(server.requests[0]!.body.input)).not.toContain('mcp__hillclimb');
  });

  it('claude: the same path, through mcp__hillclimb__check and __screen, ends improved', async () => {
    const file = 'toy/kernel.py';
    const server = await startMessagesServer({
      apiKey: ANTHROPIC_KEY,
      replies: [
        {
          toolUse: {
            name: 'Bash',
            input: {
              command: `sed -i 's/DELAY_S = 0.02/DELAY_S = 0.008/; s/return \\[2 \\* x/return [3 * x/' ${file}`,
              description: 'Edit',
            },
          },
        },
        { toolUse: { name: 'mcp__hillclimb__check', input: {} } },
        {
          toolUse: {
            name: 'Bash',
            input: { command: `sed -i 's/return \\[3 \\* x/return [2 * x/' ${file}`, description: 'Fix' },
          },
        },
        { toolUse: { name: 'mcp__hillclimb__check', input: {} } },
        { toolUse: { name: 'mcp__hillclimb__screen', input: { rounds: 3 } } },
        { text: JSON.stringify(RESULT) },
      ],
    });
    servers.push(server);
    userEnv({ ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: server.baseUrl });
    const repo = join(t.dir, 'claude');
    makeToyRepo(
      repo,
      [],
      agentConfig(
        `  kind: claude\n  claude:\n    binary: "${claudeBinary()}"\n    model: opus\n    allowed_tools: ["Bash(sed:*)"]\n`,
        true,
      ),
    );
    const { r, it1 } = await loop(repo);
    expect(server.violations).toEqual([]);
    expect(it1.verdict).toBe('improved');
    expect(it1.evidence.tools!.calls.map((c) => [c.tool, c.isError])).toEqual([
      ['check', true],
      ['check', false],
      ['screen', false],
    ]);
    const sent = JSON.stringify(server.requests.filter((q) => q.agentTurn).map((q) => q.body.messages));
    expect(sent).toContain('check: failed verification on the CPU');
    expect(sent).toContain('screen (advisory, never evidence)');
    expect(comment(r.stateDir)).toContain('#### Agent tools');
  });
});
