/**
 * The champion's programs: a champion is timed by the programs it won with (docs/security.md, "The
 * measurement").
 *
 * When a candidate is promoted, the programs the verifier measured are kept under a key naming the
 * code (the champion's files, less the hill-climb log the harness adds on top: codeIdentity), the
 * platform, the target and its programs module, and the JAX and hillclimb-bench versions the bytes
 * depend on: in the state's cache (`cache/programs/<key>`), in the store (`programs/<target>/<tree>/
 * <key>/`, with a `kept.json` record of their hashes) and, by hash, in the champion's history row. A
 * later measurement takes them from the state, else the store; in CI, where the measuring job holds no
 * token, the job that may read the store fetches them and hands them over as an artifact whose digest
 * is a job output, and the records as another (fetchKeptPrograms, importKeptPrograms, installRecords).
 *
 * Only where none of that has them is the champion exported again — arm-blind (./programs.ts) — and
 * then it fails closed wherever a record says what this code won with: the same JAX, and the new export
 * must have the recorded hashes (else ChampionFailure); another JAX, and the export is
 * `exported-unverified`, against which no candidate can be `improved` (decide.ts makes it needs-human).
 * Hiding the arm from an export is best effort (a shared machine has side channels: docs/security.md);
 * the records are what holds.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { TargetConfig } from '../../config/index.js';
import type { HistoryRow, IterationEvidence, KeptPrograms } from '../../evidence/index.js';
import type { Store } from '../../store/index.js';
import {
  appendLineDurable,
  errorMessage,
  type HillclimbError,
  type Logger,
  readJsonLines,
  sha256File,
  writeFileAtomic,
  writeJsonAtomic,
} from '../../util/index.js';
import { type Git, matchAny } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { readHistory } from '../state/history.js';
import { ChampionFailure, InfraFailure, isExportMistake, isProgramError } from './failures.js';
import {
  copyProgramFiles,
  type DrawHolder,
  exportPrograms,
  onceAtATime,
  type Platform,
  type RequestPlan,
} from './programs.js';

/** Where the champion's programs came from: kept (state or store) or exported now (checked or not). */
export type ChampionSource = 'kept' | 'stored' | 'exported-checked' | 'exported-unverified' | 'exported';
const SOURCES: readonly ChampionSource[] = [
  'kept',
  'stored',
  'exported-checked',
  'exported-unverified',
  'exported',
];

/** The record of kept programs stored beside them (their hashes as measured, the JAX they need). */
const RECORD = 'kept.json';
/** Files of a kept folder that travel: the record, the manifest and the programs. */
const KEPT_FILE = /^(kept\.json|manifest\.json|[A-Za-z0-9._=@-]+\.jaxexport)$/;

interface Kept {
  key: string;
  tree: string;
  code: string;
  /** The state's cache folder of these programs. */
  dir: string;
  storePrefix: string;
}

/** The store's folder of the programs kept for a tree: one key per platform and JAX version under it. */
export function keptTreePrefix(target: string, tree: string): string {
  return `programs/${target}/${tree}`;
}

/** The state's folder of the kept-programs cache. */
function cacheRoot(stateDir: string): string {
  return join(stateDir, 'cache', 'programs');
}

/**
 * What names a commit's code for kept programs: `tree`, its files less the hill-climb log (the one file
 * the harness writes on top of a winner), and `code`, its files under the target's editable and
 * protected paths (what a later commit that changed only other files still shares with it).
 */
export async function codeIdentity(
  git: Git,
  target: TargetConfig,
  logFile: string,
  commit: string,
): Promise<{ tree: string; code: string }> {
  const files = await git.listFiles(commit);
  const hash = (list: typeof files) =>
    createHash('sha256')
      .update(list.map((f) => `${f.path} ${f.blob}\n`).join(''))
      .digest('hex');
  const paths = [...target.editable, ...target.protected];
  return {
    tree: hash(files.filter((f) => f.path !== logFile)),
    code: hash(files.filter((f) => matchAny(paths, f.path))),
  };
}

/** The versions a program's bytes depend on: JAX, jaxlib and the bench that exports them. */
const BYTES_VERSIONS = ['jax', 'jaxlib', 'hillclimb-bench'] as const;

