/**
 * The search benchmark (issue 25): one lineage (k = 1, today's loop) against k = 2, 3, 4, 8 candidates
 * per iteration (a short screen of every candidate, then a full comparison of the best survivor on
 * fresh rounds), at the same accelerator budget, on synthetic candidates with known true effects
 * (src/search/simulation.ts). The first tables screen with one verifier session of champion and
 * candidate per candidate (`screenSessions: 'per-candidate'`, the loop's on a backend with several
 * machines, fixed rounds). Prints, per noise model:
 *   1. the acceptance table at the loop's screen rounds (search.screen_rounds, bar = practical_delta
 *      0.02) and at the earlier default (2 rounds, same bar): true gain per accelerator-hour and its
 *      multiple of one lineage's, false accepts at no change (an all-null scenario), and the bias of
 *      the reported effect, with the winner judged on fresh rounds and, as the contrast, on its
 *      screening rounds reused;
 *   2. the details behind it (iterations, accepts, regressions accepted, the winner's curse itself);
 * then the shared k + 1-arm screening session, the cost sensitivity (a heavier per-session overhead),
 * the screen designs tried at k = 3, and the racing screen (issue 36; the loop's on one machine:
 * shared sessions, more of them while the leader is not separated) against one shared session of 1 and
 * of 3 rounds, at k = 1..4, three noise models and two overheads; last, those three screens at the
 * overhead `npm run bench:verdict -- --overhead-only` measured (bench/shared-session-overhead.ts).
 * Run: npm run bench:search [-- --trials 20 --seed 1]. Deterministic for a seed.
 */

import { DEFAULT_SEARCH_POLICY, type ScreenPolicy, type SearchPolicy } from '../../src/search/index.js';
import {
  ALL_NULL_PRIOR,
  BUSY_NOISE,
  CONTAMINATED_NOISE,
  type CostModel,
  DEFAULT_COST,
  type EffectPrior,
  type Evidence,
  MEASURED_NOISE,
  type MeanEstimate,
  PLAUSIBLE_PRIOR,
  type RoundNoise,
  type SearchSummary,
  simulateSearch,
} from '../../src/search/simulation.js';
import { MEASURED_SHARED_SESSION, overheadArmRounds } from '../shared-session-overhead.js';
import { type TrialsArgs as Args, parseTrialsArgs } from '../trials-args.js';

/** Accelerator hours each simulated search runs for (one trial). */
const BUDGET_HOURS = 10;
const KS = [1, 2, 3, 4, 8];
/**
 * The loop's screen defaults (schemas/hillclimb.schema.json: search.screen_rounds, screen_max_rounds,
 * screen_bar = practical_delta); per-candidate sessions use its first session's rounds only.
 */
const LOOP_SCREEN: ScreenPolicy = DEFAULT_SEARCH_POLICY.screen;
/** The loop's screen before this bench measured it (2 rounds), shown for contrast. */
const EARLIER_SCREEN: ScreenPolicy = { rounds: 2, bar: 0.02 };
/** The loop's cost model: one screening session per candidate. */
const PER_CANDIDATE: CostModel = { ...DEFAULT_COST, screenSessions: 'per-candidate' };
/** The comparison: one shared screening session of the champion and all k candidates. */
const SHARED: CostModel = { ...DEFAULT_COST, screenSessions: 'shared' };
/** The per-session overhead of the sensitivity table: the gdn tiny target's verification alone. */
const HEAVY_OVERHEAD = 8;
/** The k of the measured-overhead table: 1 to 4 candidates, the sessions bench:verdict measured. */
const MEASURED_KS = [1, 2, 3, 4];
/** The k of the screen designs table: the demo's, among the best under the loop's cost model. */
const DESIGN_K = 3;
const TRIED_ROUNDS = [1, 2, 3];
const TRIED_BARS = [0.01, 0.02, 0.03];

