/**
 * Attestations: how a job that the next job can trust vouches for the bundle it hands on. In CI each
 * phase runs in its own job and passes the iteration's bundle as an artifact — a channel any job of the
 * run can write to, including one that ran untrusted code with the run's artifact token. So a job that
 * ran no untrusted code outside the sandbox states, through its job outputs (which only its own steps
 * can set), the digest of every file of the bundle as it left, the champion, the candidate and the
 * verdict. The next job believes a downloaded bundle only when it matches such a statement; anything
 * else is re-derived or dropped (trust.ts).
 *
 * On one machine (`hillclimb iterate` phase by phase) the same statement is kept in the state folder,
 * outside the bundle, where sandboxed code cannot reach it.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IterationEvidence } from '../../evidence/index.js';
import { ExitCode, HillclimbError, readPlainFile, writeFileAtomic } from '../../util/index.js';
import { type Bundle, type IterationKey, iterationDirName } from './bundle.js';

export interface Attestation {
  v: 1;
  /** The phase that produced the bundle. */
  phase: string;
  /** sha256 of the bundle's manifest (see bundleDigest). */
  digest: string;
  /** The champion the iteration was measured against. */
  champion: string;
  /** The candidate commit, when there is one. */
  candidate?: string;
  /** The verdict when the bundle left ('' when still pending). */
  verdict: string;
  /**
   * True when nothing untrusted ran unsandboxed in the attesting job (and no agent ran there at all):
   * only then is the bundle's content believed.
   */
  verified: boolean;
}

/**
 * sha256 over a manifest of the bundle folder: one line per plain file, `<sha256>  <relative path>`,
 * sorted by path. A link or special file anywhere makes the bundle unattestable (throws).
 */
export function bundleDigest(dir: string): string {
  const lines: string[] = [];
  const walk = (rel: string): void => {
    const abs = rel === '' ? dir : join(dir, rel);
    const st = lstatSync(abs);
    if (st.isDirectory()) {
      for (const name of readdirSync(abs).sort()) walk(rel === '' ? name : `${rel}/${name}`);
      return;
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with one would make the manifest ambiguous
    if (/[\u0000-\u001f\u007f]/.test(rel))
      throw new Error(`${JSON.stringify(rel)}: a control character in a file name`);
    const data = readPlainFile(abs);
    lines.push(`${createHash('sha256').update(data).digest('hex')}  ${rel}`);
  };
  walk('');
  lines.sort();
  return createHash('sha256')
    .update(`${lines.join('\n')}\n`)
    .digest('hex');
}

/** The statement for a bundle as it is now. */
export function attestBundle(
  bundle: Bundle,
  ev: IterationEvidence,
  phase: string,
  verified: boolean,
): Attestation {
  return {
    v: 1,
    phase,
    digest: bundleDigest(bundle.dir),
    champion: ev.base.commit,
    ...(ev.candidate ? { candidate: ev.candidate.commit } : {}),
    verdict: ev.verdict ?? '',
    verified,
  };
}

/** Parse an attestation handed over as a job output; `source` names the input for errors. */
export function parseAttestation(text: string, source: string): Attestation {
  const bad = (why: string) =>
    new HillclimbError(`${source}: ${why}`, {
      hint: 'pass the attestation output of the job that produced the bundle, unchanged',
      exitCode: ExitCode.badInput,
    });
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad('not JSON');
  }
  const a = v as Partial<Attestation>;
  if (typeof v !== 'object' || v === null || a.v !== 1) throw bad('not a hillclimb attestation (v1)');
  if (typeof a.digest !== 'string' || !/^[0-9a-f]{64}$/.test(a.digest))
    throw bad('digest must be 64 hex digits');
  if (typeof a.champion !== 'string' || !/^[0-9a-f]{40}$/.test(a.champion))
    throw bad('champion must be a full SHA');
  if (a.candidate !== undefined && (typeof a.candidate !== 'string' || !/^[0-9a-f]{40}$/.test(a.candidate))) {
    throw bad('candidate must be a full SHA');
  }
  if (typeof a.phase !== 'string' || typeof a.verdict !== 'string' || typeof a.verified !== 'boolean') {
    throw bad('phase, verdict and verified are required');
  }
  return {
    v: 1,
    phase: a.phase,
    digest: a.digest,
    champion: a.champion,
    ...(a.candidate ? { candidate: a.candidate } : {}),
    verdict: a.verdict,
    verified: a.verified,
  };
}

/** Where this machine keeps its own attestation of an iteration's bundle (outside the bundle). */
export function localAttestationFile(stateDir: string, runId: string, key: number | IterationKey): string {
  return join(stateDir, 'trust', `${runId}-${iterationDirName(key)}.json`);
}

export function writeLocalAttestation(file: string, a: Attestation): void {
  writeFileAtomic(file, `${JSON.stringify(a)}\n`);
}

export function readLocalAttestation(file: string): Attestation | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return parseAttestation(readFileSync(file, 'utf8'), file);
  } catch {
    return undefined;
  }
}
