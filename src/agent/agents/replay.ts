/**
 * The `replay` adapter: a deterministic agent for the local demo and the tests. Iteration i applies the
 * i-th patch (1-based) of the target's replay folder (replayDirFor: `agent.replay.dir/<target>` when
 * that folder exists, else `agent.replay.dir` itself), files named `NNNN-*.patch` in name order, with
 * `git apply --index`, and commits it, as any agent would: it edits, commits, writes its result file.
 * When the patches run out it finishes without a commit (a `no-op` iteration).
 *
 * An iteration with several candidates (loop.candidates > 1): candidate 1 applies the iteration's patch
 * as above; candidate s ≥ 2 applies `NNNN.s-*.patch`, where NNNN is the prefix of the iteration's patch
 * (`0003.2-unroll.patch` beside `0003-tile.patch`), with its own companion `NNNN.s-*.json`. Without one
 * it finishes without a commit. Slot files never count as iterations of their own.
 *
 * The result is the companion `NNNN-*.json` (same four-digit prefix) when there is one, copied verbatim
 * to the result file so an invalid one shows up as a resultProblem. Otherwise it is derived from the
 * patch's leading text: `Hypothesis:` / `Summary:` / `Next:` lines if present, else the subject (a
 * format-patch `Subject:` or the first line) as hypothesis and the rest as summary.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ExitCode, errorMessage, HillclimbError, type Logger } from '../../util/index.js';
import { Git } from '../../workspace/index.js';
import type { Agent, AgentOutcome, AgentRequest, AgentResult } from '../agent.js';
import { agentIdentity } from '../environment.js';
import { prepareResultFile } from '../outcome.js';
import { MAX_RESULT_FIELD_CHARS, readAgentResult } from '../result.js';

export interface ReplayOptions {
  /** Absolute folder holding the patches. */
  dir: string;
  logger: Logger;
}

export interface ReplayPatch {
  patch: string;
  /** The companion result JSON, if any. */
  companion?: string;
}

/**
 * Where a target's patches are: `<dir>/<target>` when that folder exists, so two targets never replay
 * each other's patches; else `dir` itself (the single-target layout, read as before).
 */
export function replayDirFor(dir: string, target: string | undefined): string {
  if (target === undefined) return dir;
  const own = join(dir, target);
  return existsSync(own) && statSync(own).isDirectory() ? own : dir;
}

const PATCH_NAME = /^(\d{4})-.+\.patch$/;
const COMPANION_NAME = /^(\d{4})-.+\.json$/;

/** The patches in order, each with its companion result file if one has the same prefix. */
export function listReplayPatches(dir: string): ReplayPatch[] {
  if (!existsSync(dir)) {
    throw new HillclimbError(`replay agent: no folder ${dir}`, {
      hint: 'set agent.replay.dir to a folder of NNNN-*.patch files',
      exitCode: ExitCode.badInput,
    });
  }
  const names = readdirSync(dir).sort();
  const companions = new Map<string, string>();
  for (const n of names) {
    const m = COMPANION_NAME.exec(n);
    if (m && !companions.has(m[1]!)) companions.set(m[1]!, join(dir, n));
  }
  return names
    .filter((n) => PATCH_NAME.test(n))
    .map((n) => {
      const companion = companions.get(PATCH_NAME.exec(n)![1]!);
      return { patch: join(dir, n), ...(companion ? { companion } : {}) };
    });
}

const SLOT_PATCH_NAME = /^\d{4}\.(\d+)-.+\.patch$/;

/** The most candidates any iteration of the folder has patches for: 1 without slot files. */
export function replaySlots(dir: string): number {
  if (!existsSync(dir)) return 1;
  const slots = readdirSync(dir).map((n) => Number(SLOT_PATCH_NAME.exec(n)?.[1] ?? 1));
  return Math.max(1, ...slots);
}

export class ReplayAgent implements Agent {
  readonly name = 'replay';
  private readonly patches: ReplayPatch[];

  constructor(private readonly opts: ReplayOptions) {
    this.patches = listReplayPatches(opts.dir);
  }

  /** The patch of an iteration's candidate: the iteration's own, or its slot file (`NNNN.s-*.patch`). */
  private patchFor(request: AgentRequest): ReplayPatch | undefined {
    const entry = this.patches[request.iteration - 1];
    const slot = request.slot?.index ?? 1;
    if (!entry || slot === 1) return entry;
    const prefix = `${PATCH_NAME.exec(basename(entry.patch))![1]!}.${slot}-`;
    const names = readdirSync(this.opts.dir).sort();
    const patch = names.find((n) => n.startsWith(prefix) && n.endsWith('.patch'));
    if (!patch) return undefined;
    const companion = names.find((n) => n.startsWith(prefix) && n.endsWith('.json'));
    return {
      patch: join(this.opts.dir, patch),
      ...(companion ? { companion: join(this.opts.dir, companion) } : {}),
    };
  }

