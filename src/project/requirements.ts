/**
 * What `paths.requirements` names, and the requirements pip is given for it: a pip requirements file,
 * or a project's `pyproject.toml` — its `[project] dependencies`, plus the optional-dependency extras
 * named in brackets (`pyproject.toml[test]`, `pyproject.toml[test,bench]`). The project itself is not
 * installed: an installed copy of the kernel would make both arms of a comparison the same program.
 * Anything else pip cannot read (a TOML or INI file under another name) is refused with a clear error
 * rather than pip's "Invalid requirement".
 */
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { HillclimbError } from '../util/index.js';

const PYPROJECT = 'pyproject.toml';
/** How the docs say it, in every hint. */
const ACCEPTED =
  'paths.requirements takes a pip requirements file, or pyproject.toml (its [project] dependencies) with ' +
  'optional-dependency extras in brackets, e.g. pyproject.toml[test] (docs/setup.md)';

export interface RequirementsSpec {
  /** The file, relative to the project root. */
  file: string;
  /** A pyproject.toml: its dependencies and `extras` are installed, not the file as requirements. */
  pyproject: boolean;
  /** Optional-dependency groups of a pyproject.toml. */
  extras: string[];
}

/** `requirements.txt`, `pyproject.toml`, `pyproject.toml[test,bench]` → its file and extras. */
export function parseRequirementsSpec(spec: string, key = 'paths.requirements'): RequirementsSpec {
  const bracket = /^(.+?)\[([^\]]*)\]$/.exec(spec);
  const file = bracket ? bracket[1]! : spec;
  const pyproject = basename(file) === PYPROJECT;
  const extras = bracket
    ? bracket[2]!
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== '')
    : [];
  if (bracket && !pyproject) {
    throw new HillclimbError(`${key}: ${spec}: extras in brackets are for a pyproject.toml only`, {
      hint: ACCEPTED,
    });
  }
  const bad = extras.find((e) => !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(e));
  if (bad !== undefined) throw new HillclimbError(`${key}: ${spec}: "${bad}" is not an extra's name`);
  return { file, pyproject, extras };
}

/**
 * The requirement lines pip installs for `spec` (a requirements file's own lines, or a pyproject's
 * dependencies and extras), read from `root`. Throws, naming the file, for a file pip cannot read.
 */
export function requirementLines(root: string, spec: string): string[] {
  const s = parseRequirementsSpec(spec);
  const text = readFileSync(join(root, s.file), 'utf8');
  if (s.pyproject) return pyprojectRequirements(text, s.file, s.extras);
  const table = text.split('\n').findIndex((l) => /^\s*\[\[?[A-Za-z][\w.-]*\]\]?\s*$/.test(l));
  if (table !== -1) {
    throw new HillclimbError(
      `${s.file} is not a pip requirements file: line ${table + 1} is a table header (${text.split('\n')[table]!.trim()}), so pip would refuse it`,
      { hint: ACCEPTED },
    );
  }
  return text.split('\n');
}

/** A parsed TOML value of the few kinds read here: a string array, or something else (unused). */
type Value = string[] | 'other';

/**
 * The requirements of a pyproject.toml: `[project] dependencies` and each named extra of
 * `[project.optional-dependencies]`; an extra that names the project itself (`mypkg[test]`) brings
 * that extra's requirements, not the project.
 */
