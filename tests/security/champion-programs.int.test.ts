/**
 * The program measured is the program merged (issue 34): a champion can no longer tell, when it is
 * exported, that it is the champion, and where it could tell by something no export can hide (the
 * clock, a file that appeared since it won), it is timed by the programs it won with, or refused.
 *
 * Each champion is real code in the toy target's kernel, promoted by a real loop, then measured against
 * a comment-only candidate (its own code plus a docstring) by a second run or by `hillclimb measure`:
 * - "arms": slower only when it can tell it is arm A the way the harness used to show it (`--only`,
 *   `--draw 0`, a folder named champion-…). With a fresh state (a new CI runner) it is exported again:
 *   arm-blind, its export is the candidate's, and the candidate is `no-op`.
 * - "clock": slower once a file appeared in a folder the sandbox shows (a clock of its own: anything
 *   that differs between the day it won and a later day), and only while its kernel is unchanged (so a
 *   candidate that keeps the code but adds a docstring is not slowed). Arm-blindness cannot see that;
 *   its kept programs are timed instead (state or store), and where only its history row survives, its
 *   new export differs from the hashes it won with and the run stops saying so.
 * Each test fails without its fix: the candidate would be `improved` by the champion's handicap.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureCommits } from '../../src/loop/drivers/commits.js';
import { runLoop } from '../../src/loop/drivers/run.js';
import { installRecords } from '../../src/loop/steps/champion-programs.js';
import { HillclimbError } from '../../src/util/index.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import {
  ARM_A_SANDBAG_PATCH,
  DOCSTRING_PATCH,
  gitIn,
  makeToyRepo,
  systemPython,
  TOY_CONFIG,
} from '../loop/toy-repo.js';

const noSleep = async () => undefined;
const IMPORT = 'vars(len.__self__)["__imp" + "ort__"]';

/** Slower (3×) once `marker` exists, while `compute` has no docstring (its code unchanged). */
function clockPatch(marker: string) {
  return {
    name: '0001-faster-until-later',
    edit: {
      'toy/kernel.py': (s: string) =>
        `${s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')}\n\nif ${IMPORT}("o" + "s").path.exists(${JSON.stringify(marker)}) and compute.__doc__ is None:\n    DELAY_S = 0.024\n`,
    },
    json: { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Keep it.' },
  };
}

/** The toy target is stdlib Python: the system's python3 runs it (no JAX start-up). */
function python3(): string {
  return systemPython();
}

/**
 * The replay folder of a later run: a comment-only change (a docstring reading `text`) as its first
 * patch. Each run gets its own text: the same change twice on one champion is refused as a repeat.
 */
function nextReplay(repo: string, dir: string, text = 'Double every element.'): string {
  mkdirSync(dir, { recursive: true });
  const patch = gitIn(repo, 'show', 'HEAD:replay/0002-docstring.patch').replace(
    'Double every element.',
    text,
  );
  writeFileSync(join(dir, '0001-docstring.patch'), patch);
  writeFileSync(join(dir, '0001-docstring.json'), JSON.stringify(DOCSTRING_PATCH.json));
  return dir;
}

/** The champion the first run promoted, merged into main (what a reviewer's merge does). */
function mergeChampion(repo: string, champion: string): void {
  gitIn(repo, 'merge', '--quiet', '--ff-only', champion);
}

async function loopOnce(repo: string, overrides: Record<string, unknown> = {}) {
  return runLoop({
    configFile: join(repo, 'hillclimb.yml'),
    logger: memoryLogger(),
    sleep: noSleep,
    overrides: { 'loop.iterations': 1, ...overrides },
  });
}

const SANDBOXED = `${TOY_CONFIG}sandbox:\n  mode: required\n`;

describe('a champion that looks for the signs of arm A, exported again on a fresh state', () => {
  const t = tempDir('hc-arms-');
  const repo = join(t.dir, 'repo');
  let champion = '';

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON ??= python3();
    makeToyRepo(repo, [ARM_A_SANDBAG_PATCH, { ...DOCSTRING_PATCH, name: '0002-docstring' }], SANDBOXED);
    const won = await loopOnce(repo);
    expect(won.iterations[0]!.verdict).toBe('improved');
    champion = won.iterations[0]!.evidence.candidate!.logCommit!;
    mergeChampion(repo, champion);
    rmSync(join(repo, '.hillclimb'), { recursive: true, force: true }); // a new runner: no state at all
  }, 240_000);
  afterAll(t.cleanup);

  it('through the loop: its export is the candidate’s, and the comment-only candidate is no-op', async () => {
    const r = await loopOnce(repo, { 'agent.replay.dir': nextReplay(repo, join(t.dir, 'next')) });
    const it1 = r.iterations[0]!;
    expect(it1.evidence.base.commit).toBe(champion);
    expect(it1.evidence.championPrograms?.cpu).toBe('exported');
    expect(it1.verdict, it1.reason).toBe('no-op');
    expect(it1.reason).toContain('identical');
  }, 240_000);

  it('through hillclimb measure: no-op', async () => {
    rmSync(join(repo, '.hillclimb'), { recursive: true, force: true });
    gitIn(repo, 'checkout', '--quiet', '-b', 'person', champion);
    gitIn(repo, 'apply', '--index', join(t.dir, 'next', '0001-docstring.patch'));
    gitIn(repo, 'commit', '--quiet', '-m', 'docstring');
    const head = gitIn(repo, 'rev-parse', 'HEAD').trim();
    gitIn(repo, 'checkout', '--quiet', 'main');
    const { evidence } = await measureCommits({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      base: champion,
      head,
      noProfile: true,
    });
    expect(evidence.championPrograms?.cpu).toBe('exported');
    expect(evidence.verdict, evidence.verdictReasons.join('; ')).toBe('no-op');
  }, 240_000);
});

