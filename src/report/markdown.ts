/**
 * Markdown building blocks (GitHub-flavoured): tables, code spans, collapsed details, and the
 * quoting of the agent's prose. Text from the evidence passes through here, so one escaping rule
 * holds everywhere.
 */
import { withoutControls } from '../util/index.js';

export type Align = 'left' | 'right';

/** Text safe inside a table cell: one line, pipes escaped, inert (see `inert`). */
export function cell(text: string): string {
  return inert(text.replace(/\s+/g, ' ').trim()).replaceAll('|', '\\|');
}

/** A zero-width space as an entity: it breaks what GitHub would act on, and reads the same. */
const BREAK = '&#8203;';

/**
 * Text from the evidence (the agent's prose, a test's name, a failure message) made inert on GitHub:
 * `<` and `&` escaped so it opens no HTML tag or comment; no `@name` mentions anyone and no `#12`,
 * `GH-12` or issue URL references an issue (so "Fixes #12" in a PR body closes nothing); it makes no
 * link or image; control and invisible characters shown as `\u{…}`.
 */
export function inert(text: string): string {
  return (
    withoutControls(text)
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      // After a letter or digit (`fwd@B2`, mail) it is no mention; after anything else it may be, as GitHub
      // finds mentions in the rendered text (`_@a_` is `<em>@a</em>`).
      .replace(/(^|[^A-Za-z0-9])@(?=[A-Za-z0-9])/g, `$1@${BREAK}`)
      .replace(/((?<!&)#|\bGH-)(?=\d)/gi, `$1${BREAK}`) // `&#` is only ever an entity written here
      .replace(/\/(issues|pull|discussions)\//gi, `/$1${BREAK}/`)
      // No link or image (`](`, `][`), nor a link reference definition (`]:`, which would apply to the
      // whole document): a `]` before those is escaped; before anything else it is text already.
      .replace(/\](?=[(:[])/g, '\\]')
  );
}

/** Markdown built here with `code` spans in it: `inert` applied between the spans, never inside. */
export function inertAround(markdown: string): string {
  let out = '';
  let at = 0;
  for (const m of markdown.matchAll(/(`+)[\s\S]*?[^`]\1(?!`)/g)) {
    out += inert(markdown.slice(at, m.index)) + m[0];
    at = m.index + m[0].length;
  }
  return out + inert(markdown.slice(at));
}

/** A code span that survives backticks in its content (`` `a`b` `` style); GitHub acts on nothing
 * inside one, and entities are not decoded there, so only control characters are made visible. */
export function code(text: string): string {
  const flat = withoutControls(text).replace(/\s+/g, ' ');
  const longest = Math.max(0, ...[...flat.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${flat}${pad}${fence}`;
}

/** A code span for use inside a table cell (pipes escaped). */
export function codeCell(text: string): string {
  return code(text).replaceAll('|', '\\|');
}

/** A GitHub table. Cells are used as given: pass them through `cell` or `codeCell` first. */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align: readonly Align[] = [],
): string {
  const sep = header.map((_, i) => (align[i] === 'right' ? '---:' : '---'));
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(sep), ...rows.map(line)].join('\n');
}

/** A collapsed block; the body is markdown. */
export function details(summary: string, body: string): string {
  return `<details><summary>${inert(summary)}</summary>\n\n${body}\n\n</details>`;
}

/** A fenced code block whose fence is longer than any backtick run inside. */
export function fenced(language: string, text: string): string {
  const body = withoutControls(text);
  const longest = Math.max(2, ...[...body.matchAll(/`{3,}/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${body}\n${fence}`;
}

/** A link, or just the text when there is no URL. */
export function link(text: string, url: string | undefined): string {
  if (!url) return text;
  return `[${text.replaceAll('[', '\\[').replaceAll(']', '\\]')}](${url.replaceAll(' ', '%20').replaceAll(')', '%29')})`;
}

/**
 * The agent's prose as a blockquote: every line starts with `> `, the text is inert, and a
 * leading label names whose words these are. Nothing in it is read back by the harness.
 */
export function agentQuote(fields: ReadonlyArray<readonly [label: string, text: string]>): string {
  const lines: string[] = [];
  for (const [label, text] of fields) {
    const body = inert(text.trim()).split(/\r?\n/);
    lines.push(`> agent ${label}: ${body[0] ?? ''}`.trimEnd());
    for (const rest of body.slice(1)) lines.push(`> ${rest}`.trimEnd());
  }
  return lines.join('\n');
}
