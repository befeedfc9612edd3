/**
 * The statistics benchmark: the full Monte Carlo simulation behind the verdict rule
 * (docs/statistics.md). Prints three tables:
 *   1. accept rates of hillclimb's rule (fixed n = 5, sequential 5→15) and of gdnctl's one-run
 *      +0.25% rule, side by side, at true effects 0, 1×MDE and 2×MDE for CV 1%, 2%, 5%;
 *   2. power at 2×MDE and false accepts at zero effect for fixed n from 5 to 15 (the MDE formula's claim);
 *   3. coverage of the percentile and BCa intervals (why percentile is the default).
 * Run: npm run bench:stats [-- --trials 2000 --seed 1]. Deterministic for a seed.
 */
import { type CiMethod, MIN_RESAMPLES } from '../../src/evidence/stats/bootstrap.js';
import { robustNoiseCv } from '../../src/evidence/stats/noise.js';
import { normalQuantile } from '../../src/evidence/stats/normal.js';
import { DEFAULT_SEQUENTIAL_POLICY } from '../../src/evidence/stats/sequential.js';
import {
  fixedRunsRule,
  gdnctlRule,
  intervalCoverage,
  NOISE_SHAPES,
  type NoiseShape,
  type Rule,
  type Scenario,
  type SimulationResult,
  sequentialRule,
  simulate,
  trueMde,
} from '../../src/evidence/stats/simulation.js';
import { compareArms, DEFAULT_POLICY } from '../../src/evidence/stats/verdict.js';

interface Args {
  trials: number;
  seed: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { trials: 2000, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    if ((flag === '--trials' || flag === '--seed') && Number.isSafeInteger(value) && value > 0) {
      args[flag === '--trials' ? 'trials' : 'seed'] = value;
      i += 1;
    } else {
      process.stderr.write(`usage: npm run bench:stats [-- --trials N --seed S]; bad argument ${flag}\n`);
      process.exit(2);
    }
  }
  return args;
}

const CVS = [0.01, 0.02, 0.05];
const EFFECTS_IN_MDE = [0, 1, 2];
const FIXED_NS = [5, 7, 10, 15];
/** gdnctl needs no bootstrap; give it more trials so its rates are tight. */
const GDNCTL_TRIAL_FACTOR = 10;

const pct = (x: number, digits = 1): string => `${(x * 100).toFixed(digits)}%`;

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Binomial standard error of a rate, for the ± column. */
const binomialSe = (p: number, trials: number): number =>
  Math.sqrt(Math.max(p * (1 - p), 1 / trials) / trials);

let seedCounter = 0;
function run(rule: Rule, scenario: Scenario, trials: number, seed: number): SimulationResult {
  seedCounter += 1;
  return simulate(rule, scenario, { trials, seed: seed * 1000 + seedCounter });
}

