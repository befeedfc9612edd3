import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tslToJson, xspaceToTsl } from '../../../bench/traces/tsl-json.js';
import { ChromeJsonSource, scanChromeJson, TSL_EVENT_CAP } from '../../../src/trace/readers/chrome-json.js';
import { collectEvents, type NormalizedEvent } from '../../../src/trace/readers/model.js';
import { XplaneSource } from '../../../src/trace/readers/xplane.js';
import { InputError } from '../../../src/util/errors.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../../helpers/paths.js';

const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb');
const CPU_RUN = join(FIXTURES, 'jax-cpu/steps/plugins/profile/run');
const HTA = join(REAL_TRACES, 'HolisticTraceAnalysis/tests/data/trace_diff');

const INTERNAL_STATS = [
  'kernel_details',
  '_pt',
  '_p',
  '_ct',
  '_c',
  '_r',
  'flops',
  'bytes_accessed',
  'program_id',
  'symbol_id',
];

function sortKey(e: NormalizedEvent): string {
  const args = Object.entries(e.args).sort(([a], [b]) => (a < b ? -1 : 1));
  return `${e.device}|${e.thread}|${String(e.startPs).padStart(20, '0')}|${e.durPs}|${e.name}|${JSON.stringify(args)}`;
}

/** What tsl's JSON keeps of an XSpace event: ≥1 ps durations, no internal stats. */
function asTslWouldWrite(e: NormalizedEvent): NormalizedEvent {
  const args = { ...e.args };
  for (const k of INTERNAL_STATS) delete args[k];
  const out: NormalizedEvent = { ...e, durPs: Math.max(1, e.durPs), args };
  delete out.category;
  return out;
}

describe('Chrome JSON reader on tsl-shaped conversions of the real XSpace fixtures', () => {
  for (const [label, xplane, planes] of [
    ['TPU v6e', TPU, /^(\/device:TPU:|\/host:CPU$)/],
    ['MI300X', MI300X, /^(\/device:GPU:|\/host:CPU$)/],
  ] as const) {
    it(`${label}: every event read from trace.json.gz equals the XSpace event`, async () => {
      const t = tempDir();
      try {
        const trace = await xspaceToTsl(xplane);
        const path = join(t.dir, 'host.trace.json.gz');
        writeFileSync(path, gzipSync(tslToJson(trace)));
        const fromJson = await collectEvents(new ChromeJsonSource(path));
        const fromXplane = await collectEvents(
          new XplaneSource(xplane),
          (lane) => planes.test(lane.device.name) && lane.name !== 'Async XLA Ops',
        );
        const dropped = new Set(['MemoryAllocation', 'MemoryDeallocation']);
        const expected = fromXplane.events
          .filter((e) => !dropped.has(e.longName ?? e.name))
          .map(asTslWouldWrite);
        expect(fromJson.events.length).toBe(trace.events.length);
        expect(fromJson.events.map(sortKey).sort()).toEqual(expected.map(sortKey).sort());
        expect(fromJson.stats.lateNames).toBe(false);
        expect(fromJson.stats.warnings).toEqual([]);
      } finally {
        t.cleanup();
      }
    });
  }
});

describe('Chrome JSON reader on real JAX and Kineto files', () => {
  it('JAX CPU: trace.json.gz, its Python re-dump perfetto_trace.json.gz and the XSpace agree', async () => {
    const tsl = await collectEvents(new ChromeJsonSource(join(CPU_RUN, 'cpu.trace.json.gz')));
    const perfetto = await collectEvents(new ChromeJsonSource(join(CPU_RUN, 'perfetto_trace.json.gz')));
    expect(perfetto.events.map(sortKey).sort()).toEqual(tsl.events.map(sortKey).sort());
    const xplane = await collectEvents(new XplaneSource(join(CPU_RUN, 'cpu.xplane.pb')));
    const ops = (events: NormalizedEvent[]) =>
      events
        .filter((e) => e.args.hlo_op !== undefined)
        .map((e) => `${e.thread}|${e.startPs}|${e.durPs}|${e.name}|${e.args.hlo_module}|${e.args.run_id}`)
        .sort();
    expect(ops(tsl.events).length).toBeGreaterThan(100);
    expect(ops(tsl.events)).toEqual(ops(xplane.events));
  });

  it('HTA Kineto pair: GPU kernels on labelled devices; metadata at the end is picked up on a second read', async () => {
    const source = new ChromeJsonSource(join(HTA, 'control/control.json.gz'));
    const first = await collectEvents(source);
    expect(first.stats.lateNames).toBe(true);
    expect(first.stats.events).toBe(74937);
    // Epoch microseconds: times are taken relative to the first event.
    expect(first.stats.originPs).toBe('1661203462598738000000');
    const again = await collectEvents(source);
    expect(again.stats.lateNames).toBe(false);
    const kernels = again.events.filter((e) => e.category === 'kernel');
    expect(kernels.length).toBe(8568);
    expect(new Set(kernels.map((e) => e.device))).toEqual(new Set(['GPU 3 (python3.8)']));
    expect(kernels[0]!.thread).toMatch(/^stream \d+/);
    expect(again.stats.warnings.join()).toMatch(/24692 "f", 9450 "s", 2 "i"/);
  });

  it('bad gzip: a truncated file and corrupt data give one-line errors', async () => {
    const t = tempDir();
    try {
      const whole = gzipSync(tslToJson(await xspaceToTsl(MI300X)));
      const truncated = join(t.dir, 'cut.trace.json.gz');
      writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
      const corrupt = join(t.dir, 'corrupt.trace.json.gz');
      const bad = Buffer.from(whole);
      bad.fill(0x55, 200, 260);
      writeFileSync(corrupt, bad);
      for (const [path, pattern] of [
        [truncated, /cut\.trace\.json\.gz: truncated gzip stream \(unexpected end of file\)$/],
        [corrupt, /corrupt\.trace\.json\.gz: (corrupt gzip data|invalid JSON near byte \d+)/],
      ] as const) {
        const err = await new ChromeJsonSource(path).read({ wantLane: () => true, onEvent: () => {} }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(InputError);
        expect((err as Error).message).toMatch(pattern);
        expect((err as Error).message).not.toContain('\n');
      }
    } finally {
      t.cleanup();
    }
  });
});

describe("the profiler's 5,000,000-event cap", () => {
  it('a stream of exactly TSL_EVENT_CAP events is flagged as capped (the real threshold, generated in memory)', async () => {
    expect(TSL_EVENT_CAP).toBe(5_000_000);
    const perChunk = 50_000;
    const event = '{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"e"},';
    async function* generate(total: number): AsyncGenerator<Buffer> {
      yield Buffer.from('{"displayTimeUnit":"ns","traceEvents":[');
      const block = Buffer.from(event.repeat(perChunk));
      for (let n = 0; n < total; n += perChunk) yield block;
      yield Buffer.from('{}]}');
    }
    let delivered = 0;
    const capped = await scanChromeJson(generate(TSL_EVENT_CAP), 'generated.json', {
      wantLane: () => true,
      onEvent: () => {
        delivered++;
      },
    });
    expect(delivered).toBe(TSL_EVENT_CAP);
    expect(capped.capped).toBe(true);
    expect(capped.warnings[0]).toMatch(
      /exactly 5,000,000 events, the profiler's cap: later events were dropped/,
    );
  }, 120_000);
});
