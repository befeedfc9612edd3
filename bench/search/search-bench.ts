/**
 * The search benchmark (issue 25): one lineage (k = 1, today's loop) against k = 2, 4, 8 candidates per
 * iteration (a short screening session, then a full comparison of the best survivor), at the same
 * accelerator budget, on synthetic candidates with known true effects (src/search/simulation.ts).
 * Prints, per noise model:
 *   1. the headline: true gain per accelerator-hour and its multiple of one lineage's, false accepts
 *      at no change (an all-null scenario), and the bias of the reported effect, with the winner judged
 *      on fresh rounds and, as the contrast, on its screening rounds reused;
 *   2. the details behind it (iterations, accepts, regressions accepted, the winner's curse itself);
 * then the cost sensitivity (a heavier per-session overhead) and the screen designs tried at k = 4.
 * Run: npm run bench:search [-- --trials 20 --seed 1]. Deterministic for a seed.
 */

import { DEFAULT_SEARCH_POLICY, type ScreenPolicy, type SearchPolicy } from '../../src/search/index.js';
import {
  ALL_NULL_PRIOR,
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
import { type TrialsArgs as Args, parseTrialsArgs } from '../trials-args.js';

/** Accelerator hours each simulated search runs for (one trial). */
const BUDGET_HOURS = 10;
const KS = [1, 2, 4, 8];
/** The per-session overhead of the sensitivity table: the gdn tiny target's verification alone. */
const HEAVY_OVERHEAD = 8;
const TRIED_ROUNDS = [1, 2, 3];
const TRIED_BARS = [0.01, 0.02, 0.03];

const NOISES: readonly { name: string; noise: RoundNoise }[] = [
  { name: 'measured noise (paired CV 1%)', noise: MEASURED_NOISE },
  { name: 'contaminated noise (shared CV 5%, 5% of timings slowed 5–50%)', noise: CONTAMINATED_NOISE },
];

const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '—');
const pct = (x: number, digits = 2): string => (Number.isFinite(x) ? `${(x * 100).toFixed(digits)}%` : '—');
const signed = (x: number, digits = 2): string =>
  Number.isFinite(x) ? (x >= 0 ? '+' : '') + x.toFixed(digits) : '—';
const withSe = (e: MeanEstimate): string => (e.n === 0 ? '—' : `${signed(e.mean)} ± ${fixed(e.se, 2)}`);
const screenLabel = (policy: SearchPolicy): string =>
  policy.candidates === 1 ? 'none' : `${policy.screen.rounds} rounds, bar +${pct(policy.screen.bar, 0)}`;

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
  cost: CostModel = DEFAULT_COST,
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
  progress(
    `k = ${policy.candidates} ${evidence} ${prior === ALL_NULL_PRIOR ? 'all-null' : 'prior'}: ${summary.iterations} iterations, ${summary.accepted} accepted (${seconds} s)`,
  );
  return summary;
}

const policyFor = (k: number, screen: ScreenPolicy = DEFAULT_SEARCH_POLICY.screen): SearchPolicy => ({
  ...DEFAULT_SEARCH_POLICY,
  candidates: k,
  screen,
});

interface Cell {
  k: number;
  evidence: Evidence;
  prior: SearchSummary;
  allNull: SearchSummary;
}