/** The race's table: k = 1..4, shared sessions (the loop's screen on one machine). */
const RACE_KS = [1, 2, 3, 4];
/** The screens the race is set against, all in shared sessions. */
const RACE_SCREENS: readonly { name: string; screen: ScreenPolicy }[] = [
  { name: 'race 3→6 rounds', screen: { rounds: 3, maxRounds: 6, bar: 0.02 } },
  { name: 'one session of 1 round (the loop before issue 36)', screen: { rounds: 1, bar: 0.02 } },
  { name: "one session of 3 rounds, no race (the loop's)", screen: LOOP_SCREEN },
];
const RACE_NOISES: readonly { name: string; noise: RoundNoise }[] = [
  { name: 'measured noise (paired CV 1%)', noise: MEASURED_NOISE },
  { name: 'contaminated noise', noise: CONTAMINATED_NOISE },
  { name: 'busy machine (paired CV ~10%, contaminated)', noise: BUSY_NOISE },
];

const NOISES: readonly { name: string; noise: RoundNoise }[] = [
  { name: 'measured noise (paired CV 1%)', noise: MEASURED_NOISE },
  { name: 'contaminated noise (shared CV 5%, 5% of timings slowed 5–50%)', noise: CONTAMINATED_NOISE },
];

const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '—');
const pct = (x: number, digits = 2): string => (Number.isFinite(x) ? `${(x * 100).toFixed(digits)}%` : '—');
const signed = (x: number, digits = 2): string =>
  Number.isFinite(x) ? (x >= 0 ? '+' : '') + x.toFixed(digits) : '—';
const withSe = (e: MeanEstimate): string => (e.n === 0 ? '—' : `${signed(e.mean)} ± ${fixed(e.se, 2)}`);
/**
 * A rate's multiple of one lineage's, ± its standard error (the two rates come from independent runs;
 * most of the error is the lineage's).
 */
const multiple = (s: SearchSummary, lineage: SearchSummary): string => {
  const m = s.trueGainPctPerHour / lineage.trueGainPctPerHour;
  const se =
    m *
    Math.hypot(
      s.trueGainPctPerHourSe / s.trueGainPctPerHour,
      lineage.trueGainPctPerHourSe / lineage.trueGainPctPerHour,
    );
  return s === lineage ? '1.00×' : `${fixed(m, 2)}× ± ${fixed(se, 2)}`;
};
const roundsLabel = (n: number): string => `${n} round${n === 1 ? '' : 's'}`;
const designLabel = (screen: ScreenPolicy): string =>
  `${roundsLabel(screen.rounds)}, bar +${pct(screen.bar, 0)}`;
const sameScreen = (x: ScreenPolicy, y: ScreenPolicy): boolean => x.rounds === y.rounds && x.bar === y.bar;
const sessionsLabel = (cost: CostModel): string =>
  cost.screenSessions === 'shared' ? 'one shared session' : 'one session per candidate';

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

