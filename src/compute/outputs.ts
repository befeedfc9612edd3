/**
 * Getting a job's outputs to their local destinations. Remote backends receive them as the runner's
 * gzipped tarball (metrics.json, junit.xml, trace/…); this reads it without a tar binary and accepts
 * only regular files and folders under those three names, so a tarball shaped by job code cannot
 * write anywhere else (no absolute paths, no '..', no links).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { JobOutputs } from './backend.js';

export interface TarEntry {
  path: string;
  type: 'file' | 'dir';
  data: Buffer;
}

const BLOCK = 512;

function field(header: Buffer, offset: number, length: number): string {
  const raw = header.subarray(offset, offset + length);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul === -1 ? length : nul).toString('utf8');
}

function octal(header: Buffer, offset: number, length: number): number {
  const text = field(header, offset, length).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

/** PAX extended header records: "<len> <key>=<value>\n". */
function paxRecords(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    if (space === -1) break;
    const len = Number(data.subarray(pos, space).toString('ascii'));
    if (!Number.isFinite(len) || len <= 0) break;
    const record = data.subarray(space + 1, pos + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    pos += len;
  }
  return out;
}

/**
 * Parse a (gzipped) tar archive into files and folders. Links, devices and other entry types are
 * returned as nothing: they are skipped, and listed in `skipped`.
 */
export function readTar(archive: Buffer): { entries: TarEntry[]; skipped: string[] } {
  const tar = archive[0] === 0x1f && archive[1] === 0x8b ? gunzipSync(archive) : archive;
  const entries: TarEntry[] = [];
  const skipped: string[] = [];
  let pos = 0;
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  while (pos + BLOCK <= tar.length) {
    const header = tar.subarray(pos, pos + BLOCK);
    if (header.every((b) => b === 0)) break;
    const storedSize = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] ?? 0);
    const prefix = field(header, 345, 155);
    const name = field(header, 0, 100);
    const size = pax.size !== undefined ? Number(pax.size) : storedSize;
    const dataStart = pos + BLOCK;
    const data = tar.subarray(dataStart, dataStart + size);
    if (data.length < size) throw new Error('tar archive is truncated');
    pos = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = paxRecords(data);
      continue;
    }
    if (type === 'g') continue;
    if (type === 'L') {
      longName = data.toString('utf8').replace(/\0+$/, '');
      continue;
    }
    const path = pax.path ?? longName ?? (prefix ? `${prefix}/${name}` : name);
    pax = {};
    longName = undefined;
    if (type === '0' || type === '\0' || type === '7') entries.push({ path, type: 'file', data });
    else if (type === '5') entries.push({ path, type: 'dir', data: Buffer.alloc(0) });
    else skipped.push(path);
  }
  return { entries, skipped };
}

/** A relative path with no '..', no empty parts and no absolute start; undefined when unsafe. */
function safeParts(path: string): string[] | undefined {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (path.startsWith('/') || parts.length === 0 || parts.some((p) => p === '..' || p.includes('\\'))) {
    return undefined;
  }
  return parts;
}

/** Delete whatever sits at the destinations, so an output present after a job was written by that job. */
export function clearDestinations(outputs: JobOutputs): void {
  for (const dest of [outputs.metrics, outputs.junit, outputs.trace, outputs.programs]) {
    if (dest !== undefined) rmSync(dest, { recursive: true, force: true });
  }
}

/** Create the parent folder of each destination. */
export function prepareDestinations(outputs: JobOutputs): void {
  for (const dest of [outputs.metrics, outputs.junit, outputs.trace, outputs.programs]) {
    if (dest !== undefined) mkdirSync(dirname(dest), { recursive: true });
  }
}

export interface InstallResult {
  /** Output names that were written (metrics, junit, trace). */
  installed: string[];
  /** Entries refused or not requested, for the log. */
  ignored: string[];
}

/** Write the runner's tarball entries to the requested local destinations. */
export function installOutputs(archive: Buffer, outputs: JobOutputs): InstallResult {
  const { entries, skipped } = readTar(archive);
  const installed = new Set<string>();
  const ignored = [...skipped];
  for (const entry of entries) {
    const parts = safeParts(entry.path);
    const [head, ...rest] = parts ?? [];
    let target: string | undefined;
    if (head === 'metrics.json' && rest.length === 0 && entry.type === 'file' && outputs.metrics) {
      target = outputs.metrics;
      installed.add('metrics');
    } else if (head === 'junit.xml' && rest.length === 0 && entry.type === 'file' && outputs.junit) {
      target = outputs.junit;
      installed.add('junit');
    } else if (head === 'trace' && outputs.trace) {
      target = join(outputs.trace, ...rest);
      installed.add('trace');
    } else if (head === 'programs' && outputs.programs) {
      target = join(outputs.programs, ...rest);
      installed.add('programs');
    }
    if (target === undefined) {
      ignored.push(entry.path);
      continue;
    }
    if (entry.type === 'dir') {
      mkdirSync(target, { recursive: true });
    } else {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, entry.data);
    }
  }
  return { installed: [...installed].sort(), ignored };
}