function sameBytesVersions(a: Record<string, string>, b: Record<string, string>): boolean {
  return BYTES_VERSIONS.every((k) => (a[k] ?? '') === (b[k] ?? ''));
}

/** The cache folder and store prefix of kept programs, from what names them. */
function keptPlace(
  stateDir: string,
  target: TargetConfig,
  o: { tree: string; platform: string; versions: Record<string, string> },
): { key: string; dir: string; storePrefix: string } {
  const p = target.programs;
  const key = createHash('sha256')
    .update(
      JSON.stringify([
        target.name,
        p.module,
        p.args,
        o.platform,
        ...BYTES_VERSIONS.map((k) => o.versions[k] ?? ''),
        o.tree,
      ]),
    )
    .digest('hex')
    .slice(0, 24);
  return {
    key,
    dir: join(cacheRoot(stateDir), key),
    storePrefix: `${keptTreePrefix(target.name, o.tree)}/${key}`,
  };
}

async function keptKey(
  ctx: LoopContext,
  commit: string,
  platform: Platform,
  versions: Record<string, string>,
): Promise<Kept> {
  const id = await codeIdentity(ctx.git, ctx.target, ctx.config.paths.log_file, commit);
  return { ...id, ...keptPlace(ctx.stateDir, ctx.target, { tree: id.tree, platform, versions }) };
}

/** sha256 of each timed program file in an export folder (the files the verifier would read). */
function programHashes(dir: string, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const file = join(dir, `${key.replace(/[^A-Za-z0-9._=-]+/g, '_')}.jaxexport`);
    if (existsSync(file)) out[key] = sha256File(file);
  }
  return out;
}

/**
 * How a champion's failed export fails the step: a failure of the program's own making (a traceback
 * of one, or a refusal the export prints itself, such as a kernel package not on sys.path) is the
 * target module's and stops the run unretried (ChampionFailure); anything else is the machine's.
 */
export function championExportFailure(ctx: LoopContext, message: string, log: string): HillclimbError {
  const text = readText(log);
  if (isProgramError(text) || isExportMistake(text)) {
    return new ChampionFailure(message, {
      hint:
        `the target module (targets.${ctx.target.name}.programs.module: ${ctx.target.programs.module}) ` +
        `fails without any candidate; fix it, commit, and run again (the whole log: ${log})`,
    });
  }
  return new InfraFailure(message, { hint: `check the machine; the export's log: ${log}` });
}

