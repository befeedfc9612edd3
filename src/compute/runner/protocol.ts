/**
 * The engine's side of the job runner protocol (see ./source.ts): the spec handed to the runner, and
 * the parsing of the marker lines it prints.
 */
import { createHash } from 'node:crypto';
import { type JobOutputs, OUTPUT_NAMES } from '../backend.js';
import { shortHash } from '../names.js';
import { RUNNER_FILE } from './source.js';

export type OutputName = (typeof OUTPUT_NAMES)[number];

export interface RunnerSpec {
  /** Marks the runner's protocol lines for this job. */
  nonce: string;
  /** The job's command, placeholders unfilled: the runner fills them where the job runs. */
  command: readonly string[];
  env: Record<string, string>;
  /** Which outputs the job was asked to write. */
  outputs: OutputName[];
  /** 'log': base64 between markers on stdout; otherwise a file path (relative to the tree) to write. */
  emit: 'log' | string;
  /** Cap on the packed outputs when emitted to the log. */
  max_bytes?: number;
  /** The runner kills the job after this long, even if the engine is gone. */
  timeout_s?: number;
  /** Where the runner records the job's process group, so a stop can reach it. */
  pgid_file?: string;
  /** The code under test's tree hash: {cache} is that code's own folder on the machine. */
  cache_key?: string;
}

/** A nonce derived from the job's submission name, so an attached (re-polled) job parses the same way. */
export function runnerNonce(name: string): string {
  return shortHash(`hillclimb-runner:${name}`, 16);
}

export function requestedOutputs(outputs: JobOutputs): OutputName[] {
  return OUTPUT_NAMES.filter((k) => outputs[k] !== undefined);
}

/** The argv (before shell quoting) that starts the runner from the root of the shipped tree. */
export function runnerArgv(python: string, spec: RunnerSpec): string[] {
  return [python, RUNNER_FILE, Buffer.from(JSON.stringify(spec), 'utf8').toString('base64')];
}

const MARKER = /^@@hillclimb ([0-9a-f]+) ([a-z-]+)(?: (.*))?@@$/;

export interface RunnerReport {
  /** The job's exit code, when it ran to the end. */
  exitCode?: number;
  /** Set when the runner stopped the job: 'timeout' (its own limit) or 'signal' (stopped from outside). */
  killed?: string;
  /** The command could not be started (e.g. program not found on the remote side). */
  spawnError?: string;
  /** The outputs could not be packed or were over the cap. */
  outputsError?: string;
  /** The packed outputs (gzipped tar), present when emitted to the log and intact. */
  outputs?: Buffer;
  /** Whether the runner printed its final result line at all. */
  finished: boolean;
}

/** Read the runner's protocol lines for `nonce` out of a job's complete output. */
export function parseRunnerOutput(text: string, nonce: string): RunnerReport {
  const report: RunnerReport = { finished: false };
  let payload: string[] | undefined;
  let expected: { sha256: string; bytes: number } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const m = MARKER.exec(line);
    if (!m || m[1] !== nonce) {
      if (payload && line !== '') payload.push(line);
      continue;
    }
    const kind = m[2];
    const rest = m[3] ?? '';
    switch (kind) {
      case 'outputs-begin': {
        const sm = /sha256=([0-9a-f]{64}) bytes=(\d+)/.exec(rest);
        if (sm) expected = { sha256: sm[1]!, bytes: Number(sm[2]) };
        payload = [];
        break;
      }
      case 'outputs-end': {
        if (payload && expected) {
          const data = Buffer.from(payload.join(''), 'base64');
          const digest = createHash('sha256').update(data).digest('hex');
          if (data.length === expected.bytes && digest === expected.sha256) report.outputs = data;
          else
            report.outputsError = `outputs damaged in transit (got ${data.length} bytes, expected ${expected.bytes})`;
        }
        payload = undefined;
        break;
      }
      case 'outputs-error':
        report.outputsError = rest;
        break;
      case 'spawn-error':
        report.spawnError = rest;
        break;
      case 'result': {
        report.finished = true;
        const em = /^exit=(\d+)$/.exec(rest);
        if (em) report.exitCode = Number(em[1]);
        const km = /^killed=(\w+)$/.exec(rest);
        if (km) report.killed = km[1];
        break;
      }
    }
  }
  if (payload && !report.outputs && !report.outputsError) {
    report.outputsError = 'outputs cut off: the end marker never arrived';
  }
  return report;
}

/**
 * Turns a job's growing output into what goes to the local log file: complete lines only, with the
 * base64 outputs block replaced by one summary line. Feed it the whole output each time (the Ray API
 * returns the full log); it remembers how far it got.
 */
export class LogForwarder {
  private consumed = 0;
  private inPayload = false;
  private payloadLines = 0;

  constructor(private readonly nonce: string) {}

  /** The new loggable text in `full` since the last call. With `final`, a trailing partial line is included. */
  next(full: string, final = false): string {
    if (full.length < this.consumed) this.consumed = 0; // the log was rotated or replaced: start over
    const end = final ? full.length : full.lastIndexOf('\n') + 1;
    if (end <= this.consumed) return '';
    const chunk = full.slice(this.consumed, end);
    this.consumed = end;
    const out: string[] = [];
    const lines = chunk.split('\n');
    if (chunk.endsWith('\n')) lines.pop();
    for (const line of lines) {
      const m = MARKER.exec(line.replace(/\r$/, ''));
      const ours = m !== null && m[1] === this.nonce;
      if (ours && m[2] === 'outputs-begin') {
        this.inPayload = true;
        this.payloadLines = 0;
        continue;
      }
      if (ours && m[2] === 'outputs-end') {
        this.inPayload = false;
        out.push(`[hillclimb: outputs received (${this.payloadLines} lines of base64)]`);
        continue;
      }
      if (this.inPayload) {
        this.payloadLines += 1;
        continue;
      }
      out.push(line);
    }
    return out.length > 0 ? `${out.join('\n')}\n` : '';
  }
}
