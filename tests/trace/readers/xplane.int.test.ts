import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectEvents, type NormalizedEvent } from '../../../src/trace/readers/model.js';
import { XplaneSource } from '../../../src/trace/readers/xplane.js';
import { InputError } from '../../../src/util/errors.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../../helpers/paths.js';
import { decodeWithProtobufjs, type RefEvent } from './xplane-proto.js';

const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const TPU_CORRUPTED = join(REAL_TRACES, 'xprof/CORRUPTED-at-HEAD/tpu_inference_2.xplane.pb');
const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb');
const JAX_CPU = join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.xplane.pb');

function key(e: {
  plane?: string;
  device?: string;
  line?: string;
  thread?: string;
  startPs: number;
  durPs: number;
  name: string;
}) {
  return `${e.plane ?? e.device}|${e.line ?? e.thread}|${e.startPs}|${e.durPs}|${e.name}`;
}

/** Compare our reader with protobufjs event by event, args included (int64 values exact). */
function expectSameEvents(ours: NormalizedEvent[], ref: RefEvent[]): void {
  expect(ours.length).toBe(ref.length);
  const byKey = new Map<string, NormalizedEvent[]>();
  for (const e of ours) {
    const list = byKey.get(key(e)) ?? [];
    list.push(e);
    byKey.set(key(e), list);
  }
  for (const r of ref) {
    const list = byKey.get(key(r));
    expect(list, key(r)).toBeDefined();
    const match = list!.find((e) => JSON.stringify(e.args) === JSON.stringify(r.args)) ?? list![0]!;
    expect(match.args).toEqual(r.args);
    expect(match.longName).toBe(r.longName);
  }
}

describe('XSpace reader on real fixtures', () => {
  it('TPU v6e: matches a full protobufjs decode event by event', async () => {
    const { events, stats } = await collectEvents(new XplaneSource(TPU));
    expectSameEvents(events, decodeWithProtobufjs(TPU));
    expect(stats.events).toBe(events.length);
    expect(stats.format).toBe('xplane');
  });

  it('TPU v6e: 4 devices with XLA Ops and XLA Modules lines, plane stats, exact 64-bit program ids', async () => {
    const devices = new Map<string, Set<string>>();
    const stats = new Map<string, Record<string, string>>();
    const programIds = new Set<string>();
    await new XplaneSource(TPU).read({
      wantLane(lane) {
        const set = devices.get(lane.device.name) ?? new Set();
        set.add(lane.name);
        devices.set(lane.device.name, set);
        stats.set(lane.device.name, { ...lane.device.stats });
        return lane.name === 'XLA Ops';
      },
      onEvent(_lane, ev) {
        const id = ev.arg('program_id');
        if (id !== undefined) programIds.add(id);
      },
    });
    const tpus = [...devices.keys()].filter((d) => d.startsWith('/device:TPU:')).sort();
    expect(tpus).toEqual(['/device:TPU:0', '/device:TPU:1', '/device:TPU:2', '/device:TPU:3']);
    for (const d of tpus) {
      expect(devices.get(d)).toContain('XLA Ops');
      expect(devices.get(d)).toContain('XLA Modules');
      expect(stats.get(d)?.device_type_string).toBe('TPU v6 Lite');
      expect(stats.get(d)?.peak_teraflops_per_second).toBe('918');
    }
    // Larger than 2^53: a Number() would have rounded them.
    expect(programIds).toContain('12190760917235803885');
    expect(programIds).toContain('11287434908481120160');
  });

  it('MI300X (JAX on ROCm): matches protobufjs; kernels carry hlo_op, hlo_module and program_id', async () => {
    const { events } = await collectEvents(new XplaneSource(MI300X));
    expectSameEvents(events, decodeWithProtobufjs(MI300X));
    const kernels = events.filter((e) => e.device === '/device:GPU:0');
    expect(kernels).toHaveLength(54);
    expect(new Set(kernels.map((e) => e.thread))).toEqual(
      new Set(['Stream #16(Kernel)', 'Stream #17(Kernel)']),
    );
    expect(kernels.filter((e) => e.args.hlo_module === 'jit_dot').length).toBeGreaterThan(0);
  });

  it('JAX on CPU (our fixture): matches protobufjs', async () => {
    const { events } = await collectEvents(new XplaneSource(JAX_CPU));
    expectSameEvents(events, decodeWithProtobufjs(JAX_CPU));
    expect(events.some((e) => e.args.hlo_op !== undefined && e.args.run_id !== undefined)).toBe(true);
  });

  it('skipping a lane costs nothing and delivers none of its events', async () => {
    let delivered = 0;
    const stats = await new XplaneSource(TPU).read({
      wantLane: (lane) => lane.name === 'XLA Modules',
      onEvent: () => {
        delivered++;
      },
    });
    expect(delivered).toBe(105 + 103 * 3);
    expect(stats.eventsDelivered).toBe(delivered);
    expect(stats.events).toBeGreaterThan(20_000);
  });
});

describe('XSpace reader on bad input', () => {
  async function readError(path: string): Promise<InputError> {
    try {
      await new XplaneSource(path).read({ wantLane: () => true, onEvent: () => {} });
    } catch (err) {
      expect(err).toBeInstanceOf(InputError);
      return err as InputError;
    }
    throw new Error(`${path} was read without an error`);
  }

  it('the corrupted upstream fixture gives a one-line error naming the file', async () => {
    const err = await readError(TPU_CORRUPTED);
    expect(err.message).toMatch(
      /^.*CORRUPTED-at-HEAD\/tpu_inference_2\.xplane\.pb: corrupt XSpace protobuf: .+ at byte \d+$/,
    );
    expect(err.message).not.toContain('\n');
    expect(err.exitCode).toBe(2);
  });

  it('an empty file, a truncated file and a JSON file are refused', async () => {
    const t = tempDir();
    try {
      const empty = join(t.dir, 'empty.xplane.pb');
      writeFileSync(empty, '');
      expect((await readError(empty)).message).toContain('the file is empty');

      const truncated = join(t.dir, 'truncated.xplane.pb');
      writeFileSync(truncated, readFileSync(TPU).subarray(0, 400_000));
      expect((await readError(truncated)).message).toMatch(
        /corrupt XSpace protobuf: .*(runs past|truncated)/,
      );

      const json = join(t.dir, 'json.xplane.pb');
      copyFileSync(join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.trace.json.gz'), json);
      expect((await readError(json)).message).toContain('corrupt XSpace protobuf');
    } finally {
      t.cleanup();
    }
  });
});
