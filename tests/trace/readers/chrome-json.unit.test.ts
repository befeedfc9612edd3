import { describe, expect, it } from 'vitest';
import { scanChromeJson } from '../../../src/trace/readers/chrome-json.js';
import type { NormalizedEvent, ReadStats, TraceLane } from '../../../src/trace/readers/model.js';
import { InputError } from '../../../src/util/errors.js';

/** The §2 example of reference/traces.md, exactly as tsl writes it (one line, string args, `{}` tail). */
const TSL_EXAMPLE =
  '{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[' +
  '{"ph":"M","pid":3,"name":"process_name","args":{"name":"/device:TPU:0"}},' +
  '{"ph":"M","pid":3,"name":"process_sort_index","args":{"sort_index":3}},' +
  '{"ph":"M","pid":3,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},' +
  '{"ph":"M","pid":3,"tid":3,"name":"thread_sort_index","args":{"sort_index":3}},' +
  '{"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},' +
  '{"ph":"M","pid":701,"tid":3116817,"name":"thread_name","args":{"name":"main/3116817"}},' +
  '{"ph":"X","pid":701,"tid":3116817,"ts":5439000.0000000009,"dur":20.5,"name":"train","args":{"step_num":"7"}},' +
  '{"ph":"X","pid":3,"tid":3,"ts":5439011.7444999995,"dur":4443.7663280000006,"name":"broadcast.2",' +
  '"args":{"bytes_accessed":"5368709120","device_duration_ps":"4443766250","device_offset_ps":"5438997127500",' +
  '"flops":"0","hlo_category":"broadcast","long_name":"%broadcast.2 = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} broadcast(f32[]{:T(128)S(6)} %copy), dimensions={}",' +
  '"model_flops":"0","program_id":"11287434908481120160","raw_bytes_accessed":"5368709120",' +
  '"shape_with_layout":"f32[5,1024,1024,256]{3,2,1,0:T(8,128)}","source":"host_offload_stress_test.py:37","symbol_id":"1",' +
  '"tf_op":"jit(broadcast_in_dim)/jit(main)/broadcast_in_dim:"}},' +
  '{}]}';

async function* chunksOf(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, Math.min(bytes.length, i + size));
}

async function scan(
  text: string,
  opts: { chunk?: number; eventCap?: number; want?: (l: TraceLane) => boolean } = {},
): Promise<{ events: NormalizedEvent[]; stats: ReadStats }> {
  const events: NormalizedEvent[] = [];
  const lanes: TraceLane[] = [];
  const stats = await scanChromeJson(
    chunksOf(text, opts.chunk ?? 1 << 20),
    'test.json',
    {
      wantLane: opts.want ?? (() => true),
      onEvent(lane, ev) {
        lanes.push(lane);
        const longName = ev.longName();
        events.push({
          device: lane.device.name,
          thread: lane.name,
          name: ev.name,
          ...(longName === undefined ? {} : { longName }),
          ...(ev.category === undefined ? {} : { category: ev.category }),
          startPs: ev.startPs,
          durPs: ev.durPs,
          args: ev.args(),
        });
      },
    },
    opts.eventCap === undefined ? {} : { eventCap: opts.eventCap },
  );
  // Names that arrived late are read from the (updated) lanes.
  events.forEach((e, k) => {
    e.device = lanes[k]!.device.name;
    e.thread = lanes[k]!.name;
  });
  return { events, stats };
}

async function scanError(text: string, chunk?: number): Promise<string> {
  try {
    await scan(text, chunk === undefined ? {} : { chunk });
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    const msg = (err as InputError).message;
    expect(msg).not.toContain('\n');
    expect((err as InputError).exitCode).toBe(2);
    return msg;
  }
  throw new Error('no error');
}

