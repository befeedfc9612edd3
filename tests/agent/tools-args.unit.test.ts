// How the adapters name the tools' server to each CLI (src/agent/agents/{codex,claude}.ts): the exact
// arguments with tools, none of them without.
import { describe, expect, it } from 'vitest';
import { claudeArgs, claudeToolName, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { codexArgs } from '../../src/agent/agents/codex.js';
import { toolTimeoutSeconds } from '../../src/agent/mcp-config.js';

const CODEX = { workdir: '/w', lastMessageFile: '/l', schemaFile: '/s', extraArgs: ['-c', 'user=1'] };

describe('the tools in the CLIs’ arguments', () => {
  it('codex: the server by url, its tools approved (exec never asks), a call’s timeout, required; before the user’s -c', () => {
    const args = codexArgs({
      ...CODEX,
      tools: { url: 'http://127.0.0.1:5/t/hillclimb/mcp', timeoutSec: 1800 },
    });
    const from = args.indexOf('mcp_servers.hillclimb.url="http://127.0.0.1:5/t/hillclimb/mcp"');
    expect(args.slice(from - 1, from + 7)).toEqual([
      '-c',
      'mcp_servers.hillclimb.url="http://127.0.0.1:5/t/hillclimb/mcp"',
      '-c',
      'mcp_servers.hillclimb.default_tools_approval_mode="approve"',
      '-c',
      'mcp_servers.hillclimb.tool_timeout_sec=1800',
      '-c',
      'mcp_servers.hillclimb.required=true',
    ]);
    expect(args.slice(-3)).toEqual(['-c', 'user=1', '-']);
    expect(codexArgs(CODEX).some((a) => a.includes('mcp_servers'))).toBe(false);
  });

  it('claude: its tools allowed by their mcp__hillclimb__ names, only the harness’s server', () => {
    const names = ['check', 'ledger'].map(claudeToolName);
    expect(names).toEqual(['mcp__hillclimb__check', 'mcp__hillclimb__ledger']);
    const args = claudeArgs({
      allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
      tools: { configFile: '/tmp/x/mcp.json', names },
      extraArgs: [],
    });
    const allowed = args[args.indexOf('--allowedTools') + 1]!.split(',');
    expect(allowed).toEqual([...DEFAULT_CLAUDE_ALLOWED_TOOLS, ...names]);
    expect(args.slice(args.indexOf('--mcp-config'))).toEqual([
      '--mcp-config',
      '/tmp/x/mcp.json',
      '--strict-mcp-config',
    ]);
    const without = claudeArgs({ allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS, extraArgs: [] });
    expect(without).not.toContain('--mcp-config');
    expect(without[without.indexOf('--allowedTools') + 1]).toBe(DEFAULT_CLAUDE_ALLOWED_TOOLS.join(','));
  });

  it('a call may take as long as the agent may run, at least a minute', () => {
    expect(toolTimeoutSeconds({ timeoutMs: 1_800_000 })).toBe(1800);
    expect(toolTimeoutSeconds({ timeoutMs: 1_500 })).toBe(60);
  });
});
