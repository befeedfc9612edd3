/**
 * Synthetic, tsl-shaped TPU traces of any size for the benchmark, as `trace.json.gz` and `.xplane.pb`.
 *
 * The workload: 4 TPU v6e cores (plane ids 2, 10, 18, 26 as in the real fixture), one `jit_train_step`
 * execution per step on each core with `OPS_PER_STEP` XLA ops (fusions, convolutions, collectives, copies,
 * and Pallas `tpu_custom_call` kernels), XLA TraceMe markers, and host threads with a `train` step
 * annotation (`step_num`), dispatch and execute events. Op args follow the real fixture: HLO long names,
 * shapes, `tf_op` scopes, sources and multi-line `source_stack` strings (so JSON escapes are common).
 *
 * Both writers stream: the JSON through gzip (level 1 to keep generation fast), the XSpace through temp
 * files per line, so a 5 GB trace never sits in memory.
 */

import { once } from 'node:events';
import { closeSync, createWriteStream, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import {
  eventJson,
  formatG17 as g17,
  HOST_PID,
  JSON_HEAD,
  JSON_TAIL,
  metadataJson,
  type TslDevice,
} from './tsl-json.js';

export const OPS_PER_STEP = 400;
const PLANE_IDS = [2, 10, 18, 26];
const PROGRAM_ID = '12190760917235803885';
const MODULE_NAME = `jit_train_step(${PROGRAM_ID})`;
const HOST_MAIN_TID = 3116817;
const HOST_EXEC_TIDS = [3118851, 3118852, 3118853, 3118854];

export interface OpTemplate {
  /** Short HLO name, e.g. `fusion.12`. */
  name: string;
  category: string;
  longName: string;
  shape: string;
  tfOp: string;
  source: string;
  sourceStack: string;
  flops: number;
  bytes: number;
  durPs: number;
  customCall: boolean;
}

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KINDS = [
  { base: 'fusion', category: 'loop fusion', opcode: 'fusion', weight: 40 },
  { base: 'convolution_add_fusion', category: 'convolution fusion', opcode: 'fusion', weight: 20 },
  { base: 'multiply_reduce_fusion', category: 'reduce fusion', opcode: 'fusion', weight: 10 },
  { base: 'copy', category: 'data formatting', opcode: 'copy', weight: 10 },
  { base: 'all-reduce', category: 'all-reduce', opcode: 'all-reduce', weight: 6 },
  { base: 'transpose', category: 'data formatting', opcode: 'transpose', weight: 6 },
  { base: 'gdn_chunk_fwd', category: 'custom-call', opcode: 'custom-call', weight: 4 },
  {
    base: 'bitcast_dynamic-update-slice_fusion',
    category: 'dynamic-update-slice fusion',
    opcode: 'fusion',
    weight: 4,
  },
];

function pickWeighted(at: number): (typeof KINDS)[number] {
  let rest = at;
  for (const k of KINDS) {
    rest -= k.weight;
    if (rest < 0) return k;
  }
  return KINDS[0]!;
}

/** The ops of one step, identical on every core and every step. */
export function opTemplates(count = OPS_PER_STEP): OpTemplate[] {
  const rand = rng(42);
  const total = KINDS.reduce((s, k) => s + k.weight, 0);
  const seen = new Map<string, number>();
  const ops: OpTemplate[] = [];
  for (let i = 0; i < count; i++) {
    const kind = pickWeighted(rand() * total);
    const n = seen.get(kind.base) ?? 0;
    seen.set(kind.base, n + 1);
    const name = n === 0 ? kind.base : `${kind.base}.${n}`;
    const layer = Math.floor((i / count) * 24);
    const dims = [8, 2048, [1024, 2048, 4096][i % 3]!];
    const shape = `bf16[${dims.join(',')}]{2,1,0:T(8,128)(2,1)}`;
    const operands = Array.from(
      { length: 2 + (i % 4) },
      (_, k) => `bf16[${dims.join(',')}]{2,1,0:T(8,128)(2,1)} %param.${(i * 7 + k) % 97}`,
    ).join(', ');
    const customCall = kind.opcode === 'custom-call';
    const attrs = customCall
      ? `custom_call_target="tpu_custom_call", api_version=API_VERSION_TYPED_FFI, backend_config={"custom_call_config": {"body": "TUxJUu9SAQAAAA${i}", "serialization_format": 1, "needs_hlo_passes": false}, "kernel_name": "${kind.base}"}`
      : kind.opcode === 'fusion'
        ? `kind=kLoop, calls=%fused_computation.${i}.clone`
        : kind.opcode === 'all-reduce'
          ? 'channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%region_0.3.clone'
          : 'dimensions={0,2,1}';
    const longName = `%${name} = ${shape} ${kind.opcode}(${operands}), ${attrs}`;
    const scope = customCall
      ? `gdn/chunk_${layer}`
      : `transformer/layer_${layer}/${['attention', 'mlp', 'norm'][i % 3]}`;
    const flops = customCall ? 0 : Math.round(dims[0]! * dims[1]! * dims[2]! * (2 + (i % 5)));
    ops.push({
      name,
      category: kind.category,
      longName,
      shape,
      tfOp: `jit(train_step)/jit(main)/${scope}/${kind.opcode === 'fusion' ? 'dot_general' : kind.opcode}:`,
      source: `/workspace/model/layers.py:${100 + (i % 300)}`,
      sourceStack: `/workspace/model/layers.py:${100 + (i % 300)}:8\n/workspace/model/transformer.py:${40 + layer}:12\n/workspace/train.py:88:4\n/usr/lib/python3.11/site-packages/jax/_src/pjit.py:1402:10\n`,
      flops,
      bytes: dims[0]! * dims[1]! * dims[2]! * 2 * (1 + (i % 3)),
      durPs: Math.round((customCall ? 180 : 20 + rand() * 120) * 1e6),
      customCall,
    });
  }
  return ops;
}

/** Time layout of one step on one core: op start offsets (ps from the step start) and the step length. */
function stepLayout(ops: readonly OpTemplate[]): { starts: number[]; modulePs: number; stepPs: number } {
  const starts: number[] = [];
  let t = 2_000_000; // 2 µs launch latency
  for (const op of ops) {
    starts.push(t);
    t += op.durPs + 350_000; // 0.35 µs between ops
  }
  return { starts, modulePs: t, stepPs: t + 40_000_000 }; // 40 µs host gap between steps
}

// ---------------------------------------------------------------------------------------------- JSON --

interface HostEventTemplate {
  tid: number;
  name: string;
  offsetPs: number;
  durPs: number;
  args: Record<string, string>;
}

function hostTemplates(stepPs: number): HostEventTemplate[] {
  const events: HostEventTemplate[] = [
    { tid: HOST_MAIN_TID, name: 'train', offsetPs: 0, durPs: stepPs - 5_000_000, args: {} },
    {
      tid: HOST_MAIN_TID,
      name: 'PjitFunction(train_step)',
      offsetPs: 1_000_000,
      durPs: 30_000_000,
      args: {},
    },
    { tid: HOST_MAIN_TID, name: 'ParseArguments', offsetPs: 1_500_000, durPs: 2_000_000, args: {} },
    {
      tid: HOST_MAIN_TID,
      name: 'TfrtTpuLoadedExecutable::Execute',
      offsetPs: 4_000_000,
      durPs: 20_000_000,
      args: {},
    },
    { tid: HOST_MAIN_TID, name: 'Wait for donation holds', offsetPs: 25_000_000, durPs: 300_000, args: {} },
  ];
  for (const tid of HOST_EXEC_TIDS) {
    events.push({
      tid,
      name: 'TfrtTpuLoadedExecutable::ExecutePrepare',
      offsetPs: 5_000_000,
      durPs: 9_000_000,
      args: {},
    });
    events.push({ tid, name: 'tpu::System::Execute', offsetPs: 14_500_000, durPs: 3_000_000, args: {} });
  }
  return events;
}

function tslDevices(): TslDevice[] {
  const host: TslDevice = {
    pid: HOST_PID,
    name: '/host:CPU',
    resources: [HOST_MAIN_TID, ...HOST_EXEC_TIDS].map((tid, k) => ({
      tid,
      name: k === 0 ? `main/${tid}` : `py_xla_execute/${tid}`,
      sortIndex: k + 1,
    })),
  };
  const tpus = PLANE_IDS.map((id, k) => ({
    pid: 1 + id,
    name: `/device:TPU:${k}`,
    resources: [
      { tid: 2, name: 'XLA Modules', sortIndex: 2 },
      { tid: 3, name: 'XLA Ops', sortIndex: 3 },
      { tid: 6, name: 'XLA TraceMe', sortIndex: 6 },
    ],
  }));
  return [host, ...tpus];
}

/** Per-op JSON pieces around the per-occurrence numbers, rendered once. */
function opJsonParts(pid: number, op: OpTemplate): [string, string, string, string] {
  const probe = eventJson({
    pid,
    tid: 3,
    tsPs: 1,
    durPs: 1,
    name: op.name,
    args: {
      device_duration_ps: '@DDUR@',
      device_offset_ps: '@DOFF@',
      hlo_category: op.category,
      long_name: op.longName,
      model_flops: String(op.flops),
      raw_bytes_accessed: String(op.bytes),
      shape_with_layout: op.shape,
      source: op.source,
      source_stack: op.sourceStack,
      tf_op: op.tfOp,
    },
  });
  // Split around ts/dur and the two per-occurrence args.
  const head = `{"ph":"X","pid":${pid},"tid":3,"ts":`;
  const afterDur = probe.slice(probe.indexOf(',"name":'));
  const [beforeDdur, rest] = afterDur.split('@DDUR@') as [string, string];
  const [between, tail] = rest.split('@DOFF@') as [string, string];
  return [head, beforeDdur, between, tail];
}

/** Format µs for JSON the way tsl does: `%.17g` of ps / 1e6. */
function us(ps: number): string {
  // Most values are exact in µs with up to 6 decimals; %.17g may show binary noise, like tsl.
  return g17(ps / 1e6);
}

async function write(out: Writable, s: string): Promise<void> {
  if (!out.write(s)) await once(out, 'drain');
}

/**
 * Write a tsl-shaped `trace.json.gz` of about `targetBytes` uncompressed bytes.
 * Returns the uncompressed size and the number of events written.
 */
export async function writeSyntheticJson(
  path: string,
  targetBytes: number,
  opts: { gzipLevel?: number; opsPerStep?: number } = {},
): Promise<{ bytes: number; events: number; steps: number }> {
  const ops = opTemplates(opts.opsPerStep);
  const layout = stepLayout(ops);
  const devices = tslDevices();
  const parts = PLANE_IDS.map((id) => ops.map((op) => opJsonParts(1 + id, op)));
  const hosts = hostTemplates(layout.stepPs);
  // Estimate bytes per step from one rendered step.
  const perStep = renderStepBytes(parts, ops, layout, hosts);
  const steps = Math.max(1, Math.round(targetBytes / perStep));

  const gz = createGzip({ level: opts.gzipLevel ?? 1 });
  const file = createWriteStream(path);
  gz.pipe(file);
  let bytes = 0;
  let events = 0;
  let buf = '';
  const push = async (s: string): Promise<void> => {
    buf += s;
    if (buf.length > 1 << 20) {
      bytes += buf.length;
      await write(gz, buf);
      buf = '';
    }
  };
  await push(JSON_HEAD + metadataJson(devices));
  const stepStart = (step: number): number => 1_000_000_000 + step * layout.stepPs;
  // tsl order: the host plane first (line by line), then each device plane line by line.
  for (const tid of [HOST_MAIN_TID, ...HOST_EXEC_TIDS]) {
    for (let s = 0; s < steps; s++) {
      for (const h of hosts) {
        if (h.tid !== tid) continue;
        const args = h.name === 'train' ? { step_num: String(s) } : h.args;
        await push(
          eventJson({
            pid: HOST_PID,
            tid,
            tsPs: stepStart(s) + h.offsetPs,
            durPs: h.durPs,
            name: h.name,
            args,
          }),
        );
        events++;
      }
    }
  }
  for (let d = 0; d < PLANE_IDS.length; d++) {
    const pid = 1 + PLANE_IDS[d]!;
    const skew = d * 125_000;
    for (let s = 0; s < steps; s++) {
      const args = { core_type: '0', queue_id: '0', replica_id: '0', run_id: String(s + 1) };
      await push(
        eventJson({
          pid,
          tid: 2,
          tsPs: stepStart(s) + skew,
          durPs: layout.modulePs,
          name: MODULE_NAME,
          args,
        }),
      );
      events++;
    }
    const devParts = parts[d]!;
    for (let s = 0; s < steps; s++) {
      const base = stepStart(s) + skew;
      let chunk = '';
      for (let k = 0; k < ops.length; k++) {
        const [head, beforeDdur, between, tail] = devParts[k]!;
        const op = ops[k]!;
        const ts = base + layout.starts[k]!;
        chunk += `${head}${us(ts)},"dur":${us(op.durPs)}${beforeDdur}${op.durPs}${between}${ts - 7_000_000}${tail}`;
      }
      events += ops.length;
      await push(chunk);
    }
    for (let s = 0; s < steps; s++) {
      await push(
        eventJson({
          pid,
          tid: 6,
          tsPs: stepStart(s) + skew,
          durPs: 1_500_000,
          name: 'barrier-cores',
          args: {},
        }),
      );
      events++;
    }
  }
  await push(JSON_TAIL);
  bytes += buf.length;
  await write(gz, buf);
  gz.end();
  await once(file, 'close');
  return { bytes, events, steps };
}

function renderStepBytes(
  parts: [string, string, string, string][][],
  ops: readonly OpTemplate[],
  layout: { starts: number[] },
  hosts: readonly HostEventTemplate[],
): number {
  let n = 0;
  for (const devParts of parts) {
    for (let k = 0; k < ops.length; k++) {
      const [a, b, c, d] = devParts[k]!;
      n += a.length + b.length + c.length + d.length + 2 * 20 + 24 + 16 + String(layout.starts[k]).length;
    }
    n += 400; // module + TraceMe events
  }
  for (const h of hosts) n += 120 + h.name.length;
  return n;
}

// -------------------------------------------------------------------------------------------- XSpace --

/** Minimal protobuf writer into one growing buffer. */
class PbWriter {
  private cur = Buffer.allocUnsafe(256);
  private pos = 0;

  get length(): number {
    return this.pos;
  }

  private room(n: number): void {
    if (this.pos + n > this.cur.length) {
      const next = Buffer.allocUnsafe(Math.max(this.cur.length * 2, this.pos + n));
      this.cur.copy(next, 0, 0, this.pos);
      this.cur = next;
    }
  }

  /** Any int64/uint64 (negative numbers as two's complement). */
  varint(v: number | bigint): this {
    let x = BigInt.asUintN(64, BigInt(v));
    this.room(10);
    while (x >= 0x80n) {
      this.cur[this.pos++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.cur[this.pos++] = Number(x);
    return this;
  }

  /** Fast path for non-negative numbers below 2^53. */
  uvarint(v: number): this {
    this.room(10);
    while (v >= 0x80) {
      this.cur[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.cur[this.pos++] = v;
    return this;
  }

  tag(field: number, wireType: number): this {
    return this.uvarint(field * 8 + wireType);
  }

  raw(data: Buffer): this {
    this.room(data.length);
    data.copy(this.cur, this.pos);
    this.pos += data.length;
    return this;
  }

  bytes(field: number, data: Buffer): this {
    return this.tag(field, 2).uvarint(data.length).raw(data);
  }

  string(field: number, s: string): this {
    return this.bytes(field, Buffer.from(s, 'utf8'));
  }

  message(field: number, inner: PbWriter): this {
    return this.bytes(field, inner.finish());
  }

  /** Everything written so far; the writer starts empty again. */
  finish(): Buffer {
    const out = Buffer.from(this.cur.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }
}

type StatValue = { int: number | bigint } | { uint: number | bigint } | { str: string } | { double: number };

/** An encoded XStat. */
function stat(id: number, v: StatValue): Buffer {
  const w = new PbWriter().tag(1, 0).uvarint(id);
  if ('int' in v) w.tag(4, 0).varint(v.int);
  else if ('uint' in v) w.tag(3, 0).varint(v.uint);
  else if ('str' in v) w.string(5, v.str);
  else {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v.double);
    w.tag(2, 1).raw(b);
  }
  return w.finish();
}

const STAT_NAMES = [
  'hlo_category',
  'program_id',
  'symbol_id',
  'flops',
  'model_flops',
  'bytes_accessed',
  'raw_bytes_accessed',
  'shape_with_layout',
  'tf_op',
  'source',
  'source_stack',
  'device_offset_ps',
  'device_duration_ps',
  'run_id',
  'replica_id',
  'queue_id',
  'core_type',
  'step_num',
  'device_type_string',
  'peak_teraflops_per_second',
  'peak_hbm_bw_gigabytes_per_second',
];
const SID = Object.fromEntries(STAT_NAMES.map((n, k) => [n, k + 1])) as Record<string, number>;

/** A line whose events were streamed to a temp file. */
interface LineFile {
  id: number;
  name: string;
  path: string;
  bytes: number;
}

interface PlaneParts {
  head: Buffer;
  lines: { header: Buffer; file: LineFile }[];
  tail: Buffer;
}

function lengthOfVarint(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/**
 * Write a synthetic `.xplane.pb` of about `targetBytes`, the same workload as the JSON.
 * Returns its size and event count.
 */
export function writeSyntheticXplane(
  path: string,
  targetBytes: number,
  opts: { opsPerStep?: number } = {},
): { bytes: number; events: number; steps: number } {
  const ops = opTemplates(opts.opsPerStep);
  const layout = stepLayout(ops);
  const hosts = hostTemplates(layout.stepPs);
  const work = mkdtempSync(join(tmpdir(), 'hc-xplane-'));
  try {
    const probe = encodeDeviceStep(ops, layout, 1_000_000_000);
    const steps = Math.max(1, Math.round(targetBytes / (probe.length * PLANE_IDS.length)));
    let events = 0;
    let lineCount = 0;
    const stepStart = (s: number): number => 1_000_000_000 + s * layout.stepPs;
    const writeLine = (id: number, name: string, produce: (emit: (b: Buffer) => void) => void): LineFile => {
      const p = join(work, `line-${lineCount++}.bin`);
      const fd = openSync(p, 'w');
      let bytes = 0;
      produce((b) => {
        writeSync(fd, b);
        bytes += b.length;
      });
      closeSync(fd);
      return { id, name, path: p, bytes };
    };
    const planes: PlaneParts[] = [];

    // Host plane: step annotations and dispatch events.
    const hostMeta = new Map<string, number>();
    for (const h of hosts) if (!hostMeta.has(h.name)) hostMeta.set(h.name, hostMeta.size + 1);
    const hostLines = [HOST_MAIN_TID, ...HOST_EXEC_TIDS].map((tid) =>
      writeLine(tid, tid === HOST_MAIN_TID ? `main/${tid}` : `py_xla_execute/${tid}`, (emit) => {
        const w = new PbWriter();
        for (let s = 0; s < steps; s++) {
          for (const h of hosts) {
            if (h.tid !== tid) continue;
            const ev = new PbWriter().tag(1, 0).uvarint(hostMeta.get(h.name)!);
            ev.tag(2, 0)
              .uvarint(stepStart(s) + h.offsetPs)
              .tag(3, 0)
              .uvarint(h.durPs);
            if (h.name === 'train') ev.bytes(4, stat(SID.step_num!, { int: s }));
            w.message(4, ev);
            events++;
          }
          if (w.length > 1 << 20) emit(w.finish());
        }
        emit(w.finish());
      }),
    );
    planes.push(
      planeParts(
        1,
        '/host:CPU',
        hostLines,
        [...hostMeta].map(([name, id]) => eventMeta(id, name, '', [])),
        [],
      ),
    );

    // Device planes: modules, ops, TraceMe.
    const opMeta = ops.map((op, k) =>
      eventMeta(k + 1, op.longName, op.name, [
        stat(SID.hlo_category!, { str: op.category }),
        stat(SID.program_id!, { uint: BigInt(PROGRAM_ID) }),
        stat(SID.symbol_id!, { int: k + 1 }),
        stat(SID.flops!, { uint: op.flops }),
        stat(SID.model_flops!, { uint: op.flops }),
        stat(SID.bytes_accessed!, { uint: op.bytes }),
        stat(SID.raw_bytes_accessed!, { uint: op.bytes }),
        stat(SID.shape_with_layout!, { str: op.shape }),
        stat(SID.tf_op!, { str: op.tfOp }),
        stat(SID.source!, { str: op.source }),
        stat(SID.source_stack!, { str: op.sourceStack }),
      ]),
    );
    const moduleMetaId = ops.length + 1;
    const barrierMetaId = ops.length + 2;
    for (let d = 0; d < PLANE_IDS.length; d++) {
      const skew = d * 125_000;
      const modules = writeLine(2, 'XLA Modules', (emit) => {
        const w = new PbWriter();
        for (let s = 0; s < steps; s++) {
          const ev = new PbWriter()
            .tag(1, 0)
            .uvarint(moduleMetaId)
            .tag(2, 0)
            .uvarint(stepStart(s) + skew);
          ev.tag(3, 0)
            .uvarint(layout.modulePs)
            .bytes(4, stat(SID.run_id!, { int: s + 1 }));
          w.message(4, ev);
          events++;
          if (w.length > 1 << 20) emit(w.finish());
        }
        emit(w.finish());
      });
      const opsLine = writeLine(3, 'XLA Ops', (emit) => {
        for (let s = 0; s < steps; s++) {
          emit(encodeDeviceStep(ops, layout, stepStart(s) + skew));
          events += ops.length;
        }
      });
      const traceMe = writeLine(6, 'XLA TraceMe', (emit) => {
        const w = new PbWriter();
        for (let s = 0; s < steps; s++) {
          const ev = new PbWriter()
            .tag(1, 0)
            .uvarint(barrierMetaId)
            .tag(2, 0)
            .uvarint(stepStart(s) + skew);
          w.message(4, ev.tag(3, 0).uvarint(1_500_000));
          events++;
          if (w.length > 1 << 20) emit(w.finish());
        }
        emit(w.finish());
      });
      const metas = [
        ...opMeta,
        eventMeta(moduleMetaId, MODULE_NAME, '', []),
        eventMeta(barrierMetaId, 'barrier-cores', '', []),
      ];
      const planeStats = [
        stat(SID.device_type_string!, { str: 'TPU v6 Lite' }),
        stat(SID.peak_teraflops_per_second!, { double: 918 }),
      ];
      planes.push(
        planeParts(PLANE_IDS[d]!, `/device:TPU:${d}`, [modules, opsLine, traceMe], metas, planeStats),
      );
    }

    // Assemble with known lengths, streaming each line's events from its temp file.
    const out = openSync(path, 'w');
    let written = 0;
    const put = (b: Buffer): void => {
      writeSync(out, b);
      written += b.length;
    };
    const copyBuf = Buffer.allocUnsafe(1 << 20);
    for (const plane of planes) {
      let body = plane.head.length + plane.tail.length;
      const lineLens = plane.lines.map((l) => l.header.length + l.file.bytes);
      for (const len of lineLens) body += 1 + lengthOfVarint(len) + len;
      put(new PbWriter().tag(1, 2).uvarint(body).finish());
      put(plane.head);
      plane.lines.forEach((l, k) => {
        put(new PbWriter().tag(3, 2).uvarint(lineLens[k]!).finish());
        put(l.header);
        const fd = openSync(l.file.path, 'r');
        for (let pos = 0; pos < l.file.bytes; ) {
          const n = readSync(fd, copyBuf, 0, copyBuf.length, pos);
          put(copyBuf.subarray(0, n));
          pos += n;
        }
        closeSync(fd);
      });
      put(plane.tail);
    }
    closeSync(out);
    return { bytes: written, events, steps };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** An XPlane's fields: id and name first, then its lines (from temp files), then metadata and stats. */
function planeParts(
  id: number,
  name: string,
  lines: LineFile[],
  metas: Buffer[],
  stats: Buffer[],
): PlaneParts {
  const head = new PbWriter().tag(1, 0).uvarint(id).string(2, name).finish();
  const tail = new PbWriter();
  for (const m of metas) tail.bytes(4, m);
  STAT_NAMES.forEach((n, k) => {
    const value = new PbWriter()
      .tag(1, 0)
      .uvarint(k + 1)
      .string(2, n)
      .finish();
    tail.bytes(
      5,
      new PbWriter()
        .tag(1, 0)
        .uvarint(k + 1)
        .bytes(2, value)
        .finish(),
    );
  });
  for (const st of stats) tail.bytes(6, st);
  return {
    head,
    lines: lines.map((file) => ({
      header: new PbWriter().tag(1, 0).uvarint(file.id).string(2, file.name).tag(3, 0).uvarint(0).finish(),
      file,
    })),
    tail: tail.finish(),
  };
}

/** A map entry (key=1, value=2 XEventMetadata) for `event_metadata`. */
function eventMeta(id: number, name: string, displayName: string, stats: Buffer[]): Buffer {
  const m = new PbWriter().tag(1, 0).uvarint(id).string(2, name);
  if (displayName !== '') m.string(4, displayName);
  for (const st of stats) m.bytes(5, st);
  return new PbWriter().tag(1, 0).uvarint(id).bytes(2, m.finish()).finish();
}

/** The XLA Ops events of one step on one core. */
function encodeDeviceStep(ops: readonly OpTemplate[], layout: { starts: number[] }, base: number): Buffer {
  const w = new PbWriter();
  for (let k = 0; k < ops.length; k++) {
    const op = ops[k]!;
    const ts = base + layout.starts[k]!;
    const ev = new PbWriter()
      .tag(1, 0)
      .uvarint(k + 1)
      .tag(2, 0)
      .uvarint(ts)
      .tag(3, 0)
      .uvarint(op.durPs);
    ev.bytes(
      4,
      new PbWriter()
        .tag(1, 0)
        .uvarint(SID.device_offset_ps!)
        .tag(4, 0)
        .uvarint(ts - 7_000_000)
        .finish(),
    );
    ev.bytes(
      4,
      new PbWriter().tag(1, 0).uvarint(SID.device_duration_ps!).tag(3, 0).uvarint(op.durPs).finish(),
    );
    w.message(4, ev);
  }
  return w.finish();
}
