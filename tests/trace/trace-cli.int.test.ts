import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tslToJson, xspaceToTsl } from '../../bench/traces/tsl-json.js';
import { formatDiff } from '../../src/report/trace-tables.js';
import type { TraceDiff, TraceSummary } from '../../src/trace/types.js';
import { CLI, FIXTURES, REAL_TRACES, REPO_ROOT, tempDir } from '../helpers/paths.js';

const execFileP = promisify(execFile);
const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const CORRUPTED = join(REAL_TRACES, 'xprof/CORRUPTED-at-HEAD/tpu_inference_2.xplane.pb');
const HTA = join(REAL_TRACES, 'HolisticTraceAnalysis/tests/data/trace_diff');

async function hillclimb(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await execFileP(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('hillclimb trace summary', () => {
  it('prints the TPU fixture as tables', async () => {
    const r = await hillclimb(['trace', 'summary', TPU]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Platform: TPU, 4 device\(s\): \/device:TPU:0, .* \(TPU v6 Lite\)/);
    expect(r.stdout).toMatch(
      /Roofline: TPU v6e \(Trillium\), 918 TFLOP\/s bf16, 1638 GB\/s HBM \(from XSpace plane \/device:TPU:0\)/,
    );
    expect(r.stdout).toMatch(
      /Steps: none marked in the trace; inferred 100 per device by dominant-program \(high confidence, 100% of device op time in them\): dominant program jit_f\(12190760917235803885\)/,
    );
    expect(r.stdout).toMatch(
      /copy-done\s+jit_f\(12190760917235803885\)\s+copy-done\s+304033\.212 ms\s+96\.5%\s+760\.083 ms\s+6/,
    );
    // Ops of the programs outside steps are rows too, marked as such.
    expect(r.stdout).toMatch(/all-reduce\s+jit__psum\(\d+…\s+all-reduce\s+1460\.345 ms\s+0\.5%\s+outside/);
    expect(r.stdout).toMatch(/broadcast_add_fusion .* 82% of 0\.205 \(memory\)/);
    expect(r.stdout).toMatch(/Custom calls: none/);
  });

  it('--json prints the whole summary; --top limits table rows', async () => {
    const json = await hillclimb(['trace', 'summary', TPU, '--json']);
    const s = JSON.parse(json.stdout) as TraceSummary;
    expect(s.schema).toBe('hillclimb.trace-summary/2');
    expect(s.ops).toHaveLength(5);
    const top = await hillclimb(['trace', 'summary', TPU, '--top', '1']);
    expect(top.stdout).toMatch(/Top 1 of 5 ops/);
    expect((await hillclimb(['trace', 'summary', TPU, '--top', 'x'])).code).toBe(2);
  });

  it('--device-kind gives a JSON trace (no device stats) its roofline; an unknown kind is named', async () => {
    const t = tempDir();
    try {
      const json = join(t.dir, 'host.trace.json.gz');
      writeFileSync(json, gzipSync(tslToJson(await xspaceToTsl(TPU))));
      const plain = await hillclimb(['trace', 'summary', json]);
      expect(plain.stdout).toMatch(/Roofline: no device peaks/);
      const named = await hillclimb(['trace', 'summary', json, '--device-kind', 'TPU v6 lite']);
      expect(named.stdout).toMatch(/Roofline: TPU v6e \(Trillium\), .* \(from device kind "TPU v6 lite"\)/);
      const unknown = await hillclimb(['trace', 'summary', json, '--device-kind', 'TPU v99']);
      expect(unknown.code).toBe(0);
      expect(unknown.stdout).toMatch(/warning: device kind "TPU v99" is not in schemas\/device-peaks\.json/);
    } finally {
      t.cleanup();
    }
  });

  it('accepts a profile directory (the JAX CPU fixture)', async () => {
    const r = await hillclimb(['trace', 'summary', join(FIXTURES, 'jax-cpu/steps')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Platform: CPU/);
    expect(r.stdout).toMatch(/by host-annotations/);
    expect(r.stdout).toMatch(/note: also present, not read: .*perfetto_trace\.json\.gz/);
  });
});

describe('hillclimb trace diff', () => {
  it('diffs the HTA Kineto pair (JSON, and the same diff as tables)', async () => {
    const before = join(HTA, 'control/control.json.gz');
    const after = join(HTA, 'test/test.json.gz');
    const j = await hillclimb(['trace', 'diff', before, after, '--json']);
    expect(j.code).toBe(0);
    const d = JSON.parse(j.stdout) as TraceDiff;
    expect(d.schema).toBe('hillclimb.trace-diff/2');
    expect(d.ops.some((o) => o.status === 'added')).toBe(true);
    expect(d.ops.some((o) => o.status === 'removed')).toBe(true);
    const deltas = d.ops.map((o) => Math.abs(o.delta));
    expect(deltas).toEqual([...deltas].sort((a, b) => b - a));
    const text = formatDiff(d, 5);
    expect(text).toMatch(/Ops in steps: top 5 of \d+ by \|Δ time per step\|/);
    expect(text).toMatch(/Memcpy DtoD \(Device -> Device\)\s+—\s+gpu_memcpy .* increased/);
  });

  it('diffs saved summaries as well as traces', async () => {
    const t = tempDir();
    try {
      const saved = join(t.dir, 'before.json');
      writeFileSync(saved, (await hillclimb(['trace', 'summary', TPU, '--json'])).stdout);
      const jsonTrace = join(t.dir, 'after.trace.json.gz');
      writeFileSync(jsonTrace, gzipSync(tslToJson(await xspaceToTsl(TPU))));
      const d = JSON.parse(
        (await hillclimb(['trace', 'diff', saved, jsonTrace, '--json'])).stdout,
      ) as TraceDiff;
      expect(d.ops.every((o) => o.status === 'unchanged' && o.delta === 0)).toBe(true);
      expect(d.before.path).toBe(TPU);
    } finally {
      t.cleanup();
    }
  });
});

describe('hillclimb trace on bad input: one line naming the file, exit code 2, no stack', () => {
  const cases: [string, (dir: string) => string, RegExp][] = [
    [
      'the corrupted xplane fixture',
      () => CORRUPTED,
      /CORRUPTED-at-HEAD\/tpu_inference_2\.xplane\.pb: corrupt XSpace protobuf: /,
    ],
    [
      'a truncated gzip',
      (dir) => {
        const p = join(dir, 'cut.trace.json.gz');
        const whole = readFileSync(join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.trace.json.gz'));
        writeFileSync(p, whole.subarray(0, whole.length - 100));
        return p;
      },
      /cut\.trace\.json\.gz: truncated gzip stream \(unexpected end of file\)/,
    ],
    [
      'invalid JSON mid-file',
      (dir) => {
        const p = join(dir, 'broken.trace.json.gz');
        const text = readFileSync(join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.trace.json.gz'));
        const json = gunzipSync(text).toString('utf8');
        const at = Math.floor(json.length / 2);
        const cut = json.indexOf('"dur":', at);
        writeFileSync(p, gzipSync(`${json.slice(0, cut)}"dur"=${json.slice(cut + 6)}`));
        return p;
      },
      /broken\.trace\.json\.gz: invalid JSON near byte \d+: expected ':'/,
    ],
    [
      'an empty trace',
      (dir) => {
        const p = join(dir, 'empty.json');
        writeFileSync(p, '{"displayTimeUnit":"ns","traceEvents":[{}]}');
        return p;
      },
      /empty\.json: the trace holds no events/,
    ],
    [
      'unknown device kinds',
      (dir) => {
        const p = join(dir, 'foreign.json');
        writeFileSync(
          p,
          '[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:NPU:0"}},{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1,"name":"k"}]',
        );
        return p;
      },
      /foreign\.json: no TPU, GPU or XLA:CPU op events found \(devices: \/device:NPU:0\)/,
    ],
    [
      'a chunked riegeli export',
      (dir) => {
        const p = join(dir, 'host.xplane.riegeli');
        writeFileSync(p, 'riegeli');
        return p;
      },
      /host\.xplane\.riegeli: chunked \.xplane\.riegeli traces are not supported yet/,
    ],
    ['a missing path', (dir) => join(dir, 'nope'), /nope: no such file or directory/],
  ];
  for (const [label, make, pattern] of cases) {
    it(label, async () => {
      const t = tempDir();
      try {
        const r = await hillclimb(['trace', 'summary', make(t.dir)]);
        expect(r.code).toBe(2);
        const lines = r.stderr.trim().split('\n');
        expect(lines[0]).toMatch(/^error: /);
        expect(lines[0]).toMatch(pattern);
        expect(lines.slice(1).every((l) => l.startsWith('hint: '))).toBe(true);
        expect(r.stderr).not.toMatch(/\s+at .*\.js:\d+/);
      } finally {
        t.cleanup();
      }
    });
  }
});
