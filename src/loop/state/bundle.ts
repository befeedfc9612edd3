/**
 * The evidence bundle of one iteration: a folder holding evidence.json and every raw artifact (prompt,
 * agent log and result, the candidate's commits as a git bundle and a patch, JUnit XML, metrics JSON per
 * run, traces, rendered reports). It is self-contained so a later job (another machine, in CI) can pick
 * up the iteration where the previous job left it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EVIDENCE_SCHEMA, type IterationEvidence, type StepName } from '../../evidence/index.js';
import { iterationTag } from '../../report/index.js';
import { HillclimbError, readJson, writeJsonAtomic } from '../../util/index.js';

export const EVIDENCE_FILE = 'evidence.json';

/** Paths inside a bundle. Relative names so a bundle can move between machines. */
export const BundleFiles = {
  evidence: EVIDENCE_FILE,
  prompt: 'agent/prompt.md',
  /** The agent's output folder for its n-th attempt (its log, result, last message). */
  agentAttempt: (attempt: number) => `agent/attempt-${attempt}`,
  /** The result file the agent wrote in its n-th attempt (prepare.ts names it in the prompt). */
  agentResult: (attempt: number) => `agent/attempt-${attempt}/result.json`,
  gitBundle: 'candidate/candidate.bundle',
  patch: 'candidate/candidate.patch',
  gateJunit: (gate: 'cpu' | 'accelerator') => `gates/${gate}.junit.xml`,
  gateLog: (gate: 'cpu' | 'accelerator') => `gates/${gate}.log`,
  runMetrics: (arm: 'A' | 'B', index: number) => `measure/${arm}-${String(index).padStart(2, '0')}.json`,
  runLog: (arm: 'A' | 'B', index: number) => `measure/${arm}-${String(index).padStart(2, '0')}.log`,
  profileDir: 'profile/candidate-trace',
  profileMetrics: 'profile/candidate-metrics.json',
  profileLog: 'profile/candidate.log',
  championProfileDir: 'profile/champion-trace',
  summary: 'profile/summary.json',
  championSummary: 'profile/champion-summary.json',
  diff: 'profile/diff.json',
  comment: 'report/comment.md',
  prBody: 'report/pr.md',
  logEntry: 'report/log-entry.md',
} as const;

/** An iteration, or one of its candidates when it proposed several (`slot`, 1-based). */
export interface IterationKey {
  iteration: number;
  slot?: { index: number } | undefined;
}

/** `i003`, or `i003-c2` for the second candidate of iteration 3: names its bundle, worktrees, refs and jobs. */
export function iterationDirName(key: number | IterationKey): string {
  // The same name the reports give the iteration (its tag), so a bundle key in a comment is its folder.
  return iterationTag(key);
}

export class Bundle {
  constructor(readonly dir: string) {}

  path(relative: string): string {
    return join(this.dir, relative);
  }

  exists(): boolean {
    return existsSync(this.path(EVIDENCE_FILE));
  }

  load(): IterationEvidence {
    const file = this.path(EVIDENCE_FILE);
    const evidence = readJson<IterationEvidence>(file);
    if (evidence.schema !== EVIDENCE_SCHEMA) {
      throw new HillclimbError(`${file}: schema ${String(evidence.schema)} is not ${EVIDENCE_SCHEMA}`, {
        hint: 'this bundle was written by another hillclimb version',
      });
    }
    return evidence;
  }

  save(evidence: IterationEvidence): void {
    writeJsonAtomic(this.path(EVIDENCE_FILE), evidence);
  }
}

/** Whether a step already finished (done or skipped) in this bundle: resume skips it. */
export function stepFinished(evidence: IterationEvidence, step: StepName): boolean {
  const s = evidence.steps[step];
  return s !== undefined && (s.status === 'done' || s.status === 'skipped');
}
