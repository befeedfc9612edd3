/**
 * `hillclimb tpu allocate|release|status|janitor`: the TPU lifecycle from the command line (and from
 * workflow steps). allocate holds a TPU for later jobs (the tpu-vm backend attaches to it); release
 * frees what the allocation records say; janitor deletes labelled resources past their TTL.
 */
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import {
  allocateTpu,
  defaultRunId,
  gcloudCli,
  janitorSweep,
  releaseRecorded,
  type TpuContext,
  tpuStateDirFor,
  tpuStatus,
} from '../../compute/index.js';
import { type ConfigOverrides, loadConfig } from '../../config/index.js';
import { CONFIG_FILE } from '../../project/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import type { CliContext } from '../context.js';

interface CommonOptions {
  config?: string;
  dryRun?: boolean;
  json?: boolean;
}

function common(cmd: Command): Command {
  return cmd
    .option('--config <file>', `config file (default: ${CONFIG_FILE} in the project root)`)
    .option('--dry-run', 'print the gcloud commands that would change anything instead of running them')
    .option('--json', 'print the result as JSON');
}

function tpuContext(c: CliContext, opts: CommonOptions, overrides: ConfigOverrides = {}): TpuContext {
  const file = opts.config ? resolve(opts.config) : join(c.root, CONFIG_FILE);
  const config = loadConfig(file, overrides);
  if (!config.compute.tpu_vm) {
    throw new HillclimbError(`${file}: compute.tpu_vm is not configured`, {
      hint: 'add compute.tpu_vm (project, zones, accelerator_type, runtime_version); see docs/compute.md',
      exitCode: ExitCode.badInput,
    });
  }
  // A dry run's commands go to stdout, unless stdout carries JSON.
  const print = opts.json ? c.stderr : c.stdout;
  return {
    config: config.compute.tpu_vm,
    gcloud: gcloudCli({ dryRun: opts.dryRun, print }),
    logger: c.logger,
    stateDir: tpuStateDirFor(config),
  };
}

export function registerTpu(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  const tpu = program
    .command('tpu')
    .description('allocate, hold, release and sweep Cloud TPU VMs (compute.tpu_vm in hillclimb.yml)');

  common(tpu.command('allocate'))
    .description('allocate a TPU VM (zone fallback, TTL labels, setup_command) and hold it for later jobs')
    .option('--run-id <id>', 'names the resources (default: HILLCLIMB_RUN_ID, else GitHub run id + attempt)')
    .option('--zone <zones...>', 'zones to try, in order (overrides compute.tpu_vm.zones)')
    .option('--accelerator-type <type>', 'e.g. v5p-8 (overrides compute.tpu_vm.accelerator_type)')
    .option('--no-setup', 'skip compute.tpu_vm.setup_command')
    .action(
      async (
        opts: CommonOptions & { runId?: string; zone?: string[]; acceleratorType?: string; setup: boolean },
      ) => {
        const c = ctx();
        const overrides: ConfigOverrides = {};
        if (opts.zone) overrides['compute.tpu_vm.zones'] = opts.zone;
        if (opts.acceleratorType) overrides['compute.tpu_vm.accelerator_type'] = opts.acceleratorType;
        const t = tpuContext(c, opts, overrides);
        const alloc = await allocateTpu(t, {
          runId: opts.runId ?? defaultRunId(),
          owner: 'cli',
          setup: opts.setup,
        });
        if (opts.json) c.stdout(JSON.stringify(alloc, null, 2));
        else c.stdout(`name=${alloc.name}\nzone=${alloc.zone}\n`);
        done(0);
      },
    );

  common(tpu.command('release'))
    .description('release the TPUs recorded by allocate (or a named one); already-deleted counts as released')
    .option(
      '--name <name>',
      'release this resource only (looked up in every configured zone if not recorded)',
    )
    .action(async (opts: CommonOptions & { name?: string }) => {
      const c = ctx();
      const reports = await releaseRecorded(tpuContext(c, opts), { name: opts.name });
      if (opts.json) c.stdout(JSON.stringify(reports, null, 2));
      else if (reports.length === 0) c.stdout('nothing recorded to release');
      else
        c.stdout(
          reports.map((r) => `${r.name} ${r.zone} ${r.outcome}${r.error ? `: ${r.error}` : ''}`).join('\n'),
        );
      const failed = reports.filter((r) => r.outcome === 'failed' || r.outcome === 'not-found');
      done(failed.length > 0 ? ExitCode.infra : 0);
    });

  common(tpu.command('status'))
    .description('describe the recorded TPUs (or a named one)')
    .option('--name <name>', 'describe this resource, in every configured zone')
    .action(async (opts: CommonOptions & { name?: string }) => {
      const c = ctx();
      const statuses = await tpuStatus(tpuContext(c, opts), { name: opts.name });
      if (opts.json) c.stdout(JSON.stringify(statuses, null, 2));
      else if (statuses.length === 0)
        c.stdout(opts.name ? `${opts.name}: not found` : 'no TPU allocations recorded');
      else {
        c.stdout(
          statuses
            .map((s) =>
              [
                s.name,
                s.zone,
                s.state,
                s.health ?? '',
                s.record ? `expires ${new Date(s.record.expiresAt * 1000).toISOString()}` : '',
              ]
                .filter(Boolean)
                .join(' '),
            )
            .join('\n'),
        );
      }
      done(0);
    });

  common(tpu.command('janitor'))
    .description('delete TPU resources labelled hillclimb=1 whose hillclimb-expires label is in the past')
    .option('--zone <zones...>', 'zones to sweep (default: compute.tpu_vm.zones)')
    .action(async (opts: CommonOptions & { zone?: string[] }) => {
      const c = ctx();
      const report = await janitorSweep(tpuContext(c, opts), { zones: opts.zone });
      if (opts.json) c.stdout(JSON.stringify(report, null, 2));
      else {
        const lines = [
          ...report.deleted.map(
            (d) => `${d.outcome} ${d.kind} ${d.name} ${d.zone} (${d.reason})${d.error ? `: ${d.error}` : ''}`,
          ),
          ...report.kept.map((k) => `kept ${k.kind} ${k.name} ${k.zone} (${k.reason})`),
          ...report.errors.map((e) => `error ${e}`),
        ];
        c.stdout(lines.length > 0 ? lines.join('\n') : 'no hillclimb TPU resources found');
      }
      const failed = report.errors.length > 0 || report.deleted.some((d) => d.outcome === 'failed');
      done(failed ? ExitCode.infra : 0);
    });
}
