/**
 * The command agent with tools (src/agent/agents/command.ts): HILLCLIMB_TOOLS_URL and the documented
 * client (bin/hillclimb-tool.mjs) reach the harness's tools, unsandboxed on the loopback and in the
 * sandbox through the tools proxy's forward (with no network of its own) or the loopback (with the
 * machine's); a request without tools runs as before, with neither variable.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentRequest } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/agent/agents/command.js';
import { sandboxAvailability } from '../../src/exec/sandbox.js';
import { memoryLogger } from '../../src/util/log.js';
import { type AgentFixture, agentFixture, FIXTURES } from './setup.js';
import { stubTools } from './stub-tools.js';

const fixtures: AgentFixture[] = [];
afterEach(() => {
  for (const f of fixtures.splice(0)) f.repo.cleanup();
});

interface Seen {
  url: string | null;
  calls: Array<{ code: number | null; out: string; err?: string }>;
}

async function run(o: { network?: 'none' | 'host'; sandbox?: boolean; tools?: boolean } = {}) {
  const f = agentFixture('unused');
  fixtures.push(f);
  const out = dirname(f.request.resultFile);
  mkdirSync(out, { recursive: true });
  const tools = stubTools({
    check: ['fails: max error 0.8', 'passes'],
    ledger: ['i001 invalid: fused matmuls'],
  });
  const request: AgentRequest = {
    ...f.request,
    ...(o.tools === false ? {} : { tools }),
    ...(o.sandbox
      ? { isolation: { sandbox: { readOnly: [], writable: [f.repo.root, out], home: join(out, 'home') } } }
      : {}),
  };
  const logger = memoryLogger();
  const agent = new CommandAgent({
    command: ['node', join(FIXTURES, 'tools-command-agent.mjs')],
    network: o.network,
    passEnv: [],
    logger,
  });
  const outcome = await agent.run(request);
  expect(outcome.status, readFileSync(f.request.logFile, 'utf8').slice(-1500)).toBe('finished');
  const seen = JSON.parse(readFileSync(join(out, 'tools.json'), 'utf8')) as Seen;
  return { seen, tools, logger, outcome };
}

function expectTheToolsAnswered(seen: Seen, tools: ReturnType<typeof stubTools>) {
  expect(seen.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/hillclimb\/mcp$/);
  expect(seen.calls[0]).toMatchObject({
    code: 0,
    out: expect.stringMatching(/^check\tExport and verify.*\nledger\t/),
  });
  expect(seen.calls[1]).toMatchObject({ code: 0, out: 'fails: max error 0.8' });
  expect(seen.calls[2]).toMatchObject({ code: 0, out: 'passes' });
  expect(seen.calls[3]).toMatchObject({ code: 0, out: 'i001 invalid: fused matmuls' });
  // Arguments that are not an object never leave the client.
  expect(seen.calls[4]).toMatchObject({ code: 2, err: expect.stringContaining('one JSON object') });
  expect(tools.calls.map((c) => [c.name, c.args])).toEqual([
    ['check', {}],
    ['check', {}],
    ['ledger', { last: 3 }],
  ]);
}

describe('command adapter with tools', () => {
  it('unsandboxed: the client reaches the tools on the loopback', async () => {
    const { seen, tools, logger } = await run();
    expectTheToolsAnswered(seen, tools);
    expect(logger.lines).toEqual([]);
  });

  it('in the sandbox with no network: the tools proxy’s forward is its one way out', async (t) => {
    const available = await sandboxAvailability();
    if (!available.available) t.skip(`no namespace sandbox on this machine: ${available.reason}`);
    const { seen, tools, outcome } = await run({ sandbox: true });
    expect(outcome.isolation).toBe('sandbox');
    expectTheToolsAnswered(seen, tools);
  });

  it('in the sandbox with the machine’s network: the tools on the loopback', async (t) => {
    const available = await sandboxAvailability();
    if (!available.available) t.skip(`no namespace sandbox on this machine: ${available.reason}`);
    const { seen, tools } = await run({ sandbox: true, network: 'host' });
    expectTheToolsAnswered(seen, tools);
  });

  it('a request without tools gets neither variable', async () => {
    const { seen } = await run({ tools: false });
    expect(seen).toEqual({
      url: null,
      calls: Array(5).fill({ code: null, out: 'no HILLCLIMB_TOOLS_CLIENT' }),
    });
  });
});
