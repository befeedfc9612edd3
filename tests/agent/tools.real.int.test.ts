/**
 * The real `codex` and `claude` binaries reach the harness's tools (src/agent/mcp-server.ts) the way the
 * adapters configure them, in the harness's sandbox where this machine has one (so every call goes
 * through the key proxy's UNIX-socket forward): a scripted model calls `check`, which fails, fixes the
 * kernel, calls `check` again, which passes, and finishes. The stub tools see both calls, and the model
 * sees each answer's text in its next request. codex also runs in its own workspace-write sandbox (no
 * harness sandbox), the one place where its default approval mode would refuse the call. These fail
 * when a CLI upgrade changes how it names an MCP server's tools, what it needs to run them without
 * asking, or the protocol revision it speaks.
 */
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentRequest } from '../../src/agent/agent.js';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { CodexAgent } from '../../src/agent/agents/codex.js';
import { sandboxAvailability } from '../../src/exec/sandbox.js';
import { memoryLogger } from '../../src/util/log.js';
import { type MessagesServer, startMessagesServer } from '../helpers/model-servers/anthropic-messages.js';
import { type ResponsesServer, startResponsesServer } from '../helpers/model-servers/openai-responses.js';
import { claudeBinary, codexBinary, type RealAgentFixture, useRealAgentFixtures } from './real-cli.js';
import { stubTools } from './stub-tools.js';

const OPENAI_KEY = 'sk-test-codex-0123456789';
const ANTHROPIC_KEY = 'sk-ant-test-0123456789';
const RESULT = { hypothesis: 'The scale was wrong.', summary: 'Scale by one.', next_idea: 'Tile V.' };
const FAILS = 'fails: chunk_fwd@small, max error 0.8 (atol 1e-5)';
const PASSES = 'passes: every program at the gate shapes';

const setup = useRealAgentFixtures();
const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c.close();
});

/** The request in the harness's sandbox where there is one (as the loop runs agents), with the tools. */
async function sandboxed(f: RealAgentFixture, env: Record<string, string>): Promise<AgentRequest> {
  const out = dirname(f.request.resultFile);
  mkdirSync(out, { recursive: true });
  const available = await sandboxAvailability();
  return {
    ...f.request,
    env: { ...f.request.env, ...env },
    tools: stubTools({ check: [FAILS, PASSES] }),
    ...(available.available
      ? { isolation: { sandbox: { readOnly: [], writable: [f.repo.root, out], home: join(out, 'home') } } }
      : {}),
  };
}

const toolCalls = (request: AgentRequest) =>
  (request.tools as ReturnType<typeof stubTools>).calls.map((c) => [c.name, c.args]);