  async run(request: AgentRequest): Promise<AgentOutcome> {
    const started = Date.now();
    mkdirSync(dirname(request.logFile), { recursive: true });
    const log = (line: string) => appendFileSync(request.logFile, `${line}\n`);
    prepareResultFile(request.resultFile);
    const done = (
      status: AgentOutcome['status'],
      exitCode: number | null,
      extra: Partial<AgentOutcome> = {},
    ) => {
      const check = readAgentResult(request.resultFile);
      return {
        status,
        exitCode,
        ...(check.result ? { result: check.result } : { resultProblem: check.problem }),
        ...extra,
        logFile: request.logFile,
        durationMs: Date.now() - started,
      } satisfies AgentOutcome;
    };
    if (request.signal?.aborted) return done('failed', null, { infraError: 'cancelled' });

    const entry = this.patchFor(request);
    if (!entry) {
      const which = request.slot
        ? `iteration ${request.iteration}, candidate ${request.slot.index}`
        : `iteration ${request.iteration}`;
      log(`replay: no patch for ${which} (${this.patches.length} in ${this.opts.dir})`);
      writeResult(request.resultFile, {
        hypothesis: `No replay patch is left for ${which}.`,
        summary: `The replay folder holds ${this.patches.length} patches; nothing was changed.`,
        next_idea: `Add NNNN-*.patch files to ${this.opts.dir} to replay more iterations.`,
      });
      return done('finished', 0);
    }

    const text = readFileSync(entry.patch, 'utf8');
    const described = describePatch(text, basename(entry.patch));
    log(
      `replay: iteration ${request.iteration}${request.slot ? ` candidate ${request.slot.index}` : ''} applies ${entry.patch}`,
    );
    try {
      const git = await Git.create(request.workdir);
      await git.applyPatch(entry.patch);
      const sha = await git.commit(commitMessage(described, basename(entry.patch)), {
        identity: agentIdentity(this.name),
      });
      log(`replay: committed ${sha}`);
    } catch (e) {
      log(`replay: ${errorMessage(e)}`);
      this.opts.logger.warn(
        `replay: ${basename(entry.patch)} did not apply: ${errorMessage(e).split('\n')[0]}`,
      );
      return done('failed', 1);
    }
    if (entry.companion) writeFileSync(request.resultFile, readFileSync(entry.companion));
    else writeResult(request.resultFile, described.result);
    return done('finished', 0);
  }
}

interface DescribedPatch {
  subject: string;
  result: AgentResult;
}

/** A patch's intent, from its leading text (before the first diff header). */
export function describePatch(text: string, fileName: string): DescribedPatch {
  const lines = text.split('\n');
  const diffStart = lines.findIndex((l) => /^(?:diff --git |--- |Index: )/.test(l));
  let lead = lines.slice(0, diffStart === -1 ? lines.length : diffStart);

  let subject: string | undefined;
  const subjectAt = lead.findIndex((l) => l.startsWith('Subject:'));
  if (subjectAt !== -1) {
    // format-patch: headers, a blank line, the body, then "---" and the diffstat.
    let s = lead[subjectAt]!.slice('Subject:'.length);
    for (let i = subjectAt + 1; i < lead.length && /^\s/.test(lead[i]!) && lead[i]!.trim() !== ''; i++) {
      s += ` ${lead[i]!.trim()}`;
    }
    subject = s.replace(/^\s*(?:\[[^\]]*\]\s*)*/, '').trim();
    const bodyStart = lead.findIndex((l, i) => i > subjectAt && l.trim() === '');
    const bodyEnd = lead.indexOf('---');
    lead = lead.slice(bodyStart === -1 ? lead.length : bodyStart + 1, bodyEnd === -1 ? lead.length : bodyEnd);
  } else {
    lead = lead.map((l) => l.replace(/^#\s?/, ''));
  }

  const trailers: Record<string, string> = {};
  const prose: string[] = [];
  for (const l of lead) {
    const m = /^(hypothesis|summary|next(?:[ _]idea)?):\s*(.+)$/i.exec(l.trim());
    if (m) trailers[m[1]!.toLowerCase().startsWith('next') ? 'next' : m[1]!.toLowerCase()] = m[2]!.trim();
    else prose.push(l);
  }
  const body = prose.join('\n').trim();
  const firstLine = body.split('\n')[0]?.trim() || undefined;
  const title = subject || firstLine || `replay patch ${fileName}`;
  const rest = subject ? body : body.split('\n').slice(1).join('\n').trim();
  return {
    subject: title,
    result: {
      hypothesis: cap(trailers.hypothesis ?? title),
      summary: cap(trailers.summary ?? (rest || title)),
      next_idea: cap(trailers.next ?? 'Apply the next replay patch.'),
    },
  };
}

function commitMessage(d: DescribedPatch, fileName: string): string {
  const subject = d.subject.split('\n')[0]!.slice(0, 72);
  return `${subject}\n\n${d.result.summary}\n\nReplay-Patch: ${fileName}\n`;
}

function writeResult(file: string, result: AgentResult): void {
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}

function cap(s: string): string {
  return s.length > MAX_RESULT_FIELD_CHARS ? `${s.slice(0, MAX_RESULT_FIELD_CHARS - 1)}…` : s;
}
