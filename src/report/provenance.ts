/** Where the numbers came from: device, backend, versions, hashes, seed, run. */
import type { IterationEvidence } from '../evidence/index.js';
import { deviceLabel } from './facts.js';
import { formatTime, shortSha } from './format.js';
import { cell, code, table } from './markdown.js';

/** Versions as `jax 0.4.38 · jaxlib 0.4.38`, sorted by name so the text is stable. */
export function versionsText(versions: Readonly<Record<string, string>> | undefined): string | undefined {
  const entries = Object.entries(versions ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  if (entries.length === 0) return undefined;
  return entries.map(([name, version]) => `${name} ${version}`).join(' · ');
}

/** Rows of [what, value] (values are markdown), in a fixed order; absent facts are left out. */
export function provenanceRows(evidence: IterationEvidence): Array<[string, string]> {
  const p = evidence.provenance;
  const m = evidence.measurement;
  const rows: Array<[string, string | undefined]> = [
    [
      'run',
      `${code(evidence.runId)}, iteration ${evidence.iteration} of ${evidence.totalIterations}, started ${formatTime(evidence.runStartedAt)}`,
    ],
    [
      'device',
      deviceLabel(evidence) &&
        cell(`${deviceLabel(evidence)}${m?.device ? ` (backend ${m.device.backend})` : ''}`),
    ],
    ['compute', p.backend && cell(`${p.backend.backend}: ${p.backend.description}`)],
    ['benchmark', m && benchmarkText(m)],
    ['programs', m?.programs && programsText(m.programs)],
    ['versions', versionsText(m?.versions) && cell(versionsText(m?.versions)!)],
    ['hillclimb', cell(p.hillclimbVersion)],
    ['harness hash', p.harnessHash ? code(shortSha(p.harnessHash)) : undefined],
    ['config hash', code(shortSha(p.configHash))],
    ['bootstrap seed', m?.comparison ? String(m.comparison.seed) : undefined],
    ['host', cell(p.host)],
  ];
  return rows.filter((r): r is [string, string] => r[1] !== undefined && r[1] !== '');
}

/**
 * What hillclimb_bench writes as `impl` and `preset` for a target that names neither (a target of one
 * implementation and one benchmark shape, e.g. an RMSNorm): a placeholder, not a fact about the run.
 */
const UNNAMED = 'default';

/** `impl pallas, preset tiny`: the implementation and preset the target named; undefined for none. */
function benchmarkText(m: { impl?: string; preset?: string }): string | undefined {
  const named = (value: string | undefined) => (value && value !== UNNAMED ? value : undefined);
  const impl = named(m.impl);
  const preset = named(m.preset);
  const parts = [impl && `impl ${impl}`, preset && `preset ${preset}`].filter(Boolean);
  return parts.length > 0 ? cell(parts.join(', ')) : undefined;
}

/**
 * The programs the verifier timed: per measurement@case, the sha256 (first 12) of the champion's and
 * the candidate's bytes, so a reader can tell exactly which programs the numbers are of.
 */
export function programsText(
  p: NonNullable<IterationEvidence['measurement']>['programs'],
): string | undefined {
  if (!p) return undefined;
  const keys = [...new Set([...Object.keys(p.A), ...Object.keys(p.B)])].sort();
  if (keys.length === 0) return undefined;
  const hash = (h: string | undefined) => (h ? code(h.slice(0, 12)) : '—');
  const rows = keys.map((k) => `${cell(k)}: A ${hash(p.A[k])} → B ${hash(p.B[k])}`);
  return `${cell(p.platform)}, sha256 ${rows.join('; ')}`;
}

export function provenanceSection(evidence: IterationEvidence): string {
  return `#### Provenance\n\n${table(['', ''], provenanceRows(evidence))}`;
}
