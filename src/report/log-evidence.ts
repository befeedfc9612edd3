/** Finding the evidence a log entry names, on disk: the state folder and the local store mirror it. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVIDENCE_SCHEMA, type IterationEvidence } from '../evidence/index.js';
import { assertKey } from '../store/index.js';
import { errorMessage } from '../util/index.js';
import type { EvidenceLoader } from './log-lint.js';

/** Look `path` up under each root in turn; a path that could leave its root is refused. */
export function evidenceLoader(roots: readonly string[]): EvidenceLoader {
  return (path) => {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
      return {
        status: 'missing',
        reason: 'remote evidence is not fetched; download the bundle and pass --evidence-root',
      };
    }
    try {
      assertKey(path);
    } catch (e) {
      return { status: 'unreadable', reason: errorMessage(e) };
    }
    for (const root of roots) {
      const file = join(root, path);
      if (!existsSync(file)) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(readFileSync(file, 'utf8'));
      } catch (e) {
        return { status: 'unreadable', reason: `${file}: invalid JSON: ${errorMessage(e)}` };
      }
      const schema = (parsed as { schema?: unknown } | null)?.schema;
      if (schema !== EVIDENCE_SCHEMA) {
        return {
          status: 'unreadable',
          reason: `${file}: schema ${String(schema)} is not ${EVIDENCE_SCHEMA}`,
        };
      }
      return { status: 'found', evidence: parsed as IterationEvidence };
    }
    return { status: 'missing', reason: `not under ${roots.join(' or ') || 'any evidence root'}` };
  };
}
