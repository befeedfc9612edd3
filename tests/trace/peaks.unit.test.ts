import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEVICE_PEAKS_FILE,
  devicePeakTable,
  parseDevicePeaks,
  peakForDeviceKind,
  peakForPlane,
} from '../../src/trace/peaks.js';
import { InputError } from '../../src/util/errors.js';
import { REPO_ROOT } from '../helpers/paths.js';

const EXPECTED_KINDS = [
  'TPU v4',
  'TPU v5 lite',
  'TPU v5',
  'TPU v6 lite',
  'TPU7x',
  'NVIDIA A100-SXM4-80GB',
  'NVIDIA H100 80GB HBM3',
  'NVIDIA H200',
  'NVIDIA B200',
  'AMD Instinct MI300X',
];

describe('the device peak table', () => {
  const table = devicePeakTable();

  it('covers the devices the loop runs on, by their exact JAX device_kind', () => {
    const kinds = table.flatMap((e) => e.deviceKinds);
    for (const kind of EXPECTED_KINDS) expect(kinds, kind).toContain(kind);
  });

  it('every device kind is found, with per-device peaks and its sources', () => {
    for (const entry of table) {
      for (const kind of entry.deviceKinds) {
        const { peak, warning } = peakForDeviceKind(kind);
        expect(warning, kind).toBeUndefined();
        expect(peak!.name, kind).toBe(entry.name);
        expect(peak!.bf16FlopsPerSecond).toBe(entry.peakFlopsPerSecond.bf16 / entry.devicesPerChip);
        expect(peak!.bytesPerSecond).toBe(entry.hbmBytesPerSecond / entry.devicesPerChip);
        if (peak!.fp32FlopsPerSecond !== null)
          expect(peak!.fp32FlopsPerSecond).toBeLessThan(peak!.bf16FlopsPerSecond);
        expect(peak!.matchedBy).toBe(`device_kind "${kind}"`);
      }
      for (const s of entry.sources) {
        expect(s.url, entry.name).toMatch(/^https:\/\/[a-z.]*(google\.com|nvidia\.com|amd\.com)\//);
        expect(s.says.length, entry.name).toBeGreaterThan(20);
      }
    }
  });

  it('splits a chip JAX shows as two devices (TPU7x)', () => {
    const { peak } = peakForDeviceKind('TPU7x');
    expect(peak!.bf16FlopsPerSecond).toBe(1153.5e12);
    expect(peak!.bytesPerSecond).toBe(3690e9);
  });

  it('is read the same by the harness (kernels/harness/flops.py) for every entry and dtype', () => {
    // One table, two readers: the Python side's per-device peaks for every device kind, bf16 and fp32.
    const kinds = table.flatMap((e) => e.deviceKinds);
    const script = [
      'import json, sys',
      'from kernels.harness import flops',
      'kinds = json.loads(sys.argv[1])',
      'out = {}',
      'for kind in kinds:',
      '    p = flops.peak_for_device_kind(kind)',
      '    out[kind] = None if p is None else {"name": p.name, "bf16": flops.peak_flops_per_device(kind, "bfloat16"),',
      '        "fp32": flops.peak_flops_per_device(kind, "float32"), "bytes": p.bytes_per_s}',
      'print(json.dumps(out))',
    ].join('\n');
    const python = join(REPO_ROOT, '.venv', 'bin', 'python');
    const out = execFileSync(python, ['-c', script, JSON.stringify([...kinds, 'cpu'])], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    const py = JSON.parse(out) as Record<
      string,
      { name: string; bf16: number; fp32: number | null; bytes: number } | null
    >;
    expect(py.cpu).toBeNull();
    for (const kind of kinds) {
      const { peak } = peakForDeviceKind(kind);
      expect(py[kind], kind).toEqual({
        name: peak!.name,
        bf16: peak!.bf16FlopsPerSecond,
        fp32: peak!.fp32FlopsPerSecond,
        bytes: peak!.bytesPerSecond,
      });
    }
  });

  it('an unknown device kind gives a warning naming it, and no peaks', () => {
    expect(peakForDeviceKind('NVIDIA GeForce RTX 4090')).toEqual({
      peak: undefined,
      warning: `device kind "NVIDIA GeForce RTX 4090" is not in ${DEVICE_PEAKS_FILE}: no roofline (add its peaks to the table)`,
    });
    // device_kind is matched exactly: a near miss is not a match.
    expect(peakForDeviceKind('tpu v6 lite').peak).toBeUndefined();
  });

  it('recognises XSpace device planes from their stats', () => {
    // The real v6e fixture's plane stats, and the MI300X fixtures'.
    expect(peakForPlane({ device_type_string: 'TPU v6 Lite' })!.peak!.name).toBe('TPU v6e (Trillium)');
    const mi300x = peakForPlane({
      device_vendor: 'AMD',
      compute_cap_major: '9',
      compute_cap_minor: '4',
      core_count: '304',
      memory_size: '206141652992',
    })!;
    expect(mi300x.peak!.name).toBe('AMD Instinct MI300X');
    expect(mi300x.warning).toBeUndefined();
    // H100 and H200 share compute capability and SM count; the memory size tells them apart.
    const h200 = peakForPlane({
      device_vendor: 'NVIDIA',
      compute_cap_major: '9',
      compute_cap_minor: '0',
      core_count: '132',
      memory_size: String(143771 * 2 ** 20),
    })!;
    expect(h200.peak!.name).toBe('NVIDIA H200 SXM');
    const gfx950 = peakForPlane({
      device_vendor: 'AMD',
      compute_cap_major: '9',
      compute_cap_minor: '5',
      core_count: '256',
      memory_size: '309220868096',
    })!;
    expect(gfx950.peak).toBeUndefined();
    expect(gfx950.warning).toBe(
      `AMD GPU, compute capability 9.5, 256 cores, 309 GB is not in ${DEVICE_PEAKS_FILE}: no roofline (add its peaks to the table)`,
    );
    expect(peakForPlane({ device_type_string: 'TPU v9' })!.warning).toMatch(/device type "TPU v9" is not in/);
    expect(peakForPlane({})).toBeUndefined();
  });

  it('refuses a malformed table, naming the file and the entry', () => {
    const good = readFileSync(join(REPO_ROOT, DEVICE_PEAKS_FILE), 'utf8');
    const doc = JSON.parse(good) as { devices: Record<string, unknown>[] };
    const bad = (mutate: (d: typeof doc) => void): string => {
      const copy = JSON.parse(good) as typeof doc;
      mutate(copy);
      try {
        parseDevicePeaks(JSON.stringify(copy), 'peaks.json');
      } catch (err) {
        expect(err).toBeInstanceOf(InputError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(doc.devices.length).toBeGreaterThan(0);
    expect(bad((d) => (d.devices[0]!.sources = []))).toBe(
      'peaks.json: devices[0] (TPU v4): sources: every entry needs a source',
    );
    expect(bad((d) => (d.devices[1]!.deviceKinds = ['TPU v4']))).toBe(
      'peaks.json: devices[1] (TPU v5e): deviceKinds: "TPU v4" is listed twice in the table',
    );
    expect(bad((d) => (d.devices[2]!.hbmBytesPerSecond = 0))).toMatch(
      /devices\[2\] \(TPU v5p\): hbmBytesPerSecond/,
    );
    expect(() => parseDevicePeaks('{', 'peaks.json')).toThrow(/peaks\.json: invalid JSON/);
  });
});
