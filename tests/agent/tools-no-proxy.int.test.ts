// An agent on its own login (no API key for the harness to hold, so no key proxy) gets no tools: the
// fake codex and claude record their arguments; the adapter warns once and runs as without tools.
import { describe, expect, it } from 'vitest';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { CodexAgent } from '../../src/agent/agents/codex.js';
import { memoryLogger } from '../../src/util/log.js';
import { useAgentFixtures } from './setup.js';
import { stubTools } from './stub-tools.js';

const setup = useAgentFixtures();

describe('tools without a key proxy', () => {
  it.each(['codex', 'claude'] as const)(
    '%s: no tools, one warning naming the variable to set',
    async (kind) => {
      const f = setup('ok');
      const logger = memoryLogger();
      const common = { binary: kind, extraArgs: [], passEnv: [], logger, sourceEnv: {} };
      const agent =
        kind === 'codex'
          ? new CodexAgent(common)
          : new ClaudeAgent({ ...common, allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS });
      const tools = stubTools();
      const outcome = await agent.run({ ...f.request, tools });
      expect(outcome.status).toBe('finished');
      const argv = f.record().argv.join(' ');
      expect(argv).not.toMatch(/mcp/);
      const warnings = logger.lines.filter((l) => l.includes('no tools for this run'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(kind === 'codex' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY');
      expect(tools.calls).toEqual([]);
    },
  );
});
