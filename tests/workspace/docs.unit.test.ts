// docs/workspace.md lists every static-scan rule with its exact reason, so the docs cannot drift.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LINE_RULES, PATH_RULES } from '../../src/workspace/scan-rules.js';
import { REPO_ROOT } from '../helpers/paths.js';

describe('docs/workspace.md', () => {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'workspace.md'), 'utf8');
  it.each([...LINE_RULES, ...PATH_RULES].map((r) => [r.id, r.severity, r.reason] as const))(
    'documents rule %s',
    (id, severity, reason) => {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${id}\``));
      expect(row, `no table row for ${id}`).toBeDefined();
      expect(row).toContain(`| ${severity} |`);
      expect(row).toContain(reason);
    },
  );
});
