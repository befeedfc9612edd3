// The replay agent on a real repo with real patches (format-patch, plain diff with a leading comment,
// companion result files, a patch that does not apply), iterated like the loop would.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOutcome, AgentRequest } from '../../src/agent/agent.js';
import { describePatch, listReplayPatches, ReplayAgent } from '../../src/agent/agents/replay.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { commitFiles, git, makeRepo, type TestRepo } from '../workspace/repo.js';
import { KERNEL_FILES } from './setup.js';

const KERNEL = 'kernels/gdn/chunk.py';
let repo: TestRepo;
let patchDir: string;
let base: string;
let clone: string;
const outcomes: AgentOutcome[] = [];
const heads: string[] = [];

function request(workdir: string, i: number): AgentRequest {
  const dir = join(repo.base, 'evidence', `${workdir === repo.root ? 'a' : 'b'}-${i}`);
  return {
    iteration: i,
    workdir,
    prompt: 'ignored by the replay agent',
    resultFile: join(dir, 'result.json'),
    logFile: join(dir, 'agent.log'),
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    env: {},
  };
}

beforeAll(async () => {
  repo = makeRepo(KERNEL_FILES);
  base = git(repo.root, 'rev-parse', 'HEAD').trim();
  patchDir = join(repo.base, 'replay');
  mkdirSync(patchDir);
  // Four successive kernel changes, exported four ways, then the repo is put back at the base.
  const c1 = commitFiles(
    repo.root,
    'Fuse the two chunk matmuls\n\nOne dot_general instead of two.\n\nNext: tile V to fit VMEM\n',
    {
      [KERNEL]: 'def chunk(x):\n    return x  # fused\n',
    },
  );
  const c2 = commitFiles(repo.root, 'c2', { [KERNEL]: 'def chunk(x):\n    return x  # fused, tiled\n' });
  const c3 = commitFiles(repo.root, 'c3', {
    [KERNEL]: 'def chunk(x):\n    return x  # fused, tiled, bf16\n',
  });
  const c4 = commitFiles(repo.root, 'c4', { 'kernels/gdn/extra.py': 'BLOCK = 64\n' });
  writeFileSync(join(patchDir, '0001-fuse.patch'), git(repo.root, 'format-patch', '-1', '--stdout', c1));
  writeFileSync(
    join(patchDir, '0002-tile.patch'),
    `# Hypothesis: Tiling V keeps the state in VMEM.\n# Summary: Split V into 128-wide tiles.\n# Next: try bf16 operands\n${git(repo.root, 'diff', c1, c2)}`,
  );
  writeFileSync(join(patchDir, '0003-bf16.patch'), git(repo.root, 'diff', c2, c3));
  writeFileSync(
    join(patchDir, '0003-bf16.json'),
    JSON.stringify({
      hypothesis: 'bf16 operands, fp32 accumulation.',
      summary: 'Cast q, k to bf16.',
      next_idea: 'Fuse the gate.',
      extra: 1,
    }),
  );
  writeFileSync(join(patchDir, '0004-extra.patch'), git(repo.root, 'diff', c3, c4));
  writeFileSync(
    join(patchDir, '0004-extra.json'),
    JSON.stringify({ hypothesis: 'A block table.', summary: 'Adds BLOCK.' }),
  );
  writeFileSync(
    join(patchDir, '0005-stale.patch'),
    `${git(repo.root, 'diff', base, c1).replace('-    return x\n', '-    return y  # not what is there\n')}`,
  );
  writeFileSync(join(patchDir, 'README.md'), 'not a patch\n');
  git(repo.root, 'reset', '--quiet', '--hard', base);
  clone = join(repo.base, 'clone');
  git(repo.base, 'clone', '--quiet', repo.root, clone);

  const agent = new ReplayAgent({ dir: patchDir, logger: memoryLogger() });
  for (let i = 1; i <= 6; i++) {
    outcomes.push(await agent.run(request(repo.root, i)));
    heads.push(git(repo.root, 'rev-parse', 'HEAD').trim());
  }
});
afterAll(() => repo.cleanup());