/** A log's or a note's text, or '' when there is none. */
function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * A new champion is timed from now on by the programs its iteration verified and measured (`from`, the
 * bundle's copy): kept in the state's cache and in the store, under its tree, platform and JAX versions.
 * Kept only when the files are the bytes the verifier measured (`measured`: key → sha256). Returns what
 * was kept, for the history row.
 */
export async function keepChampionPrograms(
  ctx: LoopContext,
  commit: string,
  platform: Platform,
  from: string,
  o: { versions: Record<string, string>; measured: Record<string, string> },
): Promise<KeptPrograms | undefined> {
  if (!existsSync(join(from, 'manifest.json'))) return undefined;
  const keys = Object.keys(o.measured);
  const found = programHashes(from, keys);
  if (keys.length === 0 || keys.some((k) => found[k] !== o.measured[k])) {
    ctx.logger.warn(
      `the programs in ${from} are not the ones measured: the new champion's programs are not kept (it will be exported again)`,
    );
    return undefined;
  }
  const kept = await keptKey(ctx, commit, platform, o.versions);
  const record: KeptPrograms = {
    tree: kept.tree,
    code: kept.code,
    platform,
    versions: { ...o.versions },
    sha256: { ...o.measured },
  };
  rmSync(kept.dir, { recursive: true, force: true });
  copyProgramFiles(from, kept.dir);
  note(kept.dir, 'kept', record);
  await toStore(ctx, kept, record);
  return record;
}

/**
 * The folder of the champion's programs for the plan's platform. In order: the ones kept in the state's
 * cache; the store's (kept by the job that promoted it, or by another run); else exported now, arm-blind
 * with the plan the candidate got, and then, where a record says which programs this tree won with
 * under the same JAX (its history row, or the store's record), checked against them by hash — a
 * champion whose export now differs from the one it won with is never timed (ChampionFailure).
 */
export async function championPrograms(
  ctx: LoopContext,
  ev: IterationEvidence | DrawHolder,
  commit: string,
  plan: RequestPlan,
): Promise<{ dir: string; source: ChampionSource }> {
  const kept = await keptKey(ctx, commit, plan.platform, plan.versions);
  return onceAtATime(kept.dir, () => findOrExport(ctx, ev, commit, plan, kept));
}

async function findOrExport(
  ctx: LoopContext,
  ev: IterationEvidence | DrawHolder,
  commit: string,
  plan: RequestPlan,
  kept: Kept,
): Promise<{ dir: string; source: ChampionSource }> {
  const { key, dir, storePrefix } = kept;
  const { platform } = plan;
  if (existsSync(join(dir, 'manifest.json'))) return { dir, source: sourceOf(dir) };
  if (await fromStore(ctx, storePrefix, dir)) return { dir, source: note(dir, 'stored') };
  const log = join(cacheRoot(ctx.stateDir), `${key}.log`);
  const exported = await exportPrograms(ctx, ev, {
    backend: ctx.backend,
    commit,
    plan,
    dest: dir,
    logFile: log,
    record: { dir: `cache/programs/${key}`, logFile: `cache/programs/${key}.log` },
    name: `A-${platform}`,
    step: 'measure',
  });
  if (exported.status === 'failed') {
    rmSync(dir, { recursive: true, force: true });
    throw championExportFailure(
      ctx,
      `the champion's programs (${commit.slice(0, 12)}) could not be exported: ${exported.reason}`,
      log,
    );
  }
  // Fail closed wherever a record says what this code won with on this platform.
  const known = recordsFor(ctx, kept, platform);
  const won = known.find((r) => sameBytesVersions(r.versions, plan.versions));
  if (won) {
    const now = programHashes(dir, Object.keys(won.sha256));
    const differ = Object.keys(won.sha256).filter((k) => now[k] !== won.sha256[k]);
    if (differ.length > 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new ChampionFailure(
        `the champion's programs (${commit.slice(0, 12)}), exported again now, are not the ones it won with (${differ.join(', ')}): its code builds another program when it is exported again, so it cannot be timed fairly`,
        {
          hint: `restore its kept programs (the store's ${storePrefix}/), or review the champion's kernel for code that depends on when or how it runs (files outside the target's editable and protected paths that changed since it won count too); the export's log: ${log}`,
        },
      );
    }
    return { dir, source: note(dir, 'exported-checked') };
  }
  if (known.length > 0) {
    // It won under other versions: these bytes cannot be checked, and are never kept.
    ctx.logger.warn(
      `the champion (${commit.slice(0, 12)}) won under ${versionsText(known[0]!.versions)}, exported now under ${versionsText(plan.versions)}: its programs cannot be checked against the ones it won with; an improvement over them needs a person`,
    );
    return { dir, source: note(dir, 'exported-unverified') };
  }
  await toStore(ctx, kept); // a champion that never won: its first export is the one kept
  return { dir, source: note(dir, 'exported') };
}

function versionsText(v: Record<string, string>): string {
  return BYTES_VERSIONS.map((k) => `${k} ${v[k] ?? '?'}`).join(', ');
}

/** Handed-over records (CI: the setup job's `kept-records` output), one JSON object a line. */
function recordsFile(stateDir: string): string {
  return join(cacheRoot(stateDir), 'records.jsonl');
}

/**
 * Every record of what this code won with on `platform`: its history rows, records handed over from a
 * job that read the history, and the store's record beside the cache folder. Matched by the code's
 * files (tree), or by its editable and protected paths (code) where other files changed since.
 */
function recordsFor(ctx: LoopContext, kept: Kept, platform: string): KeptPrograms[] {
  const rows = readHistory(ctx.stateDir, ctx.target.name).flatMap((r: HistoryRow) =>
    r.programs ? [r.programs] : [],
  );
  const handed = readJsonLines<unknown>(recordsFile(ctx.stateDir)).rows.flatMap((r) => {
    const parsed = parseRecord(JSON.stringify(r));
    return parsed ? [parsed] : [];
  });
  const beside = parseRecord(readText(`${kept.dir}.${RECORD}`));
  return [...rows, ...handed, ...(beside ? [beside] : [])]
    .reverse()
    .filter(
      (r) =>
        r.platform === platform && (r.tree === kept.tree || (r.code !== undefined && r.code === kept.code)),
    );
}

/**
 * Records handed over to a job without the history (CI's measuring jobs), from the job that read it:
 * kept for recordsFor. `json` is a JSON array of KeptPrograms (the job output); anything else is ignored.
 */
export function installRecords(stateDir: string, logger: Logger, json: string): number {
  let list: unknown;
  try {
    list = JSON.parse(json);
  } catch {
    logger.warn('the kept-records input is not JSON: ignored');
    return 0;
  }
  const records = (Array.isArray(list) ? list : []).flatMap((r) => {
    const parsed = parseRecord(JSON.stringify(r));
    return parsed ? [parsed] : [];
  });
  mkdirSync(cacheRoot(stateDir), { recursive: true });
  for (const r of records) appendLineDurable(recordsFile(stateDir), JSON.stringify(r));
  return records.length;
}

/** The records of `identity`'s code in the history rows (for a job that hands them on). */
export function recordsInHistory(
  rows: readonly HistoryRow[],
  identity: { tree?: string; code?: string; champion?: string },
): KeptPrograms[] {
  return rows.flatMap((r) => {
    const p = r.programs;
    if (!p) return [];
    const match =
      (identity.champion !== undefined && r.championAfter === identity.champion) ||
      (identity.tree !== undefined && p.tree === identity.tree) ||
      (identity.code !== undefined && p.code === identity.code);
    return match ? [p] : [];
  });
}

/** Store kept programs and their record; a failure is a warning (the state still has them). */
async function toStore(ctx: LoopContext, kept: Kept, record?: KeptPrograms): Promise<void> {
  try {
    await ctx.store.putDir(kept.storePrefix, kept.dir);
    if (record) await ctx.store.put(`${kept.storePrefix}/${RECORD}`, `${kept.dir}.${RECORD}`);
  } catch (e) {
    ctx.logger.warn(`could not store the champion's programs (${kept.storePrefix}): ${errorMessage(e)}`);
  }
}

/** Where the programs of a cache folder came from (and their record, if any), kept beside it. */
function note(dir: string, source: ChampionSource, record?: KeptPrograms): ChampionSource {
  writeFileAtomic(`${dir}.source`, source);
  if (record) writeJsonAtomic(`${dir}.${RECORD}`, record);
  return source;
}

function sourceOf(dir: string): ChampionSource {
  const text = readText(`${dir}.source`).trim();
  return SOURCES.find((s) => s === text) ?? 'kept';
}

function parseRecord(text: string): KeptPrograms | undefined {
  try {
    const r = JSON.parse(text) as KeptPrograms;
    const hashes = Object.values(r?.sha256 ?? {});
    if (typeof r.tree !== 'string' || typeof r.platform !== 'string' || hashes.length === 0) return undefined;
    if (!hashes.every((h) => typeof h === 'string' && /^[0-9a-f]{64}$/.test(h))) return undefined;
    const versions = Object.fromEntries(
      Object.entries(r.versions ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    return {
      tree: r.tree,
      ...(typeof r.code === 'string' ? { code: r.code } : {}),
      platform: r.platform,
      versions,
      sha256: { ...r.sha256 },
    };
  } catch {
    return undefined;
  }
}

/** Fetch kept programs from the store into `dir`; false when the store has none (or cannot be read). */
async function fromStore(ctx: LoopContext, prefix: string, dir: string): Promise<boolean> {
  const got = await download(ctx.store, ctx.logger, prefix, `${dir}.part`);
  if (!got) return false;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, '..'), { recursive: true });
  copyProgramFiles(`${dir}.part`, dir);
  if (existsSync(join(`${dir}.part`, RECORD))) cpSync(join(`${dir}.part`, RECORD), `${dir}.${RECORD}`);
  rmSync(`${dir}.part`, { recursive: true, force: true });
  return readdirSync(dir).includes('manifest.json');
}

/** Every kept file under `prefix` into `dest` (emptied first); false when there is no manifest. */
async function download(store: Store, logger: Logger, prefix: string, dest: string): Promise<boolean> {
  let keys: string[];
  try {
    keys = (await store.list(`${prefix}/`)).filter((k) => KEPT_FILE.test(k.slice(k.lastIndexOf('/') + 1)));
  } catch (e) {
    logger.warn(`could not list the store's kept programs (${prefix}): ${errorMessage(e)}`);
    return false;
  }
  if (!keys.some((k) => k.endsWith('/manifest.json'))) return false;
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  try {
    for (const k of keys) await store.get(k, join(dest, k.slice(prefix.length + 1)));
  } catch (e) {
    logger.warn(`could not fetch the store's kept programs (${prefix}): ${errorMessage(e)}`);
    rmSync(dest, { recursive: true, force: true });
    return false;
  }
  return true;
}

// --- the hand-over in CI: fetched by a job with a read token, used by a job with none -------------

/** `path sha256` per file below `dir`, sorted: what a digest covers. */
function listing(dir: string): string {
  const lines: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) lines.push(`${relative(dir, p)} ${sha256File(p)}`);
    }
  };
  walk(dir);
  return `${lines.sort().join('\n')}\n`;
}

