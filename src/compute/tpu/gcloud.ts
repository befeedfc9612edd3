/**
 * Running gcloud. Everything TPU goes through a `Gcloud`: argument arrays through the exec funnel, never
 * a shell. In dry-run mode, commands that change anything (create, delete, ssh, scp) are printed
 * instead of run; read-only ones (describe, list) still run, so a dry run shows real decisions.
 */
import { displayCommand, ExecError, run } from '../../exec/index.js';
import { ExitCode, HillclimbError, secretsFromEnv } from '../../util/index.js';

export interface GcloudResult {
  args: readonly string[];
  /** null when the process was killed. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  killedBy?: 'timeout' | 'idle-timeout' | 'abort';
  /** True when the command was only printed (dry run). */
  printed?: boolean;
}

export interface GcloudRunOptions {
  /** describe/list: safe to run even in a dry run. */
  readOnly?: boolean;
  timeoutMs?: number;
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  /** Tee the command's output to this file. */
  logFile?: string;
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
}

export interface Gcloud {
  readonly dryRun: boolean;
  /** Run gcloud with these arguments. Resolves whatever the exit code; throws only when gcloud cannot start. */
  run(args: readonly string[], opts?: GcloudRunOptions): Promise<GcloudResult>;
}

export interface GcloudCliOptions {
  /** The gcloud executable. Default "gcloud" (found on PATH). */
  binary?: string;
  dryRun?: boolean;
  /** Where a dry run prints the commands it does not run. */
  print?: (line: string) => void;
}

const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/** The real gcloud CLI through src/exec. */
export function gcloudCli(opts: GcloudCliOptions = {}): Gcloud {
  const binary = opts.binary ?? 'gcloud';
  const dryRun = Boolean(opts.dryRun);
  return {
    dryRun,
    async run(args, runOpts = {}) {
      if (dryRun && !runOpts.readOnly) {
        opts.print?.(`$ ${displayCommand(binary, args)}`);
        return { args, exitCode: 0, stdout: '', stderr: '', printed: true };
      }
      try {
        const r = await run(binary, args, {
          // Never wait for an interactive prompt (key generation, confirmations).
          env: { CLOUDSDK_CORE_DISABLE_PROMPTS: '1' },
          allowedExitCodes: 'any',
          timeoutMs: runOpts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          idleTimeoutMs: runOpts.idleTimeoutMs,
          signal: runOpts.signal,
          logFile: runOpts.logFile,
          onLine: runOpts.onLine,
          redact: secretsFromEnv(),
        });
        return { args, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
      } catch (e) {
        if (e instanceof ExecError && e.result) {
          const r = e.result;
          return { args, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, killedBy: r.killedBy };
        }
        throw new HillclimbError(`cannot run ${binary}: ${(e as Error).message}`, {
          hint: 'install the Google Cloud SDK (https://cloud.google.com/sdk/docs/install); in Actions use google-github-actions/setup-gcloud',
          exitCode: ExitCode.infra,
          cause: e,
        });
      }
    },
  };
}

/** The error text of a failed gcloud call, on one line, for messages. */
export function gcloudError(r: GcloudResult, maxChars = 400): string {
  if (r.killedBy) return `gcloud ${r.killedBy}`;
  const lines = (r.stderr || r.stdout)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^(Using ssh batch size|Waiting for|Create request issued)/.test(l));
  const errorLines = lines.filter((l) => /^ERROR|error/i.test(l));
  const text = (errorLines.length > 0 ? errorLines : lines).slice(-3).join(' ');
  return (text || `exit code ${r.exitCode}`).slice(0, maxChars);
}

const text = (r: GcloudResult): string => `${r.stderr}\n${r.stdout}`;

/** The resource is not there (deleted already, never created). */
export function isNotFound(r: GcloudResult): boolean {
  return /NOT_FOUND|\b404\b|was not found|could not be found|does not exist/i.test(text(r));
}

export function isAlreadyExists(r: GcloudResult): boolean {
  return /ALREADY_EXISTS|already exists|\b409\b/i.test(text(r));
}

/** Capacity or quota: worth trying another zone or later. */
export function isCapacityError(r: GcloudResult): boolean {
  return /RESOURCE_EXHAUSTED|ZONE_RESOURCE_POOL_EXHAUSTED|capacity|stockout|quota|insufficient|\bUNAVAILABLE\b|\b429\b|\b503\b/i.test(
    text(r),
  );
}

/** Credentials or permissions: no zone will do better, stop at once. */
export function isFatalError(r: GcloudResult): boolean {
  if (isCapacityError(r)) return false;
  return /PERMISSION_DENIED|UNAUTHENTICATED|\b401\b|\b403\b|gcloud auth login|reauthenticat|does not have permission|billing (account|is disabled)|SERVICE_DISABLED|has not been used in project/i.test(
    text(r),
  );
}
