// docs/agents.md shows every flag the codex and claude adapters pass, so the docs cannot drift.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeArgs, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { codexArgs } from '../../src/agent/agents/codex.js';
import { REPO_ROOT } from '../helpers/paths.js';

const doc = readFileSync(join(REPO_ROOT, 'docs', 'agents.md'), 'utf8');

describe('docs/agents.md', () => {
  it('shows every flag the codex adapter passes', () => {
    const args = codexArgs({
      workdir: '/w',
      lastMessageFile: '/l',
      schemaFile: '/s',
      resultDir: '/r',
      baseUrl: 'https://u',
      model: 'm',
      reasoningEffort: 'high',
      tools: { url: 'http://t', timeoutSec: 1800 },
      extraArgs: [],
    });
    for (const a of args.filter((x) => x.startsWith('-') || x.includes('='))) {
      const shown = a
        .replace('"high"', '"<agent.codex.reasoning_effort>"')
        .replace('"https://u"', '"<OPENAI_BASE_URL>"')
        .replace('"http://t"', '"<tools URL>"')
        .replace('=1800', '=<agent timeout, s>');
      expect(doc, a).toContain(shown);
    }
  });

  it('shows every flag the claude adapter passes', () => {
    const args = claudeArgs({
      model: 'm',
      maxTurns: 3,
      allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
      resultDir: '/r',
      tools: { configFile: '/c', names: ['mcp__hillclimb__check'] },
      extraArgs: [],
    });
    for (const a of args.filter((x) => x.startsWith('-'))) expect(doc, a).toContain(a);
    expect(doc).toContain('mcp__hillclimb__check');
  });
});
