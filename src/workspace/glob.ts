/**
 * A small path-glob matcher for `editable`, `protected` and `static_checks[].paths`. Semantics:
 *
 * - Paths and globs are relative to the repository root, with `/` separators; a glob is always anchored
 *   at the root (`*.py` matches `setup.py`, not `kernels/x.py`; write `**` + `/*.py` for any depth).
 * - `*` matches any run of characters within one path component (possibly empty), never `/`.
 * - `?` matches exactly one character other than `/`.
 * - `[abc]`, `[a-z]`, `[!a-z]` / `[^a-z]` match one character (never `/`) in / not in the class.
 * - `**` as a whole component matches zero or more components: `a/**` matches everything under `a`
 *   (not `a` itself), `** /x` (without the space) matches `x` at any depth, `a/** /b` matches `a/b`, `a/x/b`,
 *   `a/x/y/b`. A `**` inside a component (`a**b`) is just two `*`.
 * - A trailing `/` means "everything under": `kernels/gdn/` is `kernels/gdn/**`.
 * - `\` escapes the next character. Dot files get no special treatment (`*` matches `.hidden`), and
 *   matching is case-sensitive: a protected glob must not be dodged by a leading dot or a case change
 *   on a case-sensitive file system.
 */

const cache = new Map<string, RegExp>();

/** Compile a glob to an anchored regular expression (cached). Throws on an unterminated `[`. */
export function globToRegExp(glob: string): RegExp {
  const hit = cache.get(glob);
  if (hit) return hit;
  let g = glob.startsWith('./') ? glob.slice(2) : glob;
  if (g.endsWith('/')) g = `${g}**`;
  const parts = g.split('/');
  let re = '';
  parts.forEach((part, i) => {
    const last = i === parts.length - 1;
    if (part === '**') {
      // Zero or more whole components; a final ** needs at least one (the files under the folder).
      re += last ? '.+' : '(?:[^/]+/)*';
      return;
    }
    re += componentToRegExp(part, glob);
    if (!last) re += '/';
  });
  const compiled = new RegExp(`^${re}$`);
  cache.set(glob, compiled);
  return compiled;
}

function componentToRegExp(part: string, glob: string): string {
  let re = '';
  for (let i = 0; i < part.length; i++) {
    const c = part[i]!;
    if (c === '\\') {
      const next = part[++i];
      if (next !== undefined) re += escapeRegExp(next);
    } else if (c === '*') {
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = part.indexOf(']', i + 2);
      if (end === -1) throw new Error(`glob ${JSON.stringify(glob)}: unterminated "["`);
      let body = part.slice(i + 1, end);
      const negated = body.startsWith('!') || body.startsWith('^');
      if (negated) body = body.slice(1);
      const cls = body.replace(/[\\\]^]/g, (m) => `\\${m}`);
      re += negated ? `[^/${cls}]` : `[${cls}]`;
      i = end;
    } else {
      re += escapeRegExp(c);
    }
  }
  return re;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Whether `path` (repository-relative, `/`-separated) matches `glob`. */
export function matchGlob(glob: string, path: string): boolean {
  const p = path.startsWith('./') ? path.slice(2) : path;
  return globToRegExp(glob).test(p);
}

/** Whether any of the globs matches. */
export function matchAny(globs: readonly string[], path: string): boolean {
  return globs.some((g) => matchGlob(g, path));
}
