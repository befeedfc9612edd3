/**
 * The one way hillclimb spawns processes, on top of execa. Nothing else imports `node:child_process`
 * or execa.
 *
 * - Commands are argument arrays, never shell strings.
 * - Wall-clock and idle-output timeouts kill the whole process group (SIGTERM, then SIGKILL).
 * - Output can be teed to a log file; secrets are redacted everywhere output goes.
 * - Failures name the command, the exit code and the log file.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { execa } from 'execa';
import { ExitCode, HillclimbError, redact } from '../util/index.js';
import { ledgerEnded, ledgerStarted } from './ledger.js';

export interface ExecOptions {
  /** Working directory. Default: the current directory. */
  cwd?: string;
  /** Variables set on top of the inherited environment (or on an empty one, see `inheritEnv`). */
  env?: Record<string, string | undefined>;
  /** Start from `process.env`. Default true. Set false to hand a child only what `env` names. */
  inheritEnv?: boolean;
  /** Kill the process after this many ms. Default: no limit. */
  timeoutMs?: number;
  /** Kill the process when it prints nothing for this many ms. Default: no limit. */
  idleTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when killing. Default 5000 ms. */
  killGraceMs?: number;
  /** Exit codes that count as success; `'any'` never throws for an exit code. Default [0]. */
  allowedExitCodes?: readonly number[] | 'any';
  /** Write stdout and stderr, interleaved as they arrive, to this file (created with its folder). */
  logFile?: string;
  /** Strings replaced by `***` in the log file, the returned output and error messages. */
  redact?: readonly string[];
  /** Written to the child's stdin, which is then closed. Default: stdin is closed at once. */
  input?: string | Buffer;
  /** Called with each complete output line (redacted), e.g. for progress display. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Keep at most this many characters of each stream in memory (the tail). Default 8 MiB. */
  maxBufferChars?: number;
  /** Cancels the run; the process group is killed as on a timeout. */
  signal?: AbortSignal;
}

export interface ExecResult {
  command: string;
  args: readonly string[];
  /** Exit code, or null when the process was killed by a signal. */
  exitCode: number | null;
  /** The signal that ended the process, if any. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** Why hillclimb killed the process, if it did. */
  killedBy: 'timeout' | 'idle-timeout' | 'abort' | undefined;
  logFile: string | undefined;
}

/** A command failed: it exited with a code that was not allowed, timed out, or could not start. */
export class ExecError extends HillclimbError {
  override name = 'ExecError';
  readonly result: ExecResult | undefined;
  readonly commandLine: string;

  constructor(message: string, commandLine: string, result?: ExecResult, hint?: string) {
    super(message, { hint, exitCode: ExitCode.infra });
    this.commandLine = commandLine;
    this.result = result;
  }
}

const DEFAULT_MAX_BUFFER_CHARS = 8 * 1024 * 1024;
const DEFAULT_KILL_GRACE_MS = 5000;
/** After `exit`, how long to wait for stdio to close (a grandchild may keep the pipes open). */
const STDIO_DRAIN_MS = 2000;