export function pyprojectRequirements(text: string, file: string, extras: readonly string[]): string[] {
  const project = readProject(text);
  const fail = (problem: string, hint = ACCEPTED) => new HillclimbError(`${file}: ${problem}`, { hint });
  if (!project.found) throw fail('has no [project] table, so it names no dependencies');
  if (project.dynamic.includes('dependencies') || project.dynamic.includes('optional-dependencies')) {
    throw fail(
      `its dependencies are dynamic (project.dynamic: ${project.dynamic.join(', ')}): only its build backend can read them`,
      'list them in a requirements file and set paths.requirements to it',
    );
  }
  if (project.inlineExtras) {
    throw fail(
      'project.optional-dependencies is an inline table, which hillclimb does not read',
      'write it as a [project.optional-dependencies] table',
    );
  }
  const name = project.name?.toLowerCase().replace(/[-_.]+/g, '-');
  const out: string[] = [...project.dependencies];
  const seen = new Set<string>();
  const addExtra = (extra: string) => {
    if (seen.has(extra)) return;
    seen.add(extra);
    const reqs = project.extras.get(extra);
    if (reqs === undefined) {
      const known = [...project.extras.keys()].sort();
      throw fail(
        `has no optional-dependencies extra "${extra}" (it has: ${known.join(', ') || 'none'})`,
        `name one of them in paths.requirements, e.g. ${file}[${known[0] ?? 'test'}], or add it to [project.optional-dependencies]`,
      );
    }
    for (const r of reqs) {
      // `mypkg[test]` in one of mypkg's own extras: that extra's requirements, not mypkg from an index.
      const self = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*\[([^\]]*)\]\s*$/.exec(r);
      if (self && name !== undefined && self[1]!.toLowerCase().replace(/[-_.]+/g, '-') === name) {
        for (const e of self[2]!.split(',')) addExtra(e.trim());
      } else out.push(r);
    }
  };
  for (const e of extras) addExtra(e);
  return out;
}

interface ProjectTable {
  found: boolean;
  name?: string;
  dependencies: string[];
  dynamic: string[];
  extras: Map<string, string[]>;
  inlineExtras: boolean;
}

/** The few keys of `[project]` and `[project.optional-dependencies]` read here (a TOML subset). */
function readProject(text: string): ProjectTable {
  const out: ProjectTable = {
    found: false,
    dependencies: [],
    dynamic: [],
    extras: new Map(),
    inlineExtras: false,
  };
  let table = '';
  let at = 0;
  while (at < text.length) {
    const lineEnd = text.indexOf('\n', at) === -1 ? text.length : text.indexOf('\n', at);
    const line = text.slice(at, lineEnd).trim();
    const header = /^\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) {
      table = header[1]!.replace(/\s*\.\s*/g, '.').replace(/"/g, '');
      if (table === 'project') out.found = true;
      at = lineEnd + 1;
      continue;
    }
    const kv = /^("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=\s*/.exec(line);
    if (!kv || (table !== 'project' && table !== 'project.optional-dependencies')) {
      at = lineEnd + 1;
      continue;
    }
    const key = kv[1]!.replace(/^["']|["']$/g, '');
    const start = at + text.slice(at, lineEnd).indexOf(line) + kv[0].length;
    const [value, end] = readValue(text, start);
    at = text.indexOf('\n', end) === -1 ? text.length : text.indexOf('\n', end) + 1;
    if (table === 'project.optional-dependencies') {
      if (value !== 'other') out.extras.set(key, value);
    } else if (key === 'dependencies' && value !== 'other') out.dependencies = value;
    else if (key === 'dynamic' && value !== 'other') out.dynamic = value;
    else if (key === 'optional-dependencies') out.inlineExtras = true;
    else if (key === 'name') out.name = /^\s*["']([^"']+)["']/.exec(text.slice(start))?.[1];
  }
  return out;
}

/** The value at `i`: a string array (across lines, comments and trailing commas allowed), or 'other'. */
function readValue(text: string, i: number): [Value, number] {
  if (text[i] !== '[') return ['other', i];
  const items: string[] = [];
  let j = i + 1;
  while (j < text.length) {
    const c = text[j]!;
    if (c === ']') return [items, j + 1];
    if (c === '#') {
      j = text.indexOf('\n', j) === -1 ? text.length : text.indexOf('\n', j);
    } else if (c === '"' || c === "'") {
      const [s, after] = readString(text, j);
      items.push(s);
      j = after;
    } else if (/[\s,]/.test(c)) j++;
    else return ['other', j]; // not an array of strings
  }
  return ['other', j];
}

function readString(text: string, i: number): [string, number] {
  const quote = text[i]!;
  let out = '';
  let j = i + 1;
  while (j < text.length && text[j] !== quote) {
    if (quote === '"' && text[j] === '\\' && j + 1 < text.length) {
      out += text[j + 1];
      j += 2;
    } else out += text[j++];
  }
  return [out, j + 1];
}