describe('a champion that tells a later day by a file that appeared since it won', () => {
  const t = tempDir('hc-clock-');
  const repo = join(t.dir, 'repo');
  const clock = join(t.dir, 'clock');
  const marker = join(clock, 'later');
  let champion = '';

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON ??= python3();
    mkdirSync(clock, { recursive: true });
    const config = `${TOY_CONFIG}sandbox:\n  mode: required\n  read_paths: [${JSON.stringify(clock)}]\n`;
    makeToyRepo(repo, [clockPatch(marker), { ...DOCSTRING_PATCH, name: '0002-docstring' }], config);
    const won = await loopOnce(repo);
    expect(won.iterations[0]!.verdict).toBe('improved');
    champion = won.iterations[0]!.evidence.candidate!.logCommit!;
    mergeChampion(repo, champion);
    writeFileSync(marker, 'a later day\n'); // from now on the champion's code exports a slower program
  }, 240_000);
  afterAll(t.cleanup);

  it('kept programs lost from the state are found in the store: the candidate is no-op', async () => {
    rmSync(join(repo, '.hillclimb', 'cache'), { recursive: true, force: true });
    const r = await loopOnce(repo, { 'agent.replay.dir': nextReplay(repo, join(t.dir, 'next')) });
    const it1 = r.iterations[0]!;
    expect(it1.evidence.championPrograms?.cpu).toBe('stored');
    expect(it1.verdict, it1.reason).toBe('no-op');
  }, 240_000);

  it('on a runner with only the records the setup job handed over (no history, no store), the same', async () => {
    // What CI's measuring job has: the records, as the setup job's kept-records output carries them.
    const rows = readFileSync(join(repo, '.hillclimb', 'history.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const records = rows.map((l) => JSON.parse(l).programs).filter(Boolean);
    expect(records).toHaveLength(1);
    const fresh = join(t.dir, 'fresh');
    gitIn(repo, 'worktree', 'add', '--quiet', '--detach', fresh, 'main');
    const stateDir = join(fresh, '.hillclimb');
    expect(installRecords(stateDir, memoryLogger(), JSON.stringify(records))).toBe(1);
    const next = nextReplay(fresh, join(t.dir, 'handed'), 'Double all elements.');
    const err = await loopOnce(fresh, { 'agent.replay.dir': next }).catch((e: unknown) => e);
    expect((err as HillclimbError).name, String(err)).toBe('ChampionFailure');
    expect((err as HillclimbError).message).toContain('are not the ones it won with (fwd_bwd@toy)');
  }, 240_000);

  it('hillclimb measure of a PR on main after a docs commit (another tree, the same code): still checked, refused', async () => {
    const main = gitIn(repo, 'rev-parse', 'HEAD').trim();
    gitIn(repo, 'checkout', '--quiet', '-b', 'moved', champion);
    writeFileSync(join(repo, 'NOTES.md'), 'main moved on\n');
    gitIn(repo, 'add', 'NOTES.md');
    gitIn(repo, 'commit', '--quiet', '-m', 'docs');
    const base = gitIn(repo, 'rev-parse', 'HEAD').trim();
    gitIn(
      repo,
      'apply',
      '--index',
      join(nextReplay(repo, join(t.dir, 'pr'), 'Double the elements.'), '0001-docstring.patch'),
    );
    gitIn(repo, 'commit', '--quiet', '-m', 'a person’s docstring');
    const head = gitIn(repo, 'rev-parse', 'HEAD').trim();
    gitIn(repo, 'checkout', '--quiet', main);
    const err = await measureCommits({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      base,
      head,
      noProfile: true,
    }).catch((e: unknown) => e);
    const ev = (
      err as { evidence?: { verdict?: string; verdictReasons?: string[]; championPrograms?: unknown } }
    ).evidence;
    expect(
      (err as HillclimbError).name,
      JSON.stringify([ev?.verdict, ev?.verdictReasons, ev?.championPrograms]),
    ).toBe('ChampionFailure');
    expect((err as HillclimbError).message).toContain('are not the ones it won with (fwd_bwd@toy)');
  }, 240_000);

  it('won under another JAX: exported again, unverified, and the faster candidate needs a person', async () => {
    const history = join(repo, '.hillclimb', 'history.jsonl');
    const text = readFileSync(history, 'utf8');
    writeFileSync(history, text.replaceAll('"jax":"none"', '"jax":"0.0.1"'));
    rmSync(join(repo, '.hillclimb', 'cache'), { recursive: true, force: true });
    rmSync(join(repo, '.hillclimb', 'store', 'programs'), { recursive: true, force: true });
    try {
      const next = nextReplay(repo, join(t.dir, 'jax'), 'Double elements.');
      const r = await loopOnce(repo, { 'agent.replay.dir': next });
      const it1 = r.iterations[0]!;
      expect(it1.evidence.championPrograms?.cpu).toBe('exported-unverified');
      // Against the slowed champion the docstring would be improved 3×: never without a person.
      expect(it1.verdict, it1.reason).toBe('needs-human');
      expect(it1.reason).toContain('exported again under other JAX versions');
    } finally {
      writeFileSync(history, readFileSync(history, 'utf8').replaceAll('"jax":"0.0.1"', '"jax":"none"'));
    }
  }, 240_000);

  it('with only its history row left, its new export differs from what it won with: the run stops, naming it', async () => {
    rmSync(join(repo, '.hillclimb', 'cache'), { recursive: true, force: true });
    rmSync(join(repo, '.hillclimb', 'store', 'programs'), { recursive: true, force: true });
    const next = nextReplay(repo, join(t.dir, 'later'), 'Double each element.');
    const err = await loopOnce(repo, { 'agent.replay.dir': next }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).name).toBe('ChampionFailure');
    expect((err as HillclimbError).message).toMatch(
      /^the champion's programs \([0-9a-f]{12}\), exported again now, are not the ones it won with \(fwd_bwd@toy\)/,
    );
  }, 240_000);
});