/** The digest of a folder of kept programs: sha256 over its files' paths and hashes. */
export function keptDigest(dir: string): string {
  return createHash('sha256').update(listing(dir)).digest('hex');
}

/**
 * Fetch every kept-programs folder of `tree` (one per platform and JAX version) from the store into
 * `dest`, as `<key>/…`; returns the digest of what was fetched, or undefined when there is none. Run by
 * a job that may read the store (CI's setup job); the digest travels as a job output.
 */
export async function fetchKeptPrograms(
  store: Store,
  logger: Logger,
  o: { target: string; tree: string; dest: string },
): Promise<string | undefined> {
  const prefix = keptTreePrefix(o.target, o.tree);
  let keys: string[];
  try {
    keys = await store.list(`${prefix}/`);
  } catch (e) {
    logger.warn(`could not list the store's kept programs (${prefix}): ${errorMessage(e)}`);
    return undefined;
  }
  const folders = [...new Set(keys.map((k) => k.slice(prefix.length + 1).split('/')[0]!))].filter((f) =>
    /^[0-9a-f]{24}$/.test(f),
  );
  rmSync(o.dest, { recursive: true, force: true });
  let any = false;
  for (const key of folders)
    any = (await download(store, logger, `${prefix}/${key}`, join(o.dest, key))) || any;
  if (!any) {
    rmSync(o.dest, { recursive: true, force: true });
    return undefined;
  }
  return keptDigest(o.dest);
}

