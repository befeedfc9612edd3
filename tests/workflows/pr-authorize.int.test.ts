// pr-evidence.yml's authorize step, run as the runner runs it (bash, values in env, GITHUB_OUTPUT file)
// with a fake gh that answers like the GitHub API: who may ask for a measurement, and of which commit.
// Also the workflow's shape that keeps a later comment from cancelling a queued measurement.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import type { Workflow } from './policy.js';

const execFileP = promisify(execFile);
const workflow = parse(
  readFileSync(join(REPO_ROOT, '.github', 'workflows', 'pr-evidence.yml'), 'utf8'),
) as Workflow;
const check = workflow.jobs!.authorize!.steps!.find((s) => s.id === 'check')!.run!;

const t = tempDir('hc-pr-authorize-');
afterAll(t.cleanup);

const HEAD = 'a'.repeat(12) + 'b'.repeat(28);
const PERMISSIONS: Record<string, string> = { maintainer: 'write', outsider: 'read', author: 'admin' };

/** A gh that answers the two API calls the step makes, from a table. */
function fakeGh(prAuthor: string, base = 'main'): string {
  const bin = join(t.dir, `bin-${prAuthor}-${base}`);
  mkdirSync(bin, { recursive: true });
  const perms = Object.entries(PERMISSIONS)
    .map(([user, p]) => `    */collaborators/${user}/permission) echo ${p} ;;`)
    .join('\n');
  writeFileSync(
    join(bin, 'gh'),
    `#!/bin/sh
# gh api <path> [--jq .permission]
case "$2" in
${perms}
    */collaborators/*/permission) echo none ;;
    */pulls/7) echo '{"head": {"sha": "${HEAD}"}, "user": {"login": "${prAuthor}"}, "base": {"ref": "${base}", "repo": {"default_branch": "main"}}}' ;;
    *) echo "unexpected gh call: $*" >&2; exit 1 ;;
esac
`,
  );
  chmodSync(join(bin, 'gh'), 0o755);
  return bin;
}

let n = 0;
async function authorize(actor: string, body: string, prAuthor: string, base = 'main') {
  const output = join(t.dir, `output-${++n}`);
  writeFileSync(output, '');
  const file = join(t.dir, `check-${n}.sh`);
  writeFileSync(file, check);
  const r = await execFileP('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], {
    env: {
      PATH: `${fakeGh(prAuthor, base)}:${process.env.PATH}`,
      GITHUB_OUTPUT: output,
      GH_TOKEN: 'ghs_x',
      REPO: 'octo/kernels',
      ACTOR: actor,
      NUMBER: '7',
      BODY: body,
    },
  }).catch((e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }));
  return { code: 'code' in r ? r.code : 0, stdout: r.stdout, outputs: readFileSync(output, 'utf8') };
}

describe('pr-evidence authorize', () => {
  it('measures the pinned head for a maintainer, whoever wrote the PR', async () => {
    const r = await authorize('maintainer', `/hillclimb measure ${HEAD}`, 'outsider');
    expect(r.code, r.stdout).toBe(0);
    expect(r.outputs).toContain(`head=${HEAD}`);
  });

  it('refuses a pinned commit the PR head moved away from (a push after the comment)', async () => {
    const r = await authorize('maintainer', `/hillclimb measure ${'0123456789ab'.repeat(3)}0123`, 'outsider');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('it moved since the comment');
    expect(r.outputs).toBe('');
  });

  it('refuses a short pin: a crafted commit can share a prefix with the reviewed one', async () => {
    const r = await authorize('maintainer', `/hillclimb measure ${HEAD.slice(0, 12)}`, 'outsider');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`pin the full 40-character commit SHA: /hillclimb measure ${HEAD}`);
  });

  it('refuses a PR that targets another branch than the default (an old harness would measure it)', async () => {
    const r = await authorize('maintainer', `/hillclimb measure ${HEAD}`, 'outsider', 'release-1.0');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('targets release-1.0, not main');
  });

  it("refuses an unpinned request on an outside author's PR: the head may have moved since it was read", async () => {
    const r = await authorize('maintainer', '/hillclimb measure', 'outsider');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`pin the commit you reviewed, /hillclimb measure ${HEAD}`);
  });

  it('takes an unpinned request when the PR author has write access too', async () => {
    const r = await authorize('maintainer', '/hillclimb measure', 'author');
    expect(r.code, r.stdout).toBe(0);
  });

  it('refuses a commenter without write access', async () => {
    const r = await authorize('outsider', `/hillclimb measure ${HEAD}`, 'outsider');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('outsider needs write access');
  });

  it('has no workflow-level concurrency group: a later comment cannot cancel a queued measurement', () => {
    expect(workflow.concurrency).toBeUndefined();
    for (const name of ['measure-local', 'measure-cloud']) {
      expect(workflow.jobs![name]!.concurrency).toEqual({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub expression, not a JS template
        group: 'hillclimb-pr-measure-${{ needs.authorize.outputs.number }}',
        'cancel-in-progress': false,
      });
    }
  });
});
