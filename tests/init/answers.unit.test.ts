import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultProtected, parseCommand, splitList } from '../../src/init/answers.js';
import { gatherAnswers } from '../../src/init/gather.js';
import { tempDir } from '../helpers/paths.js';

describe('parseCommand', () => {
  it('splits words, keeps quoted spaces, and never involves a shell', () => {
    expect(parseCommand('--x', `{python} -m pytest -k 'not slow' "a b" --junitxml={junit}`)).toEqual([
      '{python}',
      '-m',
      'pytest',
      '-k',
      'not slow',
      'a b',
      '--junitxml={junit}',
    ]);
    expect(parseCommand('--x', 'echo $HOME;rm')).toEqual(['echo', '$HOME;rm']);
    expect(parseCommand('--x', `''`)).toEqual(['']);
  });

  it('takes a JSON array as is, and refuses anything else that starts with [', () => {
    expect(parseCommand('--x', '["a b", "{metrics}"]')).toEqual(['a b', '{metrics}']);
    expect(() => parseCommand('--bench-command', '["a", 1]')).toThrow(
      /--bench-command: a JSON command must be/,
    );
    expect(() => parseCommand('--bench-command', '[a')).toThrow(/--bench-command: not a JSON array/);
    expect(() => parseCommand('--bench-command', '   ')).toThrow(/--bench-command: empty command/);
  });
});

describe('splitList', () => {
  it('takes repeated flags and comma lists alike', () => {
    expect(splitList(['a/**, b/**', 'c.py', ''])).toEqual(['a/**', 'b/**', 'c.py']);
    expect(splitList(undefined)).toEqual([]);
  });
});

describe('defaultProtected', () => {
  let t: { dir: string; cleanup: () => void };
  beforeEach(() => {
    t = tempDir('hc-init-prot-');
    for (const f of ['test/test_a.py', 'src/mypkg/ops/k.py', 'src/mypkg/bench.py', 'tools/run_bench.py']) {
      mkdirSync(join(t.dir, f, '..'), { recursive: true });
      writeFileSync(join(t.dir, f), '');
    }
  });
  afterEach(() => t.cleanup());

  it('protects the files the test command names, the target module, the test folder and requirements, never a folder holding editable paths', () => {
    const got = defaultProtected(t.dir, {
      editable: ['src/mypkg/ops/**'],
      // pytest over src/ (holds the kernel: left editable) and test/, with a config file; the target
      // module protected before it exists (as a module and as a package).
      testCommand: [
        '{python}',
        '-m',
        'pytest',
        'src',
        'test',
        '-c',
        'tools/run_bench.py',
        '--junitxml={junit}',
      ],
      programs: 'mypkg.bench',
      requirements: 'requirements/ci.txt',
    });
    expect(got).toEqual([
      '.github/**',
      'hillclimb.yml',
      'hillclimb/**',
      'test/**',
      'requirements/ci.txt',
      'tools/run_bench.py',
      'mypkg/bench.py',
      'mypkg/bench/**',
    ]);
  });
});

describe('gatherAnswers', () => {
  it('asks what no flag gave, shows defaults, and takes a default on an empty answer', async () => {
    const t = tempDir('hc-init-ask-');
    try {
      const asked: string[] = [];
      const replies: Record<string, string> = {
        'Paths the agent may edit': 'src/k/**, src/k2/**',
        'Target module': 'bench.b',
        'Which way is better': 'higher',
      };
      const answers = await gatherAnswers(
        t.dir,
        { target: 'k' },
        async (q, fallback) => {
          asked.push(`${q} [${fallback ?? ''}]`);
          return Object.entries(replies).find(([k]) => q.startsWith(k))?.[1] ?? '';
        },
        'trunk',
      );
      expect(asked.some((q) => q.startsWith('Target name'))).toBe(false);
      expect(asked).toContain('Default branch [trunk]');
      expect(answers).toMatchObject({
        target: 'k',
        editable: ['src/k/**', 'src/k2/**'],
        programs: 'bench.b',
        direction: 'higher',
        agent: 'codex',
        requirements: 'requirements.txt',
        base: 'trunk',
      });
    } finally {
      t.cleanup();
    }
  });

  it('for --add-target, asks only the target questions, and asks again for a name already taken', async () => {
    const t = tempDir('hc-init-add-');
    try {
      const asked: string[] = [];
      const names = ['scale', 'mm'];
      const replies: Record<string, string> = {
        'Paths the agent may edit': 'src/mm/**',
        'Target module': 'bench.mm',
      };
      const existing = {
        targets: ['scale'],
        agent: 'replay' as const,
        requirements: 'pyproject.toml[hc]',
        base: 'trunk',
        replayDir: 'hillclimb/replay',
        text: '',
        config: {} as never,
      };
      const answers = await gatherAnswers(
        t.dir,
        { addTarget: true },
        async (q) => {
          asked.push(q);
          if (q.includes('Name of the new target')) return names.shift()!;
          return Object.entries(replies).find(([k]) => q.startsWith(k))?.[1] ?? '';
        },
        'main',
        existing,
      );
      expect(asked[0]).toBe('Name of the new target (lowercase; hillclimb.yml has scale)');
      expect(asked[1]).toContain('"scale" is already a target in hillclimb.yml (scale); choose another name');
      expect(asked.filter((q) => /^(Agent|pip requirements|Default branch)/.test(q))).toEqual([]);
      expect(answers).toMatchObject({
        target: 'mm',
        editable: ['src/mm/**'],
        programs: 'bench.mm',
        agent: 'replay',
        requirements: 'pyproject.toml[hc]',
        base: 'trunk',
      });
      // The requirements file (from hillclimb.yml) is protected for the new target too.
      expect(answers.protected).toContain('pyproject.toml');
    } finally {
      t.cleanup();
    }
  });

  it('asks again, saying why, after an unusable answer; gives up after three', async () => {
    const asked: string[] = [];
    const replies = ['down', 'sideways', 'higher'];
    const flags = { target: 'k', editable: ['src/k/**'], programs: 'bench.b' };
    const answers = await gatherAnswers(
      '/nonexistent',
      flags,
      async (q) => {
        asked.push(q);
        return q.includes('Which way is better') ? replies.shift()! : '';
      },
      'main',
    );
    expect(answers.direction).toBe('higher');
    expect(asked.filter((q) => q.includes('Which way is better'))).toEqual([
      'Which way is better (lower or higher)',
      '--direction: "down": one of lower, higher. Which way is better (lower or higher)',
      '--direction: "sideways": one of lower, higher. Which way is better (lower or higher)',
    ]);

    const never = gatherAnswers(
      '/nonexistent',
      { target: 'k', editable: ['src/k/**'] },
      async () => '',
      'main',
    );
    await expect(never).rejects.toThrow('--programs: required');
  });

  it('without a terminal and without --yes, refuses before asking anything', async () => {
    await expect(gatherAnswers('/nonexistent', { target: 'k' }, undefined, 'main')).rejects.toThrow(
      /no terminal to ask on/,
    );
  });
});