function cellsFor(args: Args, noise: RoundNoise): Cell[] {
  const cells: Cell[] = [];
  for (const k of KS) {
    const kinds: Evidence[] = k === 1 ? ['fresh'] : ['fresh', 'reused-screen'];
    for (const evidence of kinds) {
      const policy = policyFor(k);
      cells.push({
        k,
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

function headlineTable(cells: readonly Cell[]): string {
  const lineage = cells.find((c) => c.k === 1)!.prior.trueGainPctPerHour;
  const fresh = (k: number) => cells.find((c) => c.k === k && c.evidence === 'fresh')!;
  const reused = (k: number) => cells.find((c) => c.k === k && c.evidence === 'reused-screen');
  const rows = KS.map((k) => {
    const f = fresh(k);
    const r = reused(k);
    return [
      k === 1 ? '1 (one lineage)' : String(k),
      `${fixed(f.prior.trueGainPctPerHour, 1)} ± ${fixed(f.prior.trueGainPctPerHourSe, 1)}`,
      `${fixed(f.prior.trueGainPctPerHour / lineage, 2)}×`,
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

function detailTable(cells: readonly Cell[]): string {
  const rows = cells.map((c) => {
    const s = c.prior;
    const perHour = (x: number): string => fixed(x / s.hours, 2);
    return [
      String(c.k),
      c.evidence,
      screenLabel(policyFor(c.k)),
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

function sensitivityTable(args: Args): string {
  const heavy: CostModel = { ...DEFAULT_COST, overheadPerArm: HEAVY_OVERHEAD };
  const rows: string[][] = [];
  let lineage = Number.NaN;
  for (const k of KS) {
    const s = run(args, policyFor(k), 'fresh', PLAUSIBLE_PRIOR, MEASURED_NOISE, heavy);
    if (k === 1) lineage = s.trueGainPctPerHour;
    rows.push([
      String(k),
      `${fixed(s.trueGainPctPerHour, 2)} ± ${fixed(s.trueGainPctPerHourSe, 2)}`,
      `${fixed(s.trueGainPctPerHour / lineage, 2)}×`,
      withSe(s.biasAccepted),
    ]);
  }
  return table(
    ['k', 'true gain per accelerator-hour (log %)', '× one lineage', 'bias of accepted winners (pp), fresh'],
    rows,
  );
}

interface NoiseResult {
  name: string;
  noise: RoundNoise;
  cells: Cell[];
}

const lineageOf = (r: NoiseResult): number => r.cells.find((c) => c.k === 1)!.prior.trueGainPctPerHour;

/** Screen designs at k = 4 under each noise model; the default design's cell is the headline's. */
function designsTable(args: Args, results: readonly NoiseResult[]): string {
  const rows: string[][] = [];
  const isDefault = (screen: ScreenPolicy): boolean =>
    screen.rounds === DEFAULT_SEARCH_POLICY.screen.rounds && screen.bar === DEFAULT_SEARCH_POLICY.screen.bar;
  for (const rounds of TRIED_ROUNDS) {
    for (const bar of TRIED_BARS) {
      const policy = policyFor(4, { rounds, bar });
      const cells = results.map((r) =>
        isDefault(policy.screen)
          ? r.cells.find((c) => c.k === 4 && c.evidence === 'fresh')!.prior
          : run(args, policy, 'fresh', PLAUSIBLE_PRIOR, r.noise),
      );
      rows.push([
        `${screenLabel(policy)}${isDefault(policy.screen) ? ' (default)' : ''}`,
        ...cells.flatMap((s, i) => [
          `${fixed(s.trueGainPctPerHour / lineageOf(results[i]!), 2)}×`,
          withSe(s.biasAccepted),
        ]),
      ]);
    }
  }
  return table(
    [
      'screen (k = 4)',
      ...results.flatMap((r) => [`× one lineage, ${r.name.split(' (')[0]}`, 'bias of accepted winners (pp)']),
    ],
    rows,
  );
}

function main(): void {
  const args = parseTrialsArgs(process.argv.slice(2), 'bench:search', { trials: 20, seed: 1 });
  const started = performance.now();
  const policy = DEFAULT_SEARCH_POLICY;
  const out: string[] = [
    `# bench:search — seed ${args.seed}, ${args.trials} searches of ${BUDGET_HOURS} accelerator-hours per cell`,
    '',
    `Prior: ${pct(PLAUSIBLE_PRIOR.gainShare, 0)} gains of +${pct(PLAUSIBLE_PRIOR.gainRange[0], 0)} to +${pct(PLAUSIBLE_PRIOR.gainRange[1], 0)}, ${pct(PLAUSIBLE_PRIOR.regressionShare, 0)} regressions of −${pct(PLAUSIBLE_PRIOR.regressionRange[0], 0)} to −${pct(PLAUSIBLE_PRIOR.regressionRange[1], 0)}, the rest no change (false accepts: every candidate no change).`,
    `Screen (k > 1): ${screenLabel(policy)}; full comparison: paired sequential ${policy.full.nStart}→${policy.full.nMax} rounds.`,
    `Cost: ${DEFAULT_COST.overheadPerArm} arm-rounds of overhead per arm per verifier session, ${DEFAULT_COST.armRoundSeconds} s an arm-round.`,
    'pp: percentage points of effect, reported − true; ± one standard error. fresh: the winner judged on rounds measured after the selection; reused: its screening rounds counted as the first rounds of its comparison (biased, for contrast); screen alone: the screening estimate it won with.',
  ];
  const results: NoiseResult[] = [];
  for (const { name, noise } of NOISES) {
    progress(name);
    const cells = cellsFor(args, noise);
    const result = { name, noise, cells };
    results.push(result);
    const best = cells
      .filter((c) => c.evidence === 'fresh' && c.k > 1)
      .reduce((x, y) => (y.prior.trueGainPctPerHour > x.prior.trueGainPctPerHour ? y : x));
    out.push(
      '',
      `## ${name}`,
      '',
      headlineTable(cells),
      '',
      `Best k: ${best.k}, ${fixed(best.prior.trueGainPctPerHour / lineageOf(result), 2)}× one lineage's true gain per accelerator-hour.`,
      '',
      detailTable(cells),
    );
  }
  progress(`sensitivity: ${HEAVY_OVERHEAD} arm-rounds of overhead per arm`);
  out.push(
    '',
    `## Heavier overhead: ${HEAVY_OVERHEAD} arm-rounds per arm per session (measured noise, fresh)`,
    '',
    sensitivityTable(args),
  );
  progress('screen designs at k = 4');
  out.push('', '## Screen designs tried at k = 4 (fresh)', '', designsTable(args, results));
  out.push('', `Run time: ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
