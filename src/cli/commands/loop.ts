/**
 * `hillclimb loop`: run the hill-climb. Flags override hillclimb.yml keys (validated the same way).
 * SIGINT/SIGTERM stop the running step cleanly; `--resume` continues the run later.
 */
import type { Command } from 'commander';
import type { ConfigOverrides } from '../../config/index.js';
import { type LoopResult, resolveConfigFile, runLoop } from '../../loop/index.js';
import { runTable } from '../../report/index.js';
import { ExitCode } from '../../util/index.js';
import type { CliContext } from '../context.js';

export interface LoopFlags {
  config?: string;
  target?: string;
  iterations?: string;
  candidates?: string;
  agent?: string;
  backend?: string;
  forge?: string;
  store?: string;
  directive?: string[];
  resume?: string | boolean;
  runId?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** CLI flags as config overrides, so they are validated (and named in errors) like the file. */
export function overridesFrom(flags: LoopFlags): ConfigOverrides {
  const o: ConfigOverrides = {};
  if (flags.iterations !== undefined) o['loop.iterations'] = Number(flags.iterations);
  if (flags.candidates !== undefined) o['loop.candidates'] = Number(flags.candidates);
  if (flags.agent !== undefined) o['agent.kind'] = flags.agent;
  if (flags.backend !== undefined) o['compute.backend'] = flags.backend;
  if (flags.forge !== undefined) o['forge.kind'] = flags.forge;
  if (flags.store !== undefined) o['store.kind'] = flags.store;
  if (flags.directive !== undefined) o['agent.directives'] = flags.directive;
  return o;
}

/** Wire SIGINT/SIGTERM to an AbortController for the duration of `fn`. */
export async function withInterrupts<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await fn(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function printLoopResult(c: CliContext, result: LoopResult, json: boolean): void {
  if (json) {
    c.stdout(
      JSON.stringify(
        {
          runId: result.runId,
          runDir: result.runDir,
          endReason: result.endReason,
          message: result.message,
          champion: result.champion,
          iterations: result.iterations.map((i) => ({
            iteration: i.iteration,
            verdict: i.verdict,
            reason: i.reason,
            subject: i.subject,
            prUrl: i.evidence.publish?.prUrl ?? null,
            bundle: i.bundleDir,
            ...(i.candidates
              ? {
                  candidates: i.candidates.map((c) => ({
                    slot: c.evidence.slot?.index,
                    verdict: c.verdict,
                    reason: c.reason,
                    subject: c.subject,
                    screen: c.evidence.screen?.estimate ?? null,
                    prUrl: c.evidence.publish?.prUrl ?? null,
                    bundle: c.bundleDir,
                  })),
                }
              : {}),
          })),
        },
        null,
        2,
      ),
    );
    return;
  }
  // A search's candidates each get a row (i001-c1, i001-c2, …); the lead is among them.
  c.stdout(runTable(result.iterations.flatMap((i) => (i.candidates ?? [i]).map((x) => x.evidence))));
  c.stdout(
    `run ${result.runId}: ${result.endReason}${result.message ? ` — ${result.message}` : ''}\n` +
      `champion ${result.champion.commit.slice(0, 12)}${result.champion.iteration ? ` (iteration ${result.champion.iteration})` : ' (unchanged)'}\n` +
      `evidence: ${result.runDir}`,
  );
}

/**
 * How a run ends for a shell or a CI step: 0 when it completed, 1 when it stopped early (failure budget,
 * stuck), 3 (ExitCode.infra, as `iterate` and `harness` exit for an `error` verdict) when no iteration
 * got past an error — a run that produced nothing must not read as a success. The summary line says so.
 */
export function loopExit(result: LoopResult): { code: number; summary?: string } {
  const n = result.iterations.length;
  if (n > 0 && result.iterations.every((i) => i.verdict === 'error')) {
    const first = result.iterations[0]!.reason;
    return {
      code: ExitCode.infra,
      summary:
        `no iteration completed: ${n === 1 ? 'the iteration' : `all ${n} iterations`} ended in error` +
        `${first ? ` (i001: ${first})` : ''}; the evidence of each is under ${result.runDir}`,
    };
  }
  return { code: result.endReason === 'completed' ? ExitCode.ok : ExitCode.failure };
}

export function registerLoop(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('loop')
    .description(
      'run the hill-climb: agent proposes, harness tests, measures, profiles and publishes each iteration',
    )
    .option('-c, --config <file>', 'config file (default: hillclimb.yml in the project root)')
    .option('-t, --target <name>', 'target to optimize (default: loop.target or the only target)')
    .option('-n, --iterations <n>', 'iterations to run (loop.iterations)')
    .option('-k, --candidates <k>', 'candidates proposed per iteration (loop.candidates; docs/search.md)')
    .option('--agent <kind>', 'agent: codex, claude, command or replay (agent.kind)')
    .option('--backend <name>', 'compute backend: local, ray or tpu-vm (compute.backend)')
    .option('--forge <kind>', 'forge: local or github (forge.kind)')
    .option('--store <kind>', 'store: local, hf or branch (store.kind)')
    .option(
      '--directive <preset...>',
      'directive presets: file names in paths.directives_dir of hillclimb.yml (agent.directives)',
    )
    .option('--resume [run-id]', 'continue a run (default: the latest) without repeating finished work')
    .option('--run-id <id>', 'id for a new run (default: UTC timestamp + random suffix)')
    .option(
      '--dry-run',
      'walk one iteration, printing compute commands instead of running them; push and publish nothing',
    )
    .option('--json', 'print the result as JSON')
    .action(async (flags: LoopFlags) => {
      const c = ctx();
      const result = await withInterrupts((signal) =>
        runLoop({
          configFile: resolveConfigFile(c.root, flags.config),
          overrides: overridesFrom(flags),
          ...(flags.target ? { target: flags.target } : {}),
          ...(flags.resume !== undefined
            ? { resume: flags.resume === true ? true : String(flags.resume) }
            : {}),
          ...(flags.runId ? { runId: flags.runId } : {}),
          dryRun: Boolean(flags.dryRun),
          logger: c.logger,
          progress: (line) => c.stderr(line),
          signal,
        }),
      );
      printLoopResult(c, result, Boolean(flags.json));
      const { code, summary } = loopExit(result);
      if (summary) c.stderr(`error: ${summary}`);
      done(code);
    });
}
