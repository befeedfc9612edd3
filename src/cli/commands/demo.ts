/**
 * `hillclimb demo`: the whole loop on this machine with no cloud — local compute (JAX on CPU), the
 * replay agent over examples/replay/gdn, the local forge and store — on a scratch clone, so this
 * checkout never changes. Leaves PR records, comments, log entries and history on disk and says where.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { listReplayPatches, replaySlots } from '../../agent/index.js';
import { SANDBOX_HINT, sandboxAvailability } from '../../exec/index.js';
import { formatPullList, listLocalPulls } from '../../forge/index.js';
import { newRunId, runLoop } from '../../loop/index.js';
import { venvPython } from '../../project/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import { Git } from '../../workspace/index.js';
import type { CliContext } from '../context.js';
import { printLoopResult, withInterrupts } from './loop.js';

export function registerDemo(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('demo')
    .description(
      'run the local demo loop: replayed GDN patches, real tests and measurements on CPU, no cloud',
    )
    .option('--dir <dir>', 'where to put the scratch clone (default: .hillclimb/demo/<run-id>)')
    .option('--json', 'print the result as JSON')
    .option(
      '--allow-unsandboxed',
      'where this machine cannot build the sandbox, run the replayed patches and their tests anyway, with your rights (numbers unverified)',
    )
    .action(async (flags: { dir?: string; json?: boolean; allowUnsandboxed?: boolean }) => {
      const c = ctx();
      const sandbox = await sandboxAvailability();
      if (!sandbox.available && !flags.allowUnsandboxed) {
        throw new HillclimbError(
          `this machine cannot build the sandbox the demo's code runs in (${sandbox.reason})`,
          {
            hint:
              `${SANDBOX_HINT}. Or run the demo with --allow-unsandboxed: the patches and tests then run with ` +
              'every right you have (your files, credentials and network), and no iteration can be improved',
            exitCode: ExitCode.failure,
          },
        );
      }
      const python = venvPython(c.root);
      if (!existsSync(python)) {
        throw new HillclimbError(`the project venv is missing (${python})`, {
          hint: 'run: npm run setup   (or npm run demo, which sets it up first)',
          exitCode: ExitCode.failure,
        });
      }
      const replayDir = join(c.root, 'examples', 'replay', 'gdn');
      const patches = listReplayPatches(replayDir);
      if (patches.length === 0) {
        throw new HillclimbError(`no replay patches in ${replayDir}`, { exitCode: ExitCode.badInput });
      }
      const runId = newRunId();
      const dir = flags.dir ?? join(c.root, '.hillclimb', 'demo', runId, 'repo');
      c.stderr(`demo: cloning this repository (HEAD) into ${dir}`);
      const repo = await Git.clone(c.root, dir);
      // The scratch clone has no venv of its own: jobs use this checkout's.
      process.env.HILLCLIMB_PYTHON = python;
      const started = Date.now();
      const result = await withInterrupts((signal) =>
        runLoop({
          configFile: join(repo.root, 'hillclimb.yml'),
          overrides: {
            'loop.iterations': patches.length,
            // The folder's slot files make its first iteration a search among several candidates.
            'loop.candidates': replaySlots(replayDir),
            'agent.kind': 'replay',
            'compute.backend': 'local',
            'forge.kind': 'local',
            'store.kind': 'local',
            ...(flags.allowUnsandboxed ? { 'sandbox.mode': 'allow-unsandboxed' } : {}),
          },
          runId,
          logger: c.logger,
          progress: (line) => c.stderr(`${elapsed(started)} ${line}`),
          signal,
        }),
      );
      printLoopResult(c, result, Boolean(flags.json));
      if (!flags.json) {
        c.stdout(`\nPR records (local forge, ${join(result.stateDir, 'forge')}):`);
        c.stdout(formatPullList(listLocalPulls(result.stateDir)));
        c.stdout(
          [
            '',
            `hill-climb log:  ${join(result.runDir, 'hillclimb-log.md')}`,
            `history:         ${join(result.stateDir, 'history.jsonl')}`,
            `PR branches:     git -C ${repo.root} branch --list 'hillclimb/*'`,
            `inspect:         node bin/hillclimb.js history --root ${repo.root}`,
            `                 node bin/hillclimb.js pr show <number> --root ${repo.root}`,
            `demo took ${elapsed(started)}`,
          ].join('\n'),
        );
      }
      done(result.endReason === 'completed' ? 0 : 1);
    });
}

function elapsed(since: number): string {
  const s = Math.round((Date.now() - since) / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