function progress(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

function acceptanceTable(args: Args, shape: NoiseShape): string {
  const nStart = DEFAULT_SEQUENTIAL_POLICY.nStart;
  const rules: { rule: Rule; trials: number }[] = [
    { rule: fixedRunsRule(nStart), trials: args.trials },
    { rule: sequentialRule(), trials: args.trials },
    { rule: gdnctlRule(), trials: args.trials * GDNCTL_TRIAL_FACTOR },
  ];
  const rows: string[][] = [];
  for (const cv of CVS) {
    const mde = trueMde(cv, nStart);
    for (const k of EFFECTS_IN_MDE) {
      const scenario: Scenario = { cv, trueRatio: 1 + k * mde, direction: 'lower', shape };
      for (const { rule, trials } of rules) {
        const r = run(rule, scenario, trials, args.seed);
        progress(`${shape} CV ${pct(cv, 0)} effect ${k}×MDE ${rule.name}: accept ${pct(r.acceptRate)}`);
        rows.push([
          rule.name,
          pct(cv, 0),
          k === 0 ? '0' : `${k}×MDE`,
          `${pct(k * mde, 2)}`,
          r.meanRunsPerArm.toFixed(1),
          `${pct(r.acceptRate)} ± ${pct(binomialSe(r.acceptRate, trials))}`,
          pct(r.regressRate),
          String(trials),
        ]);
      }
    }
  }
  return table(['rule', 'CV', 'effect', 'true Δ', 'n/arm', 'accept', 'regressed', 'trials'], rows);
}

/**
 * The rule with evaluation.md's textbook MDE, (z_{1−α/2} + z_power) · CV · √(2/n) on the same robust
 * CV, to show what the median, Student-t and bootstrap-width corrections in noise.ts buy.
 */
function textbookMde(cv: number, n: number): number {
  return (normalQuantile(0.975) + normalQuantile(DEFAULT_POLICY.power)) * cv * Math.sqrt(2 / n);
}

function textbookRule(n: number): Rule {
  return {
    name: `textbook MDE, n = ${n}`,
    decide(sampler, direction, seed) {
      const a = sampler.draw('a', n);
      const b = sampler.draw('b', n);
      const mde = textbookMde(robustNoiseCv([a, b]), n);
      return { verdict: compareArms(a, b, { direction, seed, mde }).verdict, runsPerArm: n };
    },
  };
}

function powerTable(args: Args): string {
  const rows: string[][] = [];
  const cv = 0.02;
  const scenario = (trueRatio: number): Scenario => ({
    cv,
    trueRatio,
    direction: 'higher',
    shape: 'lognormal',
  });
  for (const n of FIXED_NS) {
    const mde = trueMde(cv, n);
    const zero = run(fixedRunsRule(n), scenario(1), args.trials, args.seed);
    const power = run(fixedRunsRule(n), scenario(1 + 2 * mde), args.trials, args.seed);
    const naive = textbookMde(cv, n);
    const naivePower = run(textbookRule(n), scenario(1 + 2 * naive), args.trials, args.seed);
    progress(`n = ${n}: power at 2×MDE ${pct(power.acceptRate)}, textbook ${pct(naivePower.acceptRate)}`);
    rows.push([
      String(n),
      pct(mde, 2),
      `${pct(zero.acceptRate)} ± ${pct(binomialSe(zero.acceptRate, args.trials))}`,
      pct(zero.regressRate),
      `${pct(power.acceptRate)} ± ${pct(binomialSe(power.acceptRate, args.trials))}`,
      pct(naive, 2),
      `${pct(naivePower.acceptRate)} ± ${pct(binomialSe(naivePower.acceptRate, args.trials))}`,
    ]);
  }
  return table(
    [
      'n/arm',
      'MDE',
      'false accept (Δ = 0)',
      'false regressed (Δ = 0)',
      'power (Δ = 2×MDE)',
      'textbook MDE',
      'power at 2× textbook MDE',
    ],
    rows,
  );
}

function coverageTable(args: Args): string {
  const rows: string[][] = [];
  for (const n of [5, 10, 15]) {
    for (const method of ['percentile', 'bca'] as CiMethod[]) {
      const scenario: Scenario = { cv: 0.02, trueRatio: 1, direction: 'lower', shape: 'lognormal' };
      const c = intervalCoverage(scenario, n, method, { trials: args.trials, seed: args.seed * 7919 + n });
      progress(`coverage n = ${n} ${method}: ${pct(c.coverage)}`);
      rows.push([method, String(n), pct(c.coverage), pct(c.missLow), pct(c.missHigh)]);
    }
  }
  return table(
    ['interval (nominal 95%)', 'n/arm', 'coverage', 'entirely above truth', 'entirely below truth'],
    rows,
  );
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const out: string[] = [];
  const p = DEFAULT_POLICY;
  const seq = DEFAULT_SEQUENTIAL_POLICY;
  out.push(
    '# hillclimb statistics benchmark',
    '',
    `trials per cell ${args.trials} (gdnctl ${args.trials * GDNCTL_TRIAL_FACTOR}), seed ${args.seed}; ` +
      `policy: ${p.confidence * 100}% ${p.ciMethod} bootstrap CI of the ratio of medians (${MIN_RESAMPLES} resamples), ` +
      `accept bar 1 + max(MDE, δ = ${pct(p.practicalDelta)}), regression bar 1 − ${pct(p.regressionDelta)}, ` +
      `MDE for power ${p.power * 100}% from the CV observed in the comparison; sequential n = ${seq.nStart}→${seq.nMax} step ${seq.step}.`,
    'Effects are multiples of the MDE at n = 5 per arm for the true CV; "accept" at effect 0 is the false-accept rate.',
  );
  for (const shape of NOISE_SHAPES) {
    progress(`acceptance, ${shape} noise`);
    out.push(
      '',
      `## Accept rates, ${shape} noise${shape === 'contaminated' ? ' (10% of runs disturbed by +5–50%)' : ''}`,
      '',
      acceptanceTable(args, shape),
    );
  }
  progress('power by n');
  out.push('', '## The MDE formula at fixed n (log-normal noise, CV 2%)', '', powerTable(args));
  progress('interval coverage');
  out.push('', '## Interval coverage at zero effect (log-normal noise)', '', coverageTable(args));
  out.push('', `finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