describe('replay agent', () => {
  it('lists NNNN-*.patch files in order with their companions', () => {
    const list = listReplayPatches(patchDir).map((p) => ({
      patch: p.patch.slice(patchDir.length + 1),
      companion: p.companion?.slice(patchDir.length + 1),
    }));
    expect(list).toEqual([
      { patch: '0001-fuse.patch', companion: undefined },
      { patch: '0002-tile.patch', companion: undefined },
      { patch: '0003-bf16.patch', companion: '0003-bf16.json' },
      { patch: '0004-extra.patch', companion: '0004-extra.json' },
      { patch: '0005-stale.patch', companion: undefined },
    ]);
  });

  it('iteration 1 applies and commits a format-patch, deriving the result from subject, body and Next:', () => {
    expect(outcomes[0]).toMatchObject({ status: 'finished', exitCode: 0 });
    expect(outcomes[0]!.result).toEqual({
      hypothesis: 'Fuse the two chunk matmuls',
      summary: 'One dot_general instead of two.',
      next_idea: 'tile V to fit VMEM',
    });
    expect(git(repo.root, 'log', '-1', '--format=%an|%s', heads[0]!).trim()).toBe(
      'replay (hillclimb agent)|Fuse the two chunk matmuls',
    );
    expect(git(repo.root, 'log', '-1', '--format=%B', heads[0]!)).toContain('Replay-Patch: 0001-fuse.patch');
    expect(readFileSync(outcomes[0]!.logFile, 'utf8')).toContain('applies');
  });

  it('iteration 2 derives the result from a plain diff’s leading comment', () => {
    expect(outcomes[1]!.result).toEqual({
      hypothesis: 'Tiling V keeps the state in VMEM.',
      summary: 'Split V into 128-wide tiles.',
      next_idea: 'try bf16 operands',
    });
    expect(git(repo.root, 'show', `${heads[1]}:${KERNEL}`)).toContain('fused, tiled');
  });

  it('iterations 3 and 4 use the companion JSON verbatim, reporting an invalid one as a resultProblem', () => {
    expect(outcomes[2]!.result).toEqual({
      hypothesis: 'bf16 operands, fp32 accumulation.',
      summary: 'Cast q, k to bf16.',
      next_idea: 'Fuse the gate.',
    });
    expect(outcomes[3]).toMatchObject({ status: 'finished', exitCode: 0 });
    expect(outcomes[3]!.result).toBeUndefined();
    expect(outcomes[3]!.resultProblem).toMatch(/next_idea is missing/);
    expect(git(repo.root, 'show', '--stat', '--format=', heads[3]!)).toContain('kernels/gdn/extra.py');
  });

  it('iteration 5 fails cleanly when its patch does not apply: no commit, tree untouched', () => {
    expect(outcomes[4]).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcomes[4]!.infraError).toBeUndefined();
    expect(heads[4]).toBe(heads[3]);
    expect(git(repo.root, 'status', '--porcelain').trim()).toBe('');
  });

  it('iteration 6 finds no patch left and finishes without a commit', () => {
    expect(outcomes[5]).toMatchObject({ status: 'finished', exitCode: 0 });
    expect(heads[5]).toBe(heads[4]);
    expect(outcomes[5]!.result?.hypothesis).toBe('No replay patch is left for iteration 6.');
  });

  it('is deterministic: a fresh clone replayed the same way ends at the same tree', async () => {
    const agent = new ReplayAgent({ dir: patchDir, logger: memoryLogger() });
    for (let i = 1; i <= 4; i++) await agent.run(request(clone, i));
    expect(git(clone, 'rev-parse', 'HEAD^{tree}').trim()).toBe(
      git(repo.root, 'rev-parse', `${heads[3]}^{tree}`).trim(),
    );
  });

  it('refuses a missing folder with a hint', () => {
    const err = (() => {
      try {
        new ReplayAgent({ dir: join(repo.base, 'nope'), logger: memoryLogger() });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).hint).toMatch(/agent\.replay\.dir/);
  });
});

describe('describePatch', () => {
  it('falls back to the file name when a patch has no leading text, and caps long prose', () => {
    expect(describePatch('diff --git a/x b/x\n', '0009-x.patch').result).toEqual({
      hypothesis: 'replay patch 0009-x.patch',
      summary: 'replay patch 0009-x.patch',
      next_idea: 'Apply the next replay patch.',
    });
    const long = describePatch(`Subject: [PATCH 1/3] Big\n\n${'y'.repeat(5000)}\n---\n`, 'p');
    expect(long.result.hypothesis).toBe('Big');
    expect(long.result.summary.length).toBe(1500);
  });
});
