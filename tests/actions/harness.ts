/**
 * Runs an action's committed bundle the way the runner does: `node actions/<name>/dist/index.js` (or
 * post.js) in a child process, inputs as INPUT_<NAME> with action.yml's defaults filled in, state as
 * STATE_<name>, and fresh GITHUB_OUTPUT / GITHUB_STATE / GITHUB_STEP_SUMMARY / GITHUB_ENV files whose
 * contents are parsed from the runner's delimiter format (and checked to be in it). Passing an input
 * the action does not declare, or an action setting an output it does not declare, fails the test.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../helpers/paths.js';

export const ACTIONS = ['setup', 'iterate', 'kernel-test', 'profile', 'trace-diff', 'report', 'tpu'] as const;
export type ActionName = (typeof ACTIONS)[number];

export interface ActionMetadata {
  name: string;
  description: string;
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string }>;
  runs: { using: string; main: string; post?: string; 'post-if'?: string };
}

export function actionMetadata(action: string): ActionMetadata {
  return parse(readFileSync(join(REPO_ROOT, 'actions', action, 'action.yml'), 'utf8')) as ActionMetadata;
}

export interface ActionRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Outputs from GITHUB_OUTPUT. */
  outputs: Record<string, string>;
  /** Saved state from GITHUB_STATE (what the runner hands to the post step as STATE_*). */
  state: Record<string, string>;
  /** The job summary (GITHUB_STEP_SUMMARY). */
  summary: string;
  /** Raw file contents, for format assertions. */
  files: { output: string; state: string };
  /** `::error::` annotations, unescaped. */
  errors: string[];
  /** Values passed to `::add-mask::`. */
  masked: string[];
}

export interface RunOptions {
  cwd: string;
  inputs?: Record<string, string>;
  /** Extra environment (HILLCLIMB_PYTHON, tokens, fake gcloud). */
  env?: Record<string, string | undefined>;
  /** The post step instead of the main entry. */
  post?: boolean;
  /** STATE_* for a post step: the main step's saved state. */
  state?: Record<string, string>;
  timeoutMs?: number;
}

/** Parse a file written with the runner's `name<<delimiter` protocol; throws on anything else. */
export function parseFileCommands(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line === '' && i === lines.length - 1) break;
    const m = /^([^<\n]+)<<(ghadelimiter_[0-9a-f-]{36})$/.exec(line);
    if (!m) throw new Error(`not a file command at line ${i + 1}: ${JSON.stringify(line)}`);
    const end = lines.indexOf(m[2]!, i + 1);
    if (end === -1) throw new Error(`unterminated value for ${m[1]}`);
    out[m[1]!] = lines.slice(i + 1, end).join('\n');
    i = end + 1;
  }
  return out;
}

function unescapeData(s: string): string {
  return s.replaceAll('%0A', '\n').replaceAll('%0D', '\r').replaceAll('%25', '%');
}

export async function runActionBundle(action: ActionName, opts: RunOptions): Promise<ActionRun> {
  const meta = actionMetadata(action);
  const entry = opts.post ? meta.runs.post : meta.runs.main;
  if (!entry) throw new Error(`${action} has no ${opts.post ? 'post' : 'main'} entry`);
  const files = mkdtempSync(join(tmpdir(), 'hc-action-files-'));
  const path = (n: string) => join(files, n);
  for (const n of ['output', 'state', 'summary', 'env', 'path']) writeFileSync(path(n), '');

  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? files,
    LANG: 'C.UTF-8',
    GITHUB_ACTIONS: 'true',
    RUNNER_TEMP: files,
    GITHUB_OUTPUT: path('output'),
    GITHUB_STATE: path('state'),
    GITHUB_STEP_SUMMARY: path('summary'),
    GITHUB_ENV: path('env'),
    GITHUB_PATH: path('path'),
  };
  for (const [name, spec] of Object.entries(meta.inputs ?? {})) {
    if (spec.default !== undefined) env[`INPUT_${name.toUpperCase()}`] = String(spec.default);
  }
  for (const [name, value] of Object.entries(opts.inputs ?? {})) {
    if (!(name in (meta.inputs ?? {}))) throw new Error(`${action} declares no input ${name}`);
    env[`INPUT_${name.toUpperCase()}`] = value;
  }
  for (const [name, value] of Object.entries(opts.state ?? {})) env[`STATE_${name}`] = value;
  for (const [name, value] of Object.entries(opts.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }

  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'actions', action, entry)],
      { cwd: opts.cwd, env, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
  const raw = { output: readFileSync(path('output'), 'utf8'), state: readFileSync(path('state'), 'utf8') };
  const summary = readFileSync(path('summary'), 'utf8');
  rmSync(files, { recursive: true, force: true });
  const outputs = parseFileCommands(raw.output);
  const undeclared = Object.keys(outputs).filter((k) => !(k in (meta.outputs ?? {})));
  if (undeclared.length > 0) throw new Error(`${action} set undeclared outputs: ${undeclared.join(', ')}`);
  const lines = result.stdout.split('\n');
  return {
    ...result,
    outputs,
    state: parseFileCommands(raw.state),
    summary,
    files: raw,
    errors: lines
      .filter((l) => l.startsWith('::error::'))
      .map((l) => unescapeData(l.slice('::error::'.length))),
    masked: lines.filter((l) => l.startsWith('::add-mask::')).map((l) => l.slice('::add-mask::'.length)),
  };
}