function progress(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

let seedCounter = 0;
function run(
  args: Args,
  policy: SearchPolicy,
  evidence: Evidence,
  prior: EffectPrior,
  noise: RoundNoise,
  cost: CostModel = PER_CANDIDATE,
): SearchSummary {
  seedCounter += 1;
  const started = performance.now();
  const summary = simulateSearch({
    strategy: { policy, evidence },
    prior,
    noise,
    cost,
    budgetHours: BUDGET_HOURS,
    trials: args.trials,
    seed: args.seed * 1000 + seedCounter,
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const screen =
    policy.candidates === 1 ? 'no screen' : `${sessionsLabel(cost)}, ${designLabel(policy.screen)}`;
  progress(
    `k = ${policy.candidates} (${screen}) ${evidence} ${prior === ALL_NULL_PRIOR ? 'all-null' : 'prior'}: ${summary.iterations} iterations, ${summary.accepted} accepted (${seconds} s)`,
  );
  return summary;
}

const policyFor = (k: number, screen: ScreenPolicy): SearchPolicy => ({
  ...DEFAULT_SEARCH_POLICY,
  candidates: k,
  screen,
});

interface Cell {
  k: number;
  screen: ScreenPolicy;
  evidence: Evidence;
  prior: SearchSummary;
  allNull: SearchSummary;
}

/** One lineage: no screen, so one cell per noise model serves every screen design. */
function lineageCell(args: Args, noise: RoundNoise): Cell {
  const policy = policyFor(1, LOOP_SCREEN);
  return {
    k: 1,
    screen: LOOP_SCREEN,
    evidence: 'fresh',
    prior: run(args, policy, 'fresh', PLAUSIBLE_PRIOR, noise),
    allNull: run(args, policy, 'fresh', ALL_NULL_PRIOR, noise),
  };
}

function cellsFor(args: Args, noise: RoundNoise, screen: ScreenPolicy, lineage: Cell): Cell[] {
  const cells: Cell[] = [lineage];
  for (const k of KS.filter((k) => k > 1)) {
    for (const evidence of ['fresh', 'reused-screen'] as const) {
      const policy = policyFor(k, screen);
      cells.push({
        k,
        screen,
        evidence,
        prior: run(args, policy, evidence, PLAUSIBLE_PRIOR, noise),
        allNull: run(args, policy, evidence, ALL_NULL_PRIOR, noise),
      });
    }
  }
  return cells;
}

const falseAccepts = (s: SearchSummary): string => {
  const se = Math.sqrt(
    Math.max(s.falseAcceptRate * (1 - s.falseAcceptRate), 1 / s.iterations) / s.iterations,
  );
  return `${pct(s.falseAcceptRate)} ± ${pct(se)}`;
};

const freshCell = (cells: readonly Cell[], k: number): Cell =>
  cells.find((c) => c.k === k && c.evidence === 'fresh')!;
const lineageOf = (cells: readonly Cell[]): SearchSummary => freshCell(cells, 1).prior;

function headlineTable(cells: readonly Cell[]): string {
  const lineage = lineageOf(cells);
  const reused = (k: number) => cells.find((c) => c.k === k && c.evidence === 'reused-screen');
  const rows = KS.map((k) => {
    const f = freshCell(cells, k);
    const r = reused(k);
    return [
      k === 1 ? '1 (one lineage)' : String(k),
      `${fixed(f.prior.trueGainPctPerHour, 1)} ± ${fixed(f.prior.trueGainPctPerHourSe, 1)}`,
      multiple(f.prior, lineage),
      `${falseAccepts(f.allNull)} / ${r ? falseAccepts(r.allNull) : '—'}`,
      `${withSe(f.prior.biasAccepted)} / ${r ? withSe(r.prior.biasAccepted) : '—'}`,
      `${withSe(f.allNull.biasJudged)} / ${r ? withSe(r.allNull.biasJudged) : '—'} / ${withSe(f.allNull.screenBias)}`,
    ];
  });
  return table(
    [
      'k',
      'true gain per accelerator-hour (log %)',
      '× one lineage',
      'false accepts at no change: fresh / reused',
      'bias, accepted winners (pp): fresh / reused',
      'bias at no change, judged winners (pp): fresh / reused / screen alone',
    ],
    rows,
  );
}

function bestLine(cells: readonly Cell[]): string {
  const best = cells
    .filter((c) => c.evidence === 'fresh' && c.k > 1)
    .reduce((x, y) => (y.prior.trueGainPctPerHour > x.prior.trueGainPctPerHour ? y : x));
  return `Best k: ${best.k}, ${multiple(best.prior, lineageOf(cells))} one lineage's true gain per accelerator-hour.`;
}

function detailTable(cells: readonly Cell[]): string {
  const rows = cells.map((c) => {
    const s = c.prior;
    const perHour = (x: number): string => fixed(x / s.hours, 2);
    return [
      String(c.k),
      c.evidence,
      c.k === 1 ? 'none' : designLabel(c.screen),
      perHour(s.iterations),
      perHour(s.judged),
      perHour(s.accepted),
      String(s.acceptedNull),
      String(s.acceptedRegressions),
      withSe(s.biasJudged),
      withSe(s.screenBias),
      withSe(c.allNull.screenBias),
    ];
  });
  return table(
    [
      'k',
      'evidence',
      'screen',
      'iterations/h',
      'full comparisons/h',
      'accepts/h',
      'nulls accepted',
      'regressions accepted',
      'bias of judged winners (pp)',
      "winner's screen − truth (pp)",
      'same, at no change',
    ],
    rows,
  );
}

interface NoiseResult {
  name: string;
  noise: RoundNoise;
  lineage: Cell;
  /** The headline cells of each screen design shown (the loop's, then the earlier default). */
  screens: { screen: ScreenPolicy; cells: Cell[] }[];
}

const shortName = (r: NoiseResult): string => r.name.split(' (')[0]!;

/** The shared k + 1-arm screen at the loop's screen defaults: fresh, plausible prior and all-null. */
function sharedTable(args: Args, results: readonly NoiseResult[]): string {
  const rows = KS.filter((k) => k > 1).map((k) => [
    String(k),
    ...results.flatMap((r) => {
      const prior = run(args, policyFor(k, LOOP_SCREEN), 'fresh', PLAUSIBLE_PRIOR, r.noise, SHARED);
      const allNull = run(args, policyFor(k, LOOP_SCREEN), 'fresh', ALL_NULL_PRIOR, r.noise, SHARED);
      return [multiple(prior, r.lineage.prior), falseAccepts(allNull), withSe(prior.biasAccepted)];
    }),
  ]);
  return table(
    [
      'k',
      ...results.flatMap((r) => [
        `× one lineage, ${shortName(r)}`,
        'false accepts at no change',
        'bias, accepted winners (pp)',
      ]),
    ],
    rows,
  );
}

/** The screens of the headline, one session per candidate, and the shared session at the loop's screen. */
function sensitivityTable(args: Args, screens: readonly ScreenPolicy[]): string {
  const heavy = (cost: CostModel): CostModel => ({ ...cost, overheadPerArm: HEAVY_OVERHEAD });
  const columns = [
    ...screens.map((screen) => ({ screen, cost: heavy(PER_CANDIDATE) })),
    { screen: LOOP_SCREEN, cost: heavy(SHARED) },
  ];
  const lineage = run(
    args,
    policyFor(1, LOOP_SCREEN),
    'fresh',
    PLAUSIBLE_PRIOR,
    MEASURED_NOISE,
    heavy(PER_CANDIDATE),
  );
  const rate = (s: SearchSummary): string =>
    `${fixed(s.trueGainPctPerHour, 1)} ± ${fixed(s.trueGainPctPerHourSe, 1)}`;
  const rows: string[][] = [['1 (one lineage)', ...columns.map(() => `${rate(lineage)}, 1.00×`)]];
  for (const k of KS.filter((k) => k > 1)) {
    rows.push([
      String(k),
      ...columns.map(({ screen, cost }) => {
        const s = run(args, policyFor(k, screen), 'fresh', PLAUSIBLE_PRIOR, MEASURED_NOISE, cost);
        return `${rate(s)}, ${multiple(s, lineage)}`;
      }),
    ]);
  }
  return table(
    [
      'k',
      ...columns.map(
        ({ screen, cost }) => `${sessionsLabel(cost)}, ${designLabel(screen)}: log %/h, × one lineage`,
      ),
    ],
    rows,
  );
}

/**
 * A screen in shared sessions at the overhead bench:verdict measured (MEASURED_SHARED_SESSION): every
 * session pays the per-arm overhead of its own arm count (a k + 1-arm screen's start is shared by more
 * arms than a 2-arm full comparison's). One lineage runs only 2-arm sessions.
 */
function measuredOverheadTable(args: Args, screen: ScreenPolicy): string {
  const at: CostModel = {
    ...SHARED,
    overheadFor: (arms) => overheadArmRounds(MEASURED_SHARED_SESSION, arms),
  };
  const policy = (k: number) => policyFor(k, screen);
  const lineage = run(args, policy(1), 'fresh', PLAUSIBLE_PRIOR, MEASURED_NOISE, at);
  const rate = (s: SearchSummary): string =>
    `${fixed(s.trueGainPctPerHour, 1)} ± ${fixed(s.trueGainPctPerHourSe, 1)}, ${multiple(s, lineage)}`;
  const overheads = (k: number) =>
    k === 1
      ? fixed(at.overheadFor!(2), 2)
      : `${fixed(at.overheadFor!(k + 1), 2)} / ${fixed(at.overheadFor!(2), 2)}`;
  const rows = MEASURED_KS.map((k) => {
    if (k === 1) return ['1 (one lineage)', overheads(1), rate(lineage), '—', '—'];
    const prior = run(args, policy(k), 'fresh', PLAUSIBLE_PRIOR, MEASURED_NOISE, at);
    const allNull = run(args, policy(k), 'fresh', ALL_NULL_PRIOR, MEASURED_NOISE, at);
    return [String(k), overheads(k), rate(prior), falseAccepts(allNull), withSe(prior.biasAccepted)];
  });
  return table(
    [
      'k',
      'overhead per arm (arm-rounds): screen / 2-arm session',
      'true gain per accelerator-hour: log %/h, × one lineage',
      'false accepts at no change',
      'bias, accepted winners (pp)',
    ],
    rows,
  );
}

/** Screen designs at k = DESIGN_K, one session per candidate; cells already run are reused. */
function designsTable(args: Args, results: readonly NoiseResult[]): string {
  const rows: string[][] = [];
  for (const rounds of TRIED_ROUNDS) {
    for (const bar of TRIED_BARS) {
      const screen = { rounds, bar };
      const cells = results.map((r) => {
        const known = r.screens.find((x) => sameScreen(x.screen, screen));
        return known
          ? freshCell(known.cells, DESIGN_K).prior
          : run(args, policyFor(DESIGN_K, screen), 'fresh', PLAUSIBLE_PRIOR, r.noise);
      });
      const tag = sameScreen(screen, LOOP_SCREEN)
        ? " (the loop's default)"
        : sameScreen(screen, EARLIER_SCREEN)
          ? ' (the earlier default)'
          : '';
      rows.push([
        `${designLabel(screen)}${tag}`,
        ...cells.flatMap((s, i) => [multiple(s, results[i]!.lineage.prior), withSe(s.biasAccepted)]),
      ]);
    }
  }
  return table(
    [
      `screen (k = ${DESIGN_K})`,
      ...results.flatMap((r) => [`× one lineage, ${shortName(r)}`, 'bias of accepted winners (pp)']),
    ],
    rows,
  );
}

/**
 * The racing screen against one session of fixed rounds, all shared (one k + 1-arm session each): true
 * gain per accelerator-hour and its multiple of one lineage's, false accepts at no change, the bias of
 * accepted winners, how often the judged candidate was the best of the k, and what the screen cost.
 */
function raceTable(args: Args, noise: RoundNoise, cost: CostModel): string {
  const lineage = run(args, policyFor(1, LOOP_SCREEN), 'fresh', PLAUSIBLE_PRIOR, noise, cost);
  const lineageNull = run(args, policyFor(1, LOOP_SCREEN), 'fresh', ALL_NULL_PRIOR, noise, cost);
  const rate = (s: SearchSummary): string =>
    `${fixed(s.trueGainPctPerHour, 1)} ± ${fixed(s.trueGainPctPerHourSe, 1)}`;
  const rows: string[][] = [
    [
      '1 (one lineage)',
      '—',
      rate(lineage),
      '1.00×',
      falseAccepts(lineageNull),
      withSe(lineage.biasAccepted),
      '—',
      '—',
      '—',
    ],
  ];
  for (const k of RACE_KS.filter((k) => k > 1)) {
    for (const { name, screen } of RACE_SCREENS) {
      const s = run(args, policyFor(k, screen), 'fresh', PLAUSIBLE_PRIOR, noise, cost);
      const allNull = run(args, policyFor(k, screen), 'fresh', ALL_NULL_PRIOR, noise, cost);
      rows.push([
        String(k),
        name,
        rate(s),
        multiple(s, lineage),
        falseAccepts(allNull),
        withSe(s.biasAccepted),
        s.pickedBest.n === 0 ? '—' : `${pct(s.pickedBest.mean, 0)} ± ${pct(s.pickedBest.se, 0)}`,
        fixed(s.screenSessionsPerIteration, 2),
        pct(s.screenCostShare, 0),
      ]);
    }
  }
  return table(
    [
      'k',
      'screen (shared sessions)',
      'true gain per accelerator-hour (log %)',
      '× one lineage',
      'false accepts at no change',
      'bias, accepted winners (pp)',
      'judged the best of k',
      'screen sessions per iteration',
      "screen's share of the cost",
    ],
    rows,
  );
}

function main(): void {
  const args = parseTrialsArgs(process.argv.slice(2), 'bench:search', { trials: 20, seed: 1 });
  const started = performance.now();
  const full = DEFAULT_SEARCH_POLICY.full;
  const screens = sameScreen(LOOP_SCREEN, EARLIER_SCREEN) ? [LOOP_SCREEN] : [LOOP_SCREEN, EARLIER_SCREEN];
  const screenTitle = (screen: ScreenPolicy): string =>
    sameScreen(screen, LOOP_SCREEN)
      ? `the loop's screen defaults (${designLabel(screen)})`
      : `the earlier default (${designLabel(screen)})`;
  const out: string[] = [
    `# bench:search — seed ${args.seed}, ${args.trials} searches of ${BUDGET_HOURS} accelerator-hours per cell`,
    '',
    `Prior: ${pct(PLAUSIBLE_PRIOR.gainShare, 0)} gains of +${pct(PLAUSIBLE_PRIOR.gainRange[0], 0)} to +${pct(PLAUSIBLE_PRIOR.gainRange[1], 0)}, ${pct(PLAUSIBLE_PRIOR.regressionShare, 0)} regressions of −${pct(PLAUSIBLE_PRIOR.regressionRange[0], 0)} to −${pct(PLAUSIBLE_PRIOR.regressionRange[1], 0)}, the rest no change (false accepts: every candidate no change).`,
    `Screen (k > 1): ${sessionsLabel(PER_CANDIDATE)} of champion and candidate (the loop's); full comparison: paired sequential ${full.nStart}→${full.nMax} rounds.`,
    `Cost: ${DEFAULT_COST.overheadPerArm} arm-rounds of overhead per arm per verifier session, ${DEFAULT_COST.armRoundSeconds} s an arm-round.`,
    'pp: percentage points of effect, reported − true; ± one standard error. fresh: the winner judged on rounds measured after the selection; reused: its screening rounds counted as the first rounds of its comparison (biased, for contrast); screen alone: the screening estimate it won with.',
  ];
  const results: NoiseResult[] = [];
  for (const { name, noise } of NOISES) {
    progress(name);
    const lineage = lineageCell(args, noise);
    const result: NoiseResult = {
      name,
      noise,
      lineage,
      screens: screens.map((screen) => ({ screen, cells: cellsFor(args, noise, screen, lineage) })),
    };
    results.push(result);
    out.push('', `## ${name}: one screening session per candidate (the loop's)`);
    for (const { screen, cells } of result.screens) {
      out.push('', `### ${screenTitle(screen)}`, '', headlineTable(cells), '', bestLine(cells));
    }
    out.push(
      '',
      '### Details',
      '',
      detailTable([lineage, ...result.screens.flatMap((x) => x.cells.filter((c) => c.k > 1))]),
    );
  }
  progress('shared screening session');
  out.push(
    '',
    `## For comparison: one shared screening session of the champion and all k (${designLabel(LOOP_SCREEN)}, fresh; × the same lineage)`,
    '',
    sharedTable(args, results),
  );
  progress(`sensitivity: ${HEAVY_OVERHEAD} arm-rounds of overhead per arm`);
  out.push(
    '',
    `## Heavier overhead: ${HEAVY_OVERHEAD} arm-rounds per arm per session (measured noise, fresh)`,
    '',
    sensitivityTable(args, screens),
  );
  progress(`screen designs at k = ${DESIGN_K}`);
  out.push(
    '',
    `## Screen designs tried at k = ${DESIGN_K} (one session per candidate, fresh)`,
    '',
    designsTable(args, results),
  );
  for (const cost of [SHARED, { ...SHARED, overheadPerArm: HEAVY_OVERHEAD }]) {
    for (const { name, noise } of RACE_NOISES) {
      progress(`the racing screen: ${name}, overhead ${cost.overheadPerArm}`);
      out.push(
        '',
        `## The racing screen (issue 36): ${name}, ${cost.overheadPerArm} arm-rounds of overhead per arm per session`,
        '',
        raceTable(args, noise, cost),
      );
    }
  }
  const m = MEASURED_SHARED_SESSION;
  for (const { name, screen } of RACE_SCREENS) {
    progress(`shared screening session at the measured overhead: ${name}`);
    out.push(
      '',
      `## The shared screening session at the overhead bench:verdict measured: ${name} (measured noise, fresh)`,
      '',
      `Session seconds = ${fixed(m.fixedSeconds, 2)} + ${fixed(m.perArmSeconds, 2)}·arms + ${fixed(m.perArmRoundSeconds, 3)}·arms·rounds (${m.source}).`,
      '',
      measuredOverheadTable(args, screen),
    );
  }
  out.push('', `Run time: ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
