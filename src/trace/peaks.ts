/**
 * The device peak table (`schemas/device-peaks.json`): peak dense compute and memory bandwidth per JAX
 * device, each entry with its vendor sources. One data file serves the roofline here and MFU in Python.
 *
 * A device is found by its exact JAX `device_kind` (`TPU v6 lite`, `NVIDIA H100 80GB HBM3`), or, for an
 * XSpace device plane, by what the plane records (TPU `device_type_string`; GPU vendor, compute
 * capability, core count and memory size). An unknown device gives a warning naming it, never a guess.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../project/index.js';
import { InputError } from '../util/index.js';

export const DEVICE_PEAKS_FILE = 'schemas/device-peaks.json';
const SCHEMA = 'hillclimb.device-peaks/1';

export interface PeakSource {
  url: string;
  /** What the page says, in short. */
  says: string;
}

export interface PlaneMatch {
  deviceTypeString?: string[];
  vendor?: string;
  computeCapability?: string;
  coreCount?: number;
  /** Memory size in GB, to tell boards apart that share a die (within 10%). */
  memoryGB?: number;
}

export interface DevicePeakEntry {
  name: string;
  deviceKinds: string[];
  devicesPerChip: number;
  peakFlopsPerSecond: { bf16: number; fp32: number | null };
  hbmBytesPerSecond: number;
  xplane: PlaneMatch;
  sources: PeakSource[];
}

/** Peaks of one JAX device (chip figures divided by devicesPerChip). */
export interface DevicePeak {
  /** The table entry's name, e.g. `TPU v6e (Trillium)`. */
  name: string;
  /** Dense bf16 FLOP/s (the tensor-core/MXU rate). */
  bf16FlopsPerSecond: number;
  /** FP32 FLOP/s without tensor cores; null where the vendor publishes none (TPUs). */
  fp32FlopsPerSecond: number | null;
  /** HBM bytes per second. */
  bytesPerSecond: number;
  /** How the device was recognised: `device_kind "…"`, or the XSpace plane stats used. */
  matchedBy: string;
}

export interface PeakLookup {
  peak: DevicePeak | undefined;
  /** Set when nothing matched (or the match is ambiguous): one line naming the device. */
  warning: string | undefined;
}

let cached: DevicePeakEntry[] | undefined;

/** The table, read once from the package folder and checked. @throws InputError on a malformed file. */
export function devicePeakTable(): DevicePeakEntry[] {
  cached ??= parseDevicePeaks(
    readFileSync(join(packageRoot(), DEVICE_PEAKS_FILE), 'utf8'),
    DEVICE_PEAKS_FILE,
  );
  return cached;
}

