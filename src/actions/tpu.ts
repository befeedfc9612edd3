/**
 * The tpu action's inputs: which config and overrides (zones, accelerator type), and an allocation
 * handed from the job that allocated the TPU to the job that uses it (the allocate step's
 * `allocation` output, written here as the allocation record the tpu-vm backend attaches to).
 */
import { resolve } from 'node:path';
import {
  gcloudCli,
  type JanitorReport,
  type ReleaseReport,
  type TpuAllocation,
  type TpuContext,
  tpuStateDirFor,
} from '../compute/index.js';
import { type ConfigOverrides, loadConfig } from '../config/index.js';
import { ExitCode, HillclimbError, type Logger } from '../util/index.js';
import { configOverrides, flag, jsonObject, list, optionalText } from './inputs.js';

export interface TpuInputs {
  configFile: string;
  overrides: ConfigOverrides;
  dryRun: boolean;
}

/** Config file, overrides (config-overrides, then zones and accelerator-type) and dry run, from the inputs. */
export function tpuInputs(): TpuInputs {
  const overrides = configOverrides();
  const zones = list('zones');
  const type = optionalText('accelerator-type');
  if (zones) overrides['compute.tpu_vm.zones'] = zones;
  if (type) overrides['compute.tpu_vm.accelerator_type'] = type;
  return {
    configFile: resolve(optionalText('config') ?? 'hillclimb.yml'),
    overrides,
    dryRun: flag('dry-run', false),
  };
}

/** What the lifecycle functions need, from inputs saved by main or read now. */
export function tpuContext(inputs: TpuInputs, logger: Logger): TpuContext {
  const config = loadConfig(inputs.configFile, inputs.overrides);
  if (!config.compute.tpu_vm) {
    throw new HillclimbError(`${config.file}: compute.tpu_vm is not configured`, {
      hint: 'add compute.tpu_vm (project, zones, accelerator_type, runtime_version); see docs/compute.md',
      exitCode: ExitCode.badInput,
    });
  }
  return {
    config: config.compute.tpu_vm,
    gcloud: gcloudCli({ dryRun: inputs.dryRun, print: (line) => logger.info(`dry run: ${line}`) }),
    logger,
    stateDir: tpuStateDirFor(config),
  };
}

const RECORD_FIELDS: Array<[keyof TpuAllocation, 'string' | 'number' | 'boolean']> = [
  ['name', 'string'],
  ['project', 'string'],
  ['zone', 'string'],
  ['acceleratorType', 'string'],
  ['runtimeVersion', 'string'],
  ['provisioning', 'string'],
  ['runId', 'string'],
  ['createdAt', 'string'],
  ['expiresAt', 'number'],
  ['setupDone', 'boolean'],
];

/** The `allocation` input: an allocate step's output, checked field by field. Held for later jobs. */
export function allocationInput(name = 'allocation'): TpuAllocation {
  const raw = jsonObject(name);
  if (!raw)
    throw new HillclimbError(`input ${name}: required in attach mode`, { exitCode: ExitCode.badInput });
  for (const [field, type] of RECORD_FIELDS) {
    if (typeof raw[field] !== type) {
      throw new HillclimbError(`input ${name}: field ${field} must be a ${type}`, {
        exitCode: ExitCode.badInput,
      });
    }
  }
  if (raw.queuedResource !== undefined && typeof raw.queuedResource !== 'string') {
    throw new HillclimbError(`input ${name}: field queuedResource must be a string`, {
      exitCode: ExitCode.badInput,
    });
  }
  // Names become gcloud arguments and record file names: GCP's own alphabet only.
  for (const field of ['name', 'zone', 'queuedResource'] as const) {
    const value = raw[field];
    if (value !== undefined && !/^[a-z][a-z0-9-]{0,62}$/.test(String(value))) {
      throw new HillclimbError(
        `input ${name}: field ${field} is not a GCP resource name: ${JSON.stringify(value)}`,
        {
          exitCode: ExitCode.badInput,
        },
      );
    }
  }
  return { ...(raw as unknown as TpuAllocation), owner: 'cli', state: 'active' };
}

/** What a tpu step reports: its outputs, its job summary, and the failure to raise after both are written. */
export interface TpuStepReport {
  outputs: Record<string, string | number | undefined>;
  summary: string;
  failure?: HillclimbError;
}

export function allocationReport(a: TpuAllocation): TpuStepReport {
  const expiresAt = new Date(a.expiresAt * 1000).toISOString();
  return {
    outputs: {
      name: a.name,
      zone: a.zone,
      'queued-resource': a.queuedResource,
      'expires-at': expiresAt,
      allocation: JSON.stringify(a),
    },
    summary: `## hillclimb TPU\n\n${a.acceleratorType} \`${a.name}\` in ${a.zone} (${a.provisioning}), expires ${expiresAt}\n`,
  };
}

export function releaseReport(reports: ReleaseReport[]): TpuStepReport {
  const failed = reports.filter((r) => r.outcome === 'failed');
  const rows = reports.map(
    (r) => `| \`${r.name}\` | ${r.zone} | ${r.outcome}${r.error ? `: ${r.error}` : ''} |`,
  );
  return {
    outputs: {
      released: JSON.stringify(reports),
      count: reports.filter((r) => r.outcome === 'deleted').length,
    },
    summary:
      rows.length > 0
        ? `## hillclimb TPU release\n\n| name | zone | outcome |\n|---|---|---|\n${rows.join('\n')}\n`
        : '## hillclimb TPU release\n\nNothing recorded on this runner and no name given: nothing to release.\n',
    ...(failed.length > 0
      ? {
          failure: new HillclimbError(
            `could not release ${failed.map((r) => `${r.name} in ${r.zone}: ${r.error}`).join('; ')}`,
            {
              hint: 'the janitor deletes it once its TTL passes; or delete it with gcloud',
              exitCode: ExitCode.infra,
            },
          ),
        }
      : {}),
  };
}

export function janitorReport(report: JanitorReport): TpuStepReport {
  const rows = [
    ...report.deleted.map(
      (d) =>
        `| ${d.outcome} | ${d.kind} | \`${d.name}\` | ${d.zone} | ${d.reason}${d.error ? `: ${d.error}` : ''} |`,
    ),
    ...report.kept.map((k) => `| kept | ${k.kind} | \`${k.name}\` | ${k.zone} | ${k.reason} |`),
  ];
  const table =
    rows.length > 0
      ? `| outcome | kind | name | zone | why |\n|---|---|---|---|---|\n${rows.join('\n')}`
      : 'No hillclimb TPU resources found.';
  const problems = [
    ...report.errors,
    ...report.deleted.filter((d) => d.error).map((d) => `${d.name}: ${d.error}`),
  ];
  return {
    outputs: {
      deleted: report.deleted.filter((d) => d.outcome === 'deleted').length,
      report: JSON.stringify(report),
    },
    summary: `## hillclimb TPU janitor\n\n${table}\n${report.errors.map((e) => `\n> error: ${e}`).join('')}\n`,
    ...(problems.length > 0
      ? { failure: new HillclimbError(`janitor: ${problems.join('; ')}`, { exitCode: ExitCode.infra }) }
      : {}),
  };
}
