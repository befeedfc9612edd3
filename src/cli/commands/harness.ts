/**
 * The harness without an agent: `hillclimb test` (a correctness gate on a commit), `hillclimb measure`
 * (A/B of two commits with the loop's statistics, optionally posted as a PR's sticky comment) and
 * `hillclimb profile` (one profiled run, summarized).
 */
import type { Command } from 'commander';
import {
  commentMeasurement,
  measureCommits,
  profileCommitSummary,
  resolveConfigFile,
  testCommit,
} from '../../loop/index.js';
import { formatSummary, headline } from '../../report/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import type { CliContext } from '../context.js';
import { withInterrupts } from './loop.js';

interface CommonFlags {
  config?: string;
  target?: string;
  backend?: string;
  dryRun?: boolean;
  json?: boolean;
}

function common(c: CliContext, flags: CommonFlags, signal: AbortSignal) {
  return {
    configFile: resolveConfigFile(c.root, flags.config),
    overrides: flags.backend ? { 'compute.backend': flags.backend } : {},
    ...(flags.target ? { target: flags.target } : {}),
    logger: c.logger,
    progress: (line: string) => c.stderr(line),
    signal,
    dryRun: Boolean(flags.dryRun),
  };
}

function withCommon(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'config file (default: hillclimb.yml in the project root)')
    .option('-t, --target <name>', 'target (default: loop.target or the only target)')
    .option('--backend <name>', 'compute backend: local, ray or tpu-vm')
    .option('--dry-run', 'print compute commands instead of running them; publish nothing')
    .option('--json', 'print JSON');
}

export function registerHarness(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  withCommon(
    program
      .command('test')
      .description(
        'run a correctness gate (the CPU gate by default) on a commit and report its JUnit results',
      )
      .option('--ref <commit>', 'commit to test', 'HEAD')
      .option('--accelerator', 'run the accelerator gate on the compute backend instead'),
  ).action(async (flags: CommonFlags & { ref: string; accelerator?: boolean }) => {
    const c = ctx();
    const { evidence } = await withInterrupts((signal) =>
      testCommit({
        ...common(c, flags, signal),
        ref: flags.ref,
        gate: flags.accelerator ? 'accelerator-gate' : 'cpu-gate',
      }),
    );
    const gate = flags.accelerator ? evidence.gates.accelerator : evidence.gates.cpu;
    if (flags.json) c.stdout(JSON.stringify(gate, null, 2));
    else {
      const j = gate?.junit;
      c.stdout(
        `${gate?.status ?? 'not run'}${gate?.reason ? `: ${gate.reason}` : ''}` +
          (j
            ? `\n${j.passed} passed, ${j.failed} failed, ${j.errors} errors, ${j.skipped} skipped in ${j.time.toFixed(1)} s`
            : ''),
      );
      for (const f of j?.failing ?? []) c.stdout(`  FAILED ${f}`);
    }
    done(gate?.status === 'passed' || gate?.status === 'skipped' ? 0 : 1);
  });

  withCommon(
    program
      .command('measure')
      .description(
        'A/B-measure a commit against a base with the loop’s statistics (both commits’ exported programs timed ' +
          'call by call in one verifier process, rounds paired; t interval of the rounds’ log ratios)',
      )
      .requiredOption('--base <commit>', 'the champion / base commit')
      .option('--head <commit>', 'the candidate commit', 'HEAD')
      .option('--cpu-gate', 'run the CPU correctness gate on the head first')
      .option('--no-profile', 'skip the profiled run')
      .option(
        '--pr <number>',
        'post the result as the sticky comment of this PR (its title and body are left alone)',
      ),
  ).action(
    async (
      flags: CommonFlags & { base: string; head: string; cpuGate?: boolean; profile: boolean; pr?: string },
    ) => {
      const c = ctx();
      if (flags.pr !== undefined && !/^[1-9]\d*$/.test(flags.pr)) {
        throw new HillclimbError(`--pr must be a PR number, got "${flags.pr}"`, {
          exitCode: ExitCode.badInput,
        });
      }
      const result = await withInterrupts(async (signal) => {
        const opts = common(c, flags, signal);
        const r = await measureCommits({
          ...opts,
          base: flags.base,
          head: flags.head,
          ...(flags.cpuGate ? { gates: ['cpu-gate' as const] } : {}),
          noProfile: !flags.profile,
        });
        // A dry run measured nothing: it must not overwrite the PR's comment with that.
        const comment =
          flags.pr && !opts.dryRun ? await commentMeasurement(opts, r, Number(flags.pr)) : undefined;
        return { ...r, comment };
      });
      if (flags.json) c.stdout(JSON.stringify(result.evidence, null, 2));
      else {
        c.stdout(headline(result.evidence));
        for (const reason of result.evidence.verdictReasons.slice(1)) c.stdout(`  ${reason}`);
        c.stdout(`evidence: ${result.bundleDir}`);
        if (result.comment) c.stdout(`PR #${flags.pr}: sticky comment ${result.comment.operation}`);
        else if (flags.pr) c.stdout(`PR #${flags.pr}: dry run, sticky comment left alone`);
      }
      done(result.evidence.verdict === 'error' ? ExitCode.infra : 0);
    },
  );

  withCommon(
    program
      .command('profile')
      .description('profile a commit once and summarize the trace (steps, hotspots, custom calls)')
      .option('--ref <commit>', 'commit to profile', 'HEAD')
      .option('--top <n>', 'rows per table', '15'),
  ).action(async (flags: CommonFlags & { ref: string; top: string }) => {
    const c = ctx();
    const r = await withInterrupts((signal) =>
      profileCommitSummary({ ...common(c, flags, signal), ref: flags.ref }),
    );
    c.stdout(
      flags.json
        ? JSON.stringify(r.summary, null, 2)
        : `${formatSummary(r.summary, Number(flags.top))}\ntrace: ${r.traceDir}`,
    );
    done(0);
  });
}
