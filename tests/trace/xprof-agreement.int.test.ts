// hillclimb's per-op totals against xprof's own op statistics (hlo_stats) for the real TPU v6e profile.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tslToJson, xspaceToTsl } from '../../bench/traces/tsl-json.js';
import { TraceCollector } from '../../src/trace/collect.js';
import { ChromeJsonSource } from '../../src/trace/readers/chrome-json.js';
import type { TraceSource } from '../../src/trace/readers/model.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../helpers/paths.js';

const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const HLO_STATS = join(FIXTURES, 'xprof-hlo-stats/tpu_inference_2.hlo_stats.json');

interface XprofRow {
  program: string;
  op: string;
  occurrences: number;
  selfUs: number;
}

function xprofRows(): XprofRow[] {
  const table = JSON.parse(readFileSync(HLO_STATS, 'utf8')) as {
    cols: { label?: string; id?: string }[];
    rows: { c: ({ v: unknown } | null)[] }[];
  };
  const col = (name: string) => table.cols.findIndex((c) => (c.label ?? c.id) === name);
  const [p, o, n, t] = ['Program id', 'HLO op name', '#Occurrences', 'Total self time (us)'].map(col);
  return table.rows.map((r) => ({
    program: String(r.c[p!]?.v),
    op: String(r.c[o!]?.v),
    occurrences: Number(r.c[n!]?.v),
    selfUs: Number(r.c[t!]?.v),
  }));
}

/** Our totals per (program id, op) over the whole trace: one program-mode pass. */
async function ourTotals(source: TraceSource): Promise<Map<string, { count: number; selfUs: number }>> {
  const c = new TraceCollector({ structure: true, ops: 'program' });
  await source.read(c);
  c.finish();
  const out = new Map<string, { count: number; selfUs: number }>();
  for (const [program, ops] of c.opsByProgram) {
    const id = /\((\d+)\)$/.exec(program)?.[1] ?? program;
    for (const op of ops.values())
      out.set(`${id}|${op.name}`, { count: op.countIn, selfUs: op.selfInPs / 1e6 });
  }
  return out;
}

describe('agreement with xprof 2.24.2 hlo_stats on the TPU v6e fixture', () => {
  it('every op: the same occurrences and total self time (XSpace and trace.json.gz)', async () => {
    const expected = xprofRows();
    expect(expected).toHaveLength(17);
    const t = tempDir();
    try {
      const json = join(t.dir, 'host.trace.json.gz');
      writeFileSync(json, gzipSync(tslToJson(await xspaceToTsl(TPU))));
      for (const source of [new XplaneSource(TPU), new ChromeJsonSource(json)]) {
        const ours = await ourTotals(source);
        expect(ours.size).toBe(expected.length);
        for (const row of expected) {
          const mine = ours.get(`${row.program}|${row.op}`);
          expect(mine, `${row.program} ${row.op}`).toBeDefined();
          expect(mine!.count).toBe(row.occurrences);
          // xprof prints µs with float noise; ours are integer ps.
          expect(mine!.selfUs).toBeCloseTo(row.selfUs, 3);
        }
      }
    } finally {
      t.cleanup();
    }
  });
});
