/**
 * Text a candidate or agent wrote is data wherever hillclimb shows it on GitHub (issue 35): the PR's
 * title and body, the sticky comment, the job summary and the log entry. Each renderer is given the
 * same hostile words in every field an adversary controls (the agent's prose and commit subject, the
 * names of the candidate's failing tests, the gate's reason, the agent tools' answers) and must show them
 * without acting on them.
 */
import { describe, expect, it } from 'vitest';
import type { IterationEvidence } from '../../src/evidence/index.js';
import { renderComment } from '../../src/report/comment.js';
import { renderJobSummary } from '../../src/report/job-summary.js';
import { renderLogEntry } from '../../src/report/log-entry.js';
import { code, inert } from '../../src/report/markdown.js';
import { pullRequestTitle, renderPullRequest } from '../../src/report/pr.js';
import { IMPROVED, invalidByCpuGate, measured } from './builders.js';

/** Pings people, closes an issue on merge, hides text from the reviewer, colours a terminal, opens HTML. */
const HOSTILE =
  '@octocat and @acme/maintainers: Fixes #12, closes GH-7, resolves https://github.com/acme/app/issues/9 ' +
  'and acme/app#3. \u202eevil\u202c \u2066hidden\u2069 zero\u200bwidth \u001b[31mred\u001b[0m <img src=x onerror=alert(1)> <!-- hide ' +
  '_@hubot_ \\`@monalisa ![verdict: improved 9.9x](https://evil.example/badge.svg) [docs](https://evil.example) ' +
  '\n[ref]: https://evil.example \u{e0041}\u{e0042} \u3164';

function hostile(ev: IterationEvidence): IterationEvidence {
  ev.candidate!.subject = HOSTILE;
  ev.agent!.result = { hypothesis: HOSTILE, summary: HOSTILE, next_idea: HOSTILE };
  // A tool's answer quotes the candidate's own export error (issue 38): the comment lists the calls.
  const call = (answer: string) => ({
    tool: 'check',
    isError: true,
    answer,
    costMs: 900,
    at: '2026-01-01T00:00:00Z',
  });
  ev.tools = {
    budget: { calls: 24, seconds: 1800 },
    calls: [call(`check: failed at the export: ${HOSTILE}`), call(HOSTILE)],
    refused: { count: 0, sample: [] },
  };
  return ev;
}

function hostileGate(): IterationEvidence {
  const ev = hostile(invalidByCpuGate());
  ev.gates!.cpu!.junit!.failing = [`tests/test_k.py::test_x[${HOSTILE}]`];
  ev.gates!.cpu!.reason = `1 of 128 tests failed: ${HOSTILE}`;
  ev.verdictReasons = [`cpu-gate: ${HOSTILE}`];
  return ev;
}

/** What GitHub would act on in rendered markdown, outside code spans and fences. */
function actionable(markdown: string): string[] {
  // Fences, then code spans (a run of n backticks to the next run of exactly n), as GitHub reads them.
  const prose = markdown
    .replace(/^(`{3,})[^\n]*\n[\s\S]*?\n\1$/gm, '')
    .replace(/(?<![`\\])(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g, '');
  const found: string[] = [];
  for (const m of prose.matchAll(/(?:^|[^A-Za-z0-9])@[A-Za-z0-9][\w/-]*/g))
    found.push(`mention ${m[0].trim()}`);
  for (const m of prose.matchAll(/(?:^|[^&\w])#\d+|\bGH-\d+|[\w.-]+\/[\w.-]+#\d+/gi))
    found.push(`ref ${m[0].trim()}`);
  for (const m of prose.matchAll(/\/(?:issues|pull)\/\d+/g)) found.push(`url ${m[0]}`);
  // The hostile text's own links (hillclimb's go elsewhere): unescaped, they would render.
  for (const m of prose.matchAll(/(?<!\\)\]\(https:\/\/evil|^\s*\[[^\]]*(?<!\\)\]:/gm))
    found.push(`link ${m[0]}`);
  // hillclimb's own tags and markers are the only HTML.
  const ours = /<(?:\/?(?:details|summary|sub|sup|br)\b|!-- hillclimb:)/gi;
  for (const m of prose.replace(ours, '').matchAll(/<[a-z!/]/gi)) found.push(`html ${m[0]}`);
  return found;
}

const HIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for them is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u3164\u{e0000}-\u{e007f}]/u;

describe('untrusted text on GitHub', () => {
  const rendered: Array<[string, string]> = [
    ['PR body', renderPullRequest(hostile(measured(IMPROVED))).body],
    ['PR body (gate failed)', renderPullRequest(hostileGate()).body],
    ['comment', renderComment(hostile(measured(IMPROVED)), []).body],
    ['comment (gate failed)', renderComment(hostileGate(), []).body],
    ['job summary', renderJobSummary([hostile(measured(IMPROVED)), hostileGate()], []).markdown],
    ['log entry', renderLogEntry(hostile(measured(IMPROVED)))],
  ];

  it.each(rendered)('%s: the hostile words are there, inert', (_, markdown) => {
    expect(markdown).toContain('octocat');
    expect(actionable(markdown)).toEqual([]);
    expect(markdown).not.toMatch(HIDDEN);
    expect(markdown).toContain('\\u{202e}evil');
  });

  it('a PR title shows control and invisible characters (GitHub renders no markdown there)', () => {
    const title = pullRequestTitle(hostile(measured(IMPROVED)));
    expect(title).not.toMatch(HIDDEN);
    expect(title).toContain('\\u{1b}[31mred');
  });

  it('inert reads the same to a person: only zero-width breaks and entities are added', () => {
    expect(inert('@ann fixes #4 & <b>')).toBe('@&#8203;ann fixes #&#8203;4 &amp; &lt;b>');
    expect(inert('a\u202eb')).toBe('a\\u{202e}b');
    expect(inert('fwd@B2, x@example.com, #tag, C# 12')).toBe('fwd@B2, x@example.com, #tag, C# 12');
    // A code span is left as written (GitHub acts on nothing in one) but for control characters.
    expect(code('@ann #4 \u202e')).toBe('`@ann #4 \\u{202e}`');
  });
});
