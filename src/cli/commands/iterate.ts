/**
 * `hillclimb iterate <phase>`: one phase of one iteration (CI runs each phase in its own job, with
 * only the privileges it needs; see src/loop/drivers/phases.ts). `all` runs the whole iteration here.
 */
import type { Command } from 'commander';
import { PHASES, type Phase, resolveConfigFile, runPhase } from '../../loop/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import type { CliContext } from '../context.js';
import { type LoopFlags, overridesFrom, withInterrupts } from './loop.js';

interface IterateFlags extends LoopFlags {
  iteration: string;
  slot?: string;
  base?: string;
  runStartedAt?: string;
  attestation?: string;
}

export function registerIterate(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('iterate <phase>')
    .description(`run one phase of one iteration: ${PHASES.join(', ')}`)
    .requiredOption('--run-id <id>', 'the run this iteration belongs to')
    .requiredOption('-i, --iteration <n>', 'iteration number (1-based)')
    .option(
      '--slot <s>',
      "a search's candidate (loop.candidates > 1), 1 to k: bundle i003-c<s>, branch …/i003-c<s> (the workflow's matrix gives it)",
    )
    .option('-c, --config <file>', 'config file (default: hillclimb.yml in the project root)')
    .option('-t, --target <name>', 'target to optimize')
    .option(
      '--base <commit>',
      'the champion: where propose starts (default: from history, else HEAD); what a later phase checks the bundle against',
    )
    .option(
      '--attestation <json>',
      "the statement of the job that made the bundle (its attestation output); without it the bundle's results are dropped",
    )
    .option('-n, --iterations <n>', 'iterations the run was asked for (shown in the prompt)')
    .option('--run-started-at <iso>', 'when the run started (orders sticky comments)')
    .option('--agent <kind>', 'agent.kind')
    .option('--backend <name>', 'compute.backend')
    .option('--forge <kind>', 'forge.kind')
    .option('--store <kind>', 'store.kind')
    .option('--directive <preset...>', 'agent.directives')
    .option('--dry-run', 'print compute commands instead of running them; publish nothing')
    .option('--json', 'print the evidence as JSON')
    .action(async (phase: string, flags: IterateFlags) => {
      const c = ctx();
      if (!(PHASES as readonly string[]).includes(phase)) {
        throw new HillclimbError(`unknown phase "${phase}"; phases: ${PHASES.join(', ')}`, {
          exitCode: ExitCode.badInput,
        });
      }
      const iteration = Number(flags.iteration);
      if (!Number.isInteger(iteration) || iteration < 1) {
        throw new HillclimbError(`--iteration must be a positive integer, got "${flags.iteration}"`, {
          exitCode: ExitCode.badInput,
        });
      }
      const slot = flags.slot === undefined ? undefined : Number(flags.slot);
      if (slot !== undefined && !(Number.isInteger(slot) && slot >= 1)) {
        throw new HillclimbError(`--slot must be a positive integer, got "${flags.slot}"`, {
          exitCode: ExitCode.badInput,
        });
      }
      const result = await withInterrupts((signal) =>
        runPhase(phase as Phase, {
          configFile: resolveConfigFile(c.root, flags.config),
          overrides: { ...overridesFrom({ ...flags, iterations: undefined }) },
          ...(flags.target ? { target: flags.target } : {}),
          runId: String(flags.runId),
          iteration,
          ...(slot !== undefined ? { slot } : {}),
          ...(flags.iterations ? { totalIterations: Number(flags.iterations) } : {}),
          ...(flags.base ? { base: flags.base } : {}),
          ...(flags.runStartedAt ? { runStartedAt: flags.runStartedAt } : {}),
          ...(flags.attestation ? { attestation: flags.attestation } : {}),
          dryRun: Boolean(flags.dryRun),
          logger: c.logger,
          progress: (line) => c.stderr(line),
          signal,
        }),
      );
      const ev = result.evidence;
      if (flags.json) c.stdout(JSON.stringify(ev, null, 2));
      else
        c.stdout(
          `${phase}: ${ev.verdict ?? 'pending'}${ev.verdictReasons[0] ? ` — ${ev.verdictReasons[0]}` : ''}\nbundle: ${result.bundleDir}${
            result.attestation?.verified ? `\nattestation: ${JSON.stringify(result.attestation)}` : ''
          }`,
        );
      done(ev.verdict === 'error' ? ExitCode.infra : 0);
    });
}