describe('the agent CLIs call the harness’s tools', { timeout: 60_000 }, () => {
  it.each([
    ['in the harness’s sandbox (danger-full-access inside)', true],
    ['in its own workspace-write sandbox', false],
  ])(
    'codex %s: finds them with tool_search (namespace mcp__hillclimb), runs them without asking, reads the answers',
    async (_where, harnessSandbox) => {
      const f = await setup();
      const file = 'kernels/gdn/chunk.py';
      const check = { functionCall: { name: 'check', namespace: 'mcp__hillclimb', arguments: {} } };
      const server: ResponsesServer = await startResponsesServer({
        apiKey: OPENAI_KEY,
        replies: [
          { toolSearch: { query: 'hillclimb check kernel' } },
          check,
          {
            customToolCall: {
              name: 'apply_patch',
              input: `*** Begin Patch\n*** Update File: ${file}\n@@\n def chunk(x):\n-    return x\n+    return x * 1\n*** End Patch\n`,
            },
          },
          check,
          { message: JSON.stringify(RESULT) },
        ],
      });
      closers.push(server);
      const { isolation, ...unsandboxed } = await sandboxed(f, {
        OPENAI_API_KEY: OPENAI_KEY,
        OPENAI_BASE_URL: server.baseUrl,
      });
      const request: AgentRequest = harnessSandbox ? { ...unsandboxed, isolation } : unsandboxed;
      const logger = memoryLogger();
      // By its real path: in a checkout whose node_modules is a link, the sandbox binds what it points at.
      const binary = realpathSync(codexBinary());
      const agent = new CodexAgent({
        binary,
        model: 'gpt-5.5',
        extraArgs: [],
        passEnv: [],
        logger,
        sourceEnv: {},
      });
      const outcome = await agent.run(request);

      expect(outcome.status, readFileSync(f.request.logFile, 'utf8').slice(-2000)).toBe('finished');
      expect(outcome.result).toEqual(RESULT);
      expect(outcome.isolation).toBe(request.isolation ? 'sandbox' : 'none');
      expect(server.violations).toEqual([]);
      expect(toolCalls(request)).toEqual([
        ['check', {}],
        ['check', {}],
      ]);
      // codex 0.169 defers an MCP server's tools: the model sees tool_search, and the search's output
      // lists them under the namespace the calls name.
      const tools = (server.requests[0]!.body.tools as Array<{ type: string; name?: string }>).map(
        (t) => t.name ?? t.type,
      );
      expect(tools).toContain('tool_search');
      expect(tools).not.toContain('mcp__hillclimb__check');
      const input = (n: number) => server.requests[n]!.body.input as Array<Record<string, unknown>>;
      const found = input(1).find((i) => i.type === 'tool_search_output') as { tools: unknown } | undefined;
      expect(found?.tools).toEqual([
        expect.objectContaining({
          type: 'namespace',
          name: 'mcp__hillclimb',
          tools: [expect.objectContaining({ name: 'check' }), expect.objectContaining({ name: 'ledger' })],
        }),
      ]);
      // The model read each answer in its next request.
      const answer = (n: number) =>
        JSON.stringify(input(n).find((i) => i.type === 'function_call_output')?.output);
      expect(answer(2)).toContain(FAILS);
      expect(answer(4)).toContain(PASSES);
      expect(readFileSync(join(f.repo.root, file), 'utf8')).toBe('def chunk(x):\n    return x * 1\n');
      expect(logger.lines).toEqual([]);
    },
  );

  it('codex: without default_tools_approval_mode="approve", in its own workspace-write sandbox, exec refuses the call', async () => {
    const f = await setup();
    const server: ResponsesServer = await startResponsesServer({
      apiKey: OPENAI_KEY,
      replies: [
        { toolSearch: { query: 'hillclimb check' } },
        { functionCall: { name: 'check', namespace: 'mcp__hillclimb', arguments: {} } },
        { message: JSON.stringify(RESULT) },
      ],
    });
    closers.push(server);
    // Outside the harness's sandbox codex runs in its own workspace-write sandbox, where `auto` (its
    // default mode, which a user's -c after the adapter's restores) asks, and exec, which never asks,
    // refuses. (Inside, with danger-full-access, `auto` would run it.)
    const { isolation: _none, ...request } = await sandboxed(f, {
      OPENAI_API_KEY: OPENAI_KEY,
      OPENAI_BASE_URL: server.baseUrl,
    });
    const agent = new CodexAgent({
      binary: realpathSync(codexBinary()),
      model: 'gpt-5.5',
      extraArgs: ['-c', 'mcp_servers.hillclimb.default_tools_approval_mode="auto"'],
      passEnv: [],
      logger: memoryLogger(),
      sourceEnv: {},
    });
    const outcome = await agent.run(request);
    expect(outcome.status).toBe('finished');
    expect(toolCalls(request)).toEqual([]);
    const output = (server.requests[2]!.body.input as Array<Record<string, unknown>>).find(
      (i) => i.type === 'function_call_output',
    );
    expect(JSON.stringify(output?.output)).toContain(
      'MCP tool call requires approval, but approval policy is never',
    );
  });

  it('claude: has them in its tool list as mcp__hillclimb__*, allowed, and reads the answers', async () => {
    const f = await setup();
    const file = join(f.repo.root, 'kernels/gdn/chunk.py');
    const check = { toolUse: { name: 'mcp__hillclimb__check', input: {} } };
    const server: MessagesServer = await startMessagesServer({
      apiKey: ANTHROPIC_KEY,
      replies: [
        check,
        {
          toolUse: {
            name: 'Edit',
            input: { file_path: file, old_string: '    return x\n', new_string: '    return x * 1\n' },
          },
        },
        check,
        { text: JSON.stringify(RESULT) },
      ],
    });
    closers.push(server);
    const request = await sandboxed(f, {
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_BASE_URL: server.baseUrl,
    });
    const logger = memoryLogger();
    const agent = new ClaudeAgent({
      binary: claudeBinary(),
      model: 'opus',
      allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
      extraArgs: [],
      passEnv: [],
      logger,
      sourceEnv: {},
    });
    const outcome = await agent.run(request);

    expect(outcome.status, readFileSync(f.request.logFile, 'utf8').slice(-2000)).toBe('finished');
    expect(outcome.result).toEqual(RESULT);
    expect(outcome.isolation).toBe(request.isolation ? 'sandbox' : 'none');
    expect(server.violations).toEqual([]);
    expect(toolCalls(request)).toEqual([
      ['check', {}],
      ['check', {}],
    ]);
    const turns = server.requests.filter((r) => r.agentTurn);
    // ENABLE_TOOL_SEARCH=false: the tools are in the list from the first request, not behind a search.
    const names = (turns[0]!.body.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__hillclimb__check', 'mcp__hillclimb__ledger']));
    // The model read each answer in its next request (a tool_result, not an error).
    const results = (n: number) =>
      JSON.stringify((turns[n]!.body.messages as Array<{ content: unknown }>).at(-1)?.content);
    expect(results(1)).toContain(FAILS);
    expect(results(1)).not.toContain('"is_error":true');
    expect(results(3)).toContain(PASSES);
    expect(readFileSync(file, 'utf8')).toBe('def chunk(x):\n    return x * 1\n');
    expect(logger.lines).toEqual([]);
  });
});