/** Parse and check a device peak table. @throws InputError naming the file and key. */
export function parseDevicePeaks(text: string, file: string): DevicePeakEntry[] {
  let doc: { schema?: unknown; devices?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch (err) {
    throw new InputError(file, `invalid JSON: ${(err as Error).message}`);
  }
  if (doc.schema !== SCHEMA)
    throw new InputError(file, `schema: expected "${SCHEMA}", got ${String(doc.schema)}`);
  if (!Array.isArray(doc.devices)) throw new InputError(file, 'devices: expected a list');
  const seen = new Set<string>();
  return doc.devices.map((raw, k) => {
    const e = raw as DevicePeakEntry;
    const where = `devices[${k}]${typeof e?.name === 'string' ? ` (${e.name})` : ''}`;
    const bad = (problem: string): never => {
      throw new InputError(file, `${where}: ${problem}`);
    };
    if (typeof e.name !== 'string' || e.name === '') bad('name: expected a string');
    if (!Array.isArray(e.deviceKinds) || e.deviceKinds.length === 0)
      bad('deviceKinds: expected a non-empty list');
    for (const kind of e.deviceKinds) {
      if (typeof kind !== 'string' || kind === '') bad('deviceKinds: expected strings');
      if (seen.has(kind)) bad(`deviceKinds: "${kind}" is listed twice in the table`);
      seen.add(kind);
    }
    if (!(Number.isInteger(e.devicesPerChip) && e.devicesPerChip >= 1))
      bad('devicesPerChip: expected an integer ≥ 1');
    if (!(e.peakFlopsPerSecond?.bf16 > 0)) bad('peakFlopsPerSecond.bf16: expected a positive number');
    const fp32 = e.peakFlopsPerSecond.fp32;
    if (!(fp32 === null || fp32 > 0)) bad('peakFlopsPerSecond.fp32: expected a positive number or null');
    if (!(e.hbmBytesPerSecond > 0)) bad('hbmBytesPerSecond: expected a positive number');
    if (typeof e.xplane !== 'object' || e.xplane === null) bad('xplane: expected an object');
    if (!Array.isArray(e.sources) || e.sources.length === 0) bad('sources: every entry needs a source');
    for (const s of e.sources) {
      if (!/^https:\/\//.test(s?.url ?? '') || typeof s.says !== 'string' || s.says === '')
        bad('sources: each needs an https url and what it says');
    }
    return e;
  });
}

function perDevice(e: DevicePeakEntry, matchedBy: string): DevicePeak {
  const n = e.devicesPerChip;
  return {
    name: e.name,
    bf16FlopsPerSecond: e.peakFlopsPerSecond.bf16 / n,
    fp32FlopsPerSecond: e.peakFlopsPerSecond.fp32 === null ? null : e.peakFlopsPerSecond.fp32 / n,
    bytesPerSecond: e.hbmBytesPerSecond / n,
    matchedBy,
  };
}

/** The peaks of the device with this exact JAX `device_kind`. */
export function peakForDeviceKind(kind: string, table = devicePeakTable()): PeakLookup {
  const e = table.find((x) => x.deviceKinds.includes(kind));
  if (e !== undefined) return { peak: perDevice(e, `device_kind "${kind}"`), warning: undefined };
  return {
    peak: undefined,
    warning: `device kind "${kind}" is not in ${DEVICE_PEAKS_FILE}: no roofline (add its peaks to the table)`,
  };
}

/**
 * A GPU plane's hardware in words, from its stats: `AMD GPU, compute capability 9.4, 304 cores,
 * 206 GB`. Undefined for a plane without vendor and compute capability (TPU, CPU, JSON traces).
 */
export function describeGpuPlane(stats: Readonly<Record<string, string>>): string | undefined {
  const vendor = stats.device_vendor;
  const major = stats.compute_cap_major;
  if (vendor === undefined || major === undefined) return undefined;
  const cap = `${major}.${stats.compute_cap_minor ?? '0'}`;
  const cores = Number(stats.core_count);
  const memoryGB = Number(stats.memory_size) / 1e9;
  return `${vendor} GPU, compute capability ${cap}, ${Number.isFinite(cores) ? cores : '?'} cores${Number.isFinite(memoryGB) ? `, ${memoryGB.toFixed(0)} GB` : ''}`;
}

/**
 * The peaks of the device an XSpace plane describes, from its plane stats. TPU planes name their type
 * (`TPU v6 Lite`, matched without regard to case); GPU planes give vendor, compute capability, core count
 * and memory size, which pick a board when they match one entry (or several that differ only in memory).
 */
export function peakForPlane(
  stats: Readonly<Record<string, string>>,
  table = devicePeakTable(),
): PeakLookup | undefined {
  const type = stats.device_type_string;
  if (type !== undefined && type !== '') {
    const e = table.find((x) =>
      (x.xplane.deviceTypeString ?? []).some((t) => t.toLowerCase() === type.toLowerCase()),
    );
    if (e !== undefined) return { peak: perDevice(e, `device_type_string "${type}"`), warning: undefined };
    return {
      peak: undefined,
      warning: `device type "${type}" is not in ${DEVICE_PEAKS_FILE}: no roofline (add its peaks to the table)`,
    };
  }
  const vendor = stats.device_vendor;
  const described = describeGpuPlane(stats);
  if (vendor === undefined || described === undefined) return undefined;
  const cap = `${stats.compute_cap_major}.${stats.compute_cap_minor ?? '0'}`;
  const cores = Number(stats.core_count);
  const memoryGB = Number(stats.memory_size) / 1e9;
  const candidates = table.filter(
    (x) =>
      x.xplane.vendor?.toLowerCase() === vendor.toLowerCase() &&
      x.xplane.computeCapability === cap &&
      (x.xplane.coreCount === undefined || x.xplane.coreCount === cores),
  );
  const byMemory = candidates.filter(
    (x) =>
      x.xplane.memoryGB === undefined ||
      !Number.isFinite(memoryGB) ||
      Math.abs(memoryGB - x.xplane.memoryGB) <= 0.1 * x.xplane.memoryGB,
  );
  const matches = byMemory.length > 0 ? byMemory : candidates;
  if (matches.length === 0) {
    return {
      peak: undefined,
      warning: `${described} is not in ${DEVICE_PEAKS_FILE}: no roofline (add its peaks to the table)`,
    };
  }
  const e = matches[0]!;
  const peak = perDevice(e, described);
  const others = matches.slice(1).map((x) => x.name);
  return {
    peak,
    warning:
      others.length === 0
        ? undefined
        : `${described} matches ${[e.name, ...others].join(' and ')}; the roofline uses ${e.name}`,
  };
}