/**
 * Put handed-over kept programs (`from`, as fetchKeptPrograms left them) into the state's cache, where
 * championPrograms finds them — only when their digest is the one the fetching job output (`digest`):
 * anything else of the artifact is not believed. Returns the keys installed.
 */
export function importKeptPrograms(stateDir: string, logger: Logger, from: string, digest: string): string[] {
  if (!existsSync(from)) {
    logger.warn(
      `the champion's kept programs were not handed over (${from} is missing): it will be exported again`,
    );
    return [];
  }
  const found = keptDigest(from);
  if (found !== digest) {
    logger.warn(
      `the champion's kept programs in ${from} are not the ones the setup job fetched (digest ${found.slice(0, 12)}, expected ${digest.slice(0, 12)}): not used, it will be exported again`,
    );
    return [];
  }
  const installed: string[] = [];
  for (const key of readdirSync(from).filter((k) => /^[0-9a-f]{24}$/.test(k))) {
    const src = join(from, key);
    if (!existsSync(join(src, 'manifest.json'))) continue;
    const dir = join(cacheRoot(stateDir), key);
    rmSync(dir, { recursive: true, force: true });
    copyProgramFiles(src, dir);
    const record = parseRecord(readText(join(src, RECORD)));
    note(dir, 'stored', record);
    installed.push(key);
  }
  return installed;
}
