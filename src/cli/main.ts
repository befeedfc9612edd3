/**
 * The `hillclimb` command line. Each verb lives in `commands/<verb>.ts` and registers itself here.
 * User errors print a message and a hint, never a stack.
 */
import { Command, CommanderError } from 'commander';
import { packageVersion } from '../project/index.js';
import { registerCheck } from './commands/check.js';
import { registerDemo } from './commands/demo.js';
import { registerDoctor } from './commands/doctor.js';
import { registerHarness } from './commands/harness.js';
import { registerHistory } from './commands/history.js';
import { registerInit } from './commands/init.js';
import { registerIterate } from './commands/iterate.js';
import { registerLog } from './commands/log.js';
import { registerLoop } from './commands/loop.js';
import { registerSetup } from './commands/setup.js';
import { registerTpu } from './commands/tpu.js';
import { registerTrace } from './commands/trace.js';
import { type CliIO, contextFor, processIO, reportError } from './context.js';

export function buildProgram(io: CliIO, done: (code: number) => void): Command {
  const program = new Command('hillclimb')
    .description(
      'CI-native agent loop that hill-climbs accelerator kernels: the harness measures, the agent proposes',
    )
    .version(packageVersion(), '-V, --version')
    .option('--root <dir>', 'project root (default: nearest folder with hillclimb.yml)')
    .showHelpAfterError('(run hillclimb --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .exitOverride();
  const ctx = () => contextFor(program, io);
  registerInit(program, ctx, done);
  registerSetup(program, ctx, done);
  registerDoctor(program, ctx, done);
  registerCheck(program, ctx, done);
  registerTpu(program, ctx, done);
  registerTrace(program, ctx, done);
  registerLog(program, ctx, done);
  registerLoop(program, ctx, done);
  registerIterate(program, ctx, done);
  registerDemo(program, ctx, done);
  registerHistory(program, ctx, done);
  registerHarness(program, ctx, done);
  return program;
}

/** Run the CLI with `argv` (without node and script) and resolve to the exit code. */
export async function main(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    return reportError(err, io);
  }
}