/** Quote an argument array for display only (logs, errors). Never executed by a shell. */
export function displayCommand(command: string, args: readonly string[]): string {
  return [command, ...args]
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`))
    .join(' ');
}

/** Run a command to completion. Throws ExecError unless the exit code is allowed. */
export async function run(
  command: string,
  args: readonly string[],
  opts: ExecOptions = {},
): Promise<ExecResult> {
  const secrets = opts.redact ?? [];
  const shown = redact(displayCommand(command, args), secrets);
  const result = await spawnAndCollect(command, args, opts, shown);
  const allowed = opts.allowedExitCodes ?? [0];
  const logNote = result.logFile ? ` (log: ${result.logFile})` : '';
  if (result.killedBy === 'timeout') {
    throw new ExecError(`${shown}: timed out after ${opts.timeoutMs} ms${logNote}`, shown, result);
  }
  if (result.killedBy === 'idle-timeout') {
    throw new ExecError(`${shown}: no output for ${opts.idleTimeoutMs} ms, killed${logNote}`, shown, result);
  }
  if (result.killedBy === 'abort') {
    throw new ExecError(`${shown}: cancelled${logNote}`, shown, result);
  }
  if (result.exitCode === null) {
    throw new ExecError(`${shown}: killed by ${result.signal}${logNote}`, shown, result);
  }
  if (allowed !== 'any' && !allowed.includes(result.exitCode)) {
    const tail = lastLines(result.stderr || result.stdout, 5);
    throw new ExecError(
      `${shown}: exit code ${result.exitCode}${logNote}${tail ? `\n${indent(tail)}` : ''}`,
      shown,
      result,
    );
  }
  return result;
}

function spawnAndCollect(
  command: string,
  args: readonly string[],
  opts: ExecOptions,
  shown: string,
): Promise<ExecResult> {
  const secrets = opts.redact ?? [];
  const maxChars = opts.maxBufferChars ?? DEFAULT_MAX_BUFFER_CHARS;
  const started = Date.now();

  let log: WriteStream | undefined;
  if (opts.logFile) {
    mkdirSync(dirname(opts.logFile), { recursive: true });
    log = createWriteStream(opts.logFile, { flags: 'a' });
  }

  return new Promise<ExecResult>((resolve, reject) => {
    // execa starts the child and settles once it has exited and its pipes are closed. Output is not
    // buffered by execa (our collector keeps a redacted tail and tees lines); kills are ours too,
    // because execa signals only the child's pid and we must reach the whole process group.
    const child = execa(command, [...args], {
      cwd: opts.cwd,
      env: buildEnv(opts),
      extendEnv: false,
      // detached: the child leads its own process group, so a kill reaches its children too.
      detached: process.platform !== 'win32',
      ...(opts.input === undefined ? { stdin: 'ignore' as const } : { input: opts.input }),
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      stripFinalNewline: false,
      windowsHide: true,
      // Never execa's own logging: NODE_DEBUG=execa would turn it on and print argv and output
      // unredacted. Our collector is the only place output goes.
      verbose: 'none',
    });

    // Kept where an open loop can find it again if this process is killed (ledger.ts).
    if (child.pid !== undefined) ledgerStarted(child.pid, shown);
    const out = new StreamCollector('stdout', maxChars, secrets, log, opts.onLine);
    const err = new StreamCollector('stderr', maxChars, secrets, log, opts.onLine);
    let killedBy: ExecResult['killedBy'];
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    let exited = false;
    let signalled = false;
    const killGroup = (reason: NonNullable<ExecResult['killedBy']>): void => {
      if (signalled || child.pid === undefined) return;
      signalled = true;
      // A process that has exited ended on its own: its exit code says how, even when its pipes close
      // late (a loaded machine, a grandchild holding them) and a timer fires meanwhile. What it left
      // running is still stopped.
      if (!exited) killedBy = reason;
      signalGroup(child.pid, 'SIGTERM');
      const grace = setTimeout(
        () => signalGroup(child.pid!, 'SIGKILL'),
        opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
      );
      grace.unref();
      timers.push(grace);
    };

    if (opts.timeoutMs !== undefined) timers.push(setTimeout(() => killGroup('timeout'), opts.timeoutMs));
    let idleTimer: NodeJS.Timeout | undefined;
    const armIdle = (): void => {
      if (opts.idleTimeoutMs === undefined) return;
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = setTimeout(() => killGroup('idle-timeout'), opts.idleTimeoutMs);
    };
    armIdle();
    const onAbort = (): void => killGroup('abort');
    if (opts.signal) {
      if (opts.signal.aborted) onAbort();
      else opts.signal.addEventListener('abort', onAbort, { once: true });
    }

    child.stdout?.on('data', (chunk: Buffer) => {
      armIdle();
      out.push(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      armIdle();
      err.push(chunk);
    });

    const stopTimers = (): void => {
      for (const t of timers) clearTimeout(t);
      if (idleTimer) clearTimeout(idleTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };

    const finish = (): void => {
      if (settled) return;
      settled = true;
      stopTimers();
      if (child.pid !== undefined) ledgerEnded(child.pid);
      out.flush();
      err.flush();
      const result: ExecResult = {
        command,
        args,
        exitCode,
        signal: exitSignal,
        stdout: out.text(),
        stderr: err.text(),
        durationMs: Date.now() - started,
        killedBy,
        logFile: opts.logFile,
      };
      if (log) log.end(() => resolve(result));
      else resolve(result);
    };

    const failToStart = (code: string | undefined, message: string): void => {
      if (settled) return;
      settled = true;
      stopTimers();
      if (child.pid !== undefined) ledgerEnded(child.pid);
      log?.end();
      if (code === 'ENOENT') {
        reject(
          new ExecError(
            `${shown}: command not found: ${command}`,
            shown,
            undefined,
            `install ${command} or put it on PATH (hillclimb doctor lists what is missing)`,
          ),
        );
      } else {
        // execa's messages can quote the whole command line: redact them like everything else.
        reject(new ExecError(`${shown}: could not start: ${redact(message, secrets)}`, shown));
      }
    };

    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      exited = true;
      // stdio normally closes right after exit; if a grandchild holds it open, stop waiting (and stop
      // reading, so execa settles too).
      const drain = setTimeout(() => {
        finish();
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STDIO_DRAIN_MS);
      drain.unref();
      timers.push(drain);
    });

    child.then(
      (r) => {
        // No exit code and no signal: the process never ran (execa reports the spawn error's code).
        if (r.exitCode === undefined && r.signal === undefined && r.failed) {
          const cause = r.cause as NodeJS.ErrnoException | undefined;
          failToStart(r.code ?? cause?.code, cause?.message ?? r.shortMessage ?? 'unknown error');
          return;
        }
        finish();
      },
      (e: unknown) => failToStart(undefined, e instanceof Error ? e.message : String(e)),
    );
  });
}

function buildEnv(opts: ExecOptions): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = opts.inheritEnv === false ? {} : { ...process.env };
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  // A child must find basic tools even with a scrubbed environment.
  if (base.PATH === undefined && process.env.PATH !== undefined) base.PATH = process.env.PATH;
  return base;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // Already gone.
  }
}

/** Decodes a byte stream (multibyte characters may straddle chunks), keeps a bounded tail, splits lines. */
class StreamCollector {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private partialLine = '';

  constructor(
    private readonly stream: 'stdout' | 'stderr',
    private readonly maxChars: number,
    private readonly secrets: readonly string[],
    private readonly log: WriteStream | undefined,
    private readonly onLine: ExecOptions['onLine'],
  ) {}

  push(chunk: Buffer): void {
    this.append(this.decoder.write(chunk));
  }

  flush(): void {
    this.append(this.decoder.end());
    if (this.partialLine !== '') {
      this.emitLine(this.partialLine);
      this.partialLine = '';
    }
  }

  text(): string {
    return redact(this.buffer, this.secrets);
  }

  private append(text: string): void {
    if (text === '') return;
    this.buffer += text;
    if (this.buffer.length > this.maxChars)
      this.buffer = this.buffer.slice(this.buffer.length - this.maxChars);
    // Lines are the unit of redaction for the log, so a secret split across chunks is still caught.
    const lines = (this.partialLine + text).split('\n');
    this.partialLine = lines.pop() ?? '';
    for (const line of lines) this.emitLine(line);
  }

  private emitLine(line: string): void {
    const clean = redact(line, this.secrets);
    this.log?.write(`${clean}\n`);
    this.onLine?.(clean, this.stream);
  }
}

function lastLines(text: string, n: number): string {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