describe('Chrome trace JSON scanner', () => {
  it('reads the tsl example: names from metadata, exact picoseconds, string args', async () => {
    const { events, stats } = await scan(TSL_EXAMPLE);
    expect(events).toHaveLength(2);
    const op = events.find((e) => e.name === 'broadcast.2')!;
    expect(op.device).toBe('/device:TPU:0');
    expect(op.thread).toBe('XLA Ops');
    // %.17g text → exact integer ps.
    expect(op.startPs).toBe(5439011744500);
    expect(op.durPs).toBe(4443766328);
    expect(op.args.program_id).toBe('11287434908481120160');
    expect(op.args.hlo_category).toBe('broadcast');
    expect(op.longName).toMatch(/^%broadcast\.2 = f32/);
    const step = events.find((e) => e.name === 'train')!;
    expect(step.device).toBe('/host:CPU');
    expect(step.thread).toBe('main/3116817');
    expect(step.startPs).toBe(5439000000000);
    expect(step.args).toEqual({ step_num: '7' });
    expect(stats.events).toBe(2);
    expect(stats.capped).toBe(false);
    expect(stats.lateNames).toBe(false);
    expect(stats.warnings).toEqual([]);
    expect(stats.bytes).toBe(Buffer.byteLength(TSL_EXAMPLE));
  });

  it('gives the same events whatever the chunk size (values split across chunks)', async () => {
    const whole = await scan(TSL_EXAMPLE);
    for (const size of [1, 2, 3, 7, 64, 333]) {
      expect((await scan(TSL_EXAMPLE, { chunk: size })).events).toEqual(whole.events);
    }
  });

  it('tolerates Python spacing, any key order, metadata anywhere, string pids and {} elements', async () => {
    const text = `{"traceEvents": [
      {},
      {"name": "fusion.1", "dur": 2, "ts": 10.5, "tid": "ops", "pid": "tpu0", "ph": "X", "args": {"hlo_category": "loop fusion"}},
      {"ph": "M", "pid": "tpu0", "tid": "ops", "name": "thread_name", "args": {"name": "XLA Ops"}},
      {"args": {"name": "/device:TPU:0"}, "name": "process_name", "pid": "tpu0", "ph": "M"},
      {"ph": "X", "pid": "tpu0", "tid": "ops", "ts": 20, "dur": 1.25, "name": "fusion.2"}
    ], "otherData": {"version": [1, {"x": "]}"}]}}`;
    const { events, stats } = await scan(text, { chunk: 5 });
    expect(events.map((e) => [e.device, e.thread, e.name, e.startPs, e.durPs])).toEqual([
      ['/device:TPU:0', 'XLA Ops', 'fusion.1', 10_500_000, 2_000_000],
      ['/device:TPU:0', 'XLA Ops', 'fusion.2', 20_000_000, 1_250_000],
    ]);
    expect(events[0]!.args).toEqual({ hlo_category: 'loop fusion' });
    // The lane was offered before its names arrived.
    expect(stats.lateNames).toBe(true);
  });

  it('reads the bare-array form, with or without the closing bracket', async () => {
    const body =
      '[{"ph":"X","pid":1,"tid":2,"ts":1,"dur":1,"name":"a"},{"ph":"X","pid":1,"tid":2,"ts":2,"dur":1,"name":"b"}';
    const closed = await scan(`${body}]`);
    expect(closed.events.map((e) => e.name)).toEqual(['a', 'b']);
    expect(closed.stats.warnings).toEqual([]);
    const open = await scan(`${body}\n`);
    expect(open.events.map((e) => e.name)).toEqual(['a', 'b']);
    expect(open.stats.warnings.join()).toMatch(/no closing "\]"/);
    expect(open.events[0]!.device).toBe('pid 1');
    expect(open.events[0]!.thread).toBe('tid 2');
  });

  it('decodes escapes and non-ASCII text split across chunks; numeric and nested args become JSON text', async () => {
    const text =
      '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1,"name":"noyau_é\\u00e9_\\"x\\"_日本",' +
      '"cat":"kernel","args":{"long_name":"a\\\\b \\"q\\" \\n","n":12,"dims":[[1,2],[3]],"ok":true,"z":null}}]}';
    for (const size of [1, 2, 5, 1000]) {
      const { events } = await scan(text, { chunk: size });
      expect(events[0]!.name).toBe('noyau_éé_"x"_日本');
      expect(events[0]!.category).toBe('kernel');
      expect(events[0]!.args).toEqual({
        long_name: 'a\\b "q" \n',
        n: '12',
        dims: '[[1,2],[3]]',
        ok: 'true',
        z: 'null',
      });
      expect(events[0]!.longName).toBe('a\\b "q" \n');
    }
  });

  it('handles exponents, negative times and epoch-microsecond timestamps without losing picoseconds', async () => {
    const text =
      '{"traceEvents":[' +
      '{"ph":"X","pid":1,"tid":1,"ts":1661203462598772,"dur":9.9999999999999995e-07,"name":"first"},' +
      '{"ph":"X","pid":1,"tid":1,"ts":1661203462598773.125,"dur":0.5,"name":"second"},' +
      '{"ph":"X","pid":1,"tid":1,"ts":1661203462598770,"dur":1e3,"name":"earlier"}]}';
    const { events, stats } = await scan(text);
    expect(stats.originPs).toBe('1661203462598772000000');
    expect(events.map((e) => [e.name, e.startPs, e.durPs])).toEqual([
      ['first', 0, 1],
      ['second', 1_125_000, 500_000],
      ['earlier', -2_000_000, 1_000_000_000],
    ]);
  });

  it('finds args without parsing them, exactly as parsing does, whatever the chunking', async () => {
    // Many tsl-shaped events over several chunks: keys present in some events only, escapes, one event
    // longer than the text a chunk boundary is finished in, and `"name":"` outside every args object.
    const events: string[] = [];
    for (let k = 0; k < 3000; k++) {
      const args: string[] = [];
      if (k % 3 !== 0) args.push(`"device_duration_ps":"${1000 + k}"`);
      if (k % 7 === 0) args.push(`"hlo_op":"fusion.${k}"`);
      args.push(`"long_name":"%fusion.${k} = f32[${k}]{0} fusion(${k === 1500 ? 'x'.repeat(70_000) : ''})"`);
      if (k % 5 === 0) args.push(`"name":"inner \\"quoted\\" ${k}"`);
      args.push(`"source_stack":"a.py:${k}\\nb.py:2\\n"`);
      events.push(
        `{"ph":"X","pid":3,"tid":3,"ts":${k}.5,"dur":0.25,"name":"op.${k}","args":{${args.join(',')}}}`,
      );
    }
    const text = `{"displayTimeUnit":"ns","traceEvents":[${events.join(',')},{}]}`;
    const keys = ['device_duration_ps', 'hlo_op', 'name', 'long_name', 'absent'];
    const read = async (chunk: number) => {
      const seen: unknown[] = [];
      await scanChromeJson(chunksOf(text, chunk), 'test.json', {
        wantLane: () => true,
        onEvent(_lane, ev) {
          const fast = keys.map((key) => [ev.arg(key), ev.argNumber(key)]);
          const parsed = ev.args();
          const slow = keys.map((key) => {
            const v = parsed[key];
            return [
              v,
              v === undefined || v.trim() === '' || !Number.isFinite(Number(v)) ? undefined : Number(v),
            ];
          });
          expect(fast).toEqual(slow);
          seen.push(fast);
        },
      });
      return seen;
    };
    const whole = await read(text.length);
    expect(whole).toHaveLength(3000);
    expect(whole[1]).toEqual([
      ['1001', 1001],
      [undefined, undefined],
      [undefined, undefined],
      ['%fusion.1 = f32[1]{0} fusion()', undefined],
      [undefined, undefined],
    ]);
    expect((whole[5] as unknown[][])[2]).toEqual(['inner "quoted" 5', undefined]);
    for (const size of [65_537, 100_000, 1 << 20]) expect(await read(size)).toEqual(whole);
  });

  it('counts events of declined lanes without delivering them, and skips their args', async () => {
    const { events, stats } = await scan(TSL_EXAMPLE, { want: (l) => l.name !== 'XLA Ops' });
    expect(events.map((e) => e.name)).toEqual(['train']);
    expect(stats.events).toBe(2);
    expect(stats.eventsDelivered).toBe(1);
  });

  it('warns when the event count equals the cap, and reports other phases', async () => {
    const events = Array.from(
      { length: 5 },
      (_, k) => `{"ph":"X","pid":1,"tid":1,"ts":${k},"dur":1,"name":"e"}`,
    );
    const text = `{"traceEvents":[${events.join(',')},{"ph":"B","pid":1,"tid":1,"ts":1,"name":"b"},{"ph":"i","pid":1,"ts":1,"name":"i"}]}`;
    const capped = await scan(text, { eventCap: 5 });
    expect(capped.stats.capped).toBe(true);
    expect(capped.stats.warnings.join('\n')).toMatch(/exactly 5 events, the profiler's cap/);
    expect(capped.stats.warnings.join('\n')).toMatch(/1 "B", 1 "i"/);
    const notCapped = await scan(text, { eventCap: 6 });
    expect(notCapped.stats.capped).toBe(false);
  });
});

describe('Chrome trace JSON scanner on bad input', () => {
  it('invalid JSON mid-file names the byte offset', async () => {
    const broken = TSL_EXAMPLE.replace('"tid":3,"ts":5439011', '"tid":3 "ts":5439011');
    const msg = await scanError(broken, 100);
    expect(msg).toMatch(
      /^test\.json: invalid JSON near byte \d+: expected ',' or '\}' in an event, found '"'$/,
    );
    const at = Number(/near byte (\d+)/.exec(msg)![1]);
    expect(broken.slice(at - 8, at + 4)).toContain('"tid":3 ');
  });

  it('a trace cut off mid-file is reported as truncated', async () => {
    expect(await scanError(TSL_EXAMPLE.slice(0, 700), 64)).toMatch(
      /unexpected end of file inside the traceEvents array/,
    );
    expect(await scanError(TSL_EXAMPLE.slice(0, -1))).toMatch(
      /unexpected end of file inside the top-level object/,
    );
  });

  it('empty files, non-JSON and JSON without traceEvents are refused', async () => {
    expect(await scanError('')).toMatch(/the file is empty/);
    expect(await scanError('   \n')).toMatch(/no JSON value/);
    expect(await scanError('\x08\x01binary')).toMatch(/expected '\{' or '\[' at the start of a Chrome trace/);
    expect(await scanError('{"foo": [1, 2, 3]}')).toMatch(/not a Chrome trace: no "traceEvents" array/);
  });
});
