/**
 * The verifier's session document (`hillclimb.session/v1`), written by `python -E -s -m <module> verify`
 * (hillclimb_bench.verify): the process that loads the exported programs as data, never the code under
 * test. It is the only source of a gate's verdict and of the measured numbers. Read defensively all the
 * same: it crossed a sandbox boundary as a file, so every field is checked before anything is taken
 * from it, and each round's metrics are validated against the metrics schema by `parseMetrics`.
 */
import { errorMessage, InputError, readTextFile } from '../util/index.js';
import { type MetricsFile, parseMetrics } from './metrics.js';

export const SESSION_SCHEMA = 'hillclimb.session/v1';
export type SessionMode = 'gate' | 'measure' | 'profile';

export interface SessionArm {
  /** sha256 of each program the verifier read (key: measurement@case). */
  programs: Record<string, string>;
  /** Every requested program loaded and verified. */
  verified: boolean;
  /** The first failure: what was wrong with this arm's programs (null when none). */
  failure: string | null;
}

export interface GateProgram {
  key: string;
  purpose: string;
  status: 'passed' | 'failed';
  sha256?: string;
  error?: string;
}

export interface Session {
  mode: SessionMode;
  platform: string;
  seed: number;
  draw: number;
  arms: Record<string, SessionArm>;
  /** measure/profile: the arms' programs are byte-identical (nothing was timed). */
  identical: boolean;
  /** A screening session (more than two arms): the candidates whose programs are the first arm's bytes. */
  sameAsFirst: string[];
  /** gate mode. */
  gate?: { passed: boolean; total: number; failed: number; programs: GateProgram[] };
  /** measure mode: per round, the arm whose call came first and each arm's metrics. */
  rounds: Array<{ first: string; metrics: Record<string, MetricsFile> }>;
  /** profile mode: the arm's metrics and where the trace went. */
  profile?: { metrics: MetricsFile };
  notes: string[];
}

const HEX64 = /^[0-9a-f]{64}$/;

function object(value: unknown, where: string, file: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InputError(file, `${where} is not an object`);
  }
  return value as Record<string, unknown>;
}

function hashes(value: unknown, where: string, file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, hash] of Object.entries(object(value, where, file))) {
    if (typeof hash !== 'string' || !HEX64.test(hash))
      throw new InputError(file, `${where}.${key} is no sha256`);
    out[key] = hash;
  }
  return out;
}

/** Parse and check a session document; `file` names it in errors. */
export function parseSession(text: string, file: string): Session {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new InputError(file, `invalid JSON: ${errorMessage(e).split('\n')[0]}`);
  }
  const doc = object(data, '(top level)', file);
  if (doc.schema !== SESSION_SCHEMA) throw new InputError(file, `schema is not ${SESSION_SCHEMA}`);
  const mode = doc.mode;
  if (mode !== 'gate' && mode !== 'measure' && mode !== 'profile')
    throw new InputError(file, 'mode is unknown');
  const arms: Record<string, SessionArm> = {};
  for (const [name, raw] of Object.entries(object(doc.arms, 'arms', file))) {
    const arm = object(raw, `arms.${name}`, file);
    const failure = arm.failure;
    if (failure !== null && typeof failure !== 'string') throw new InputError(file, `arms.${name}.failure`);
    arms[name] = {
      programs: hashes(arm.programs, `arms.${name}.programs`, file),
      verified: arm.verified === true,
      failure: failure as string | null,
    };
  }
  const session: Session = {
    mode,
    platform: String(doc.platform),
    seed: Number(doc.seed),
    draw: Number(doc.draw),
    arms,
    identical: doc.identical === true,
    sameAsFirst: Array.isArray(doc.same_as_first)
      ? doc.same_as_first.filter((n): n is string => typeof n === 'string' && n in arms)
      : [],
    rounds: [],
    notes: Array.isArray(doc.notes) ? doc.notes.filter((n): n is string => typeof n === 'string') : [],
  };
  if (mode === 'gate') {
    const gate = object(doc.gate, 'gate', file);
    const programs = (Array.isArray(gate.programs) ? gate.programs : []).map((raw, i) => {
      const p = object(raw, `gate.programs[${i}]`, file);
      if (p.status !== 'passed' && p.status !== 'failed')
        throw new InputError(file, `gate.programs[${i}].status`);
      return {
        key: String(p.key),
        purpose: String(p.purpose),
        status: p.status,
        ...(typeof p.sha256 === 'string' && HEX64.test(p.sha256) ? { sha256: p.sha256 } : {}),
        ...(typeof p.error === 'string' ? { error: p.error } : {}),
      } satisfies GateProgram;
    });
    const failed = programs.filter((p) => p.status === 'failed').length;
    // The verdict is recomputed from the rows: a gate passes only when it verified something and every
    // program passed.
    session.gate = { passed: programs.length > 0 && failed === 0, total: programs.length, failed, programs };
  }
  if (mode === 'measure' && Array.isArray(doc.rounds)) {
    session.rounds = doc.rounds.map((raw, i) => {
      const round = object(raw, `rounds[${i}]`, file);
      const metrics: Record<string, MetricsFile> = {};
      // Every arm is timed, but in a screening session the ones that failed or are the first's bytes.
      const timed = Object.keys(arms).filter(
        (name) =>
          Object.keys(arms).length === 2 ||
          (arms[name]!.failure === null && !session.sameAsFirst.includes(name)),
      );
      for (const name of timed) {
        metrics[name] = parseMetrics(JSON.stringify(round[name] ?? null), `${file} rounds[${i}].${name}`);
      }
      return { first: String(round.first), metrics };
    });
  }
  if (mode === 'profile' && doc.profile !== undefined && doc.profile !== null) {
    const profile = object(doc.profile, 'profile', file);
    if (profile.metrics !== undefined) {
      session.profile = { metrics: parseMetrics(JSON.stringify(profile.metrics), `${file} profile.metrics`) };
    }
  }
  return session;
}

export async function readSession(file: string): Promise<Session> {
  return parseSession(await readTextFile(file, 'verifier session'), file);
}
