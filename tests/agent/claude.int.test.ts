import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { memoryLogger } from '../../src/util/log.js';
import { git } from '../workspace/repo.js';
import { useAgentFixtures } from './setup.js';

const setup = useAgentFixtures();

function claude(opts: Partial<ConstructorParameters<typeof ClaudeAgent>[0]> = {}) {
  return new ClaudeAgent({
    binary: 'claude',
    allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
    extraArgs: [],
    passEnv: [],
    logger: memoryLogger(),
    ...opts,
  });
}

describe('claude adapter', () => {
  it('runs claude -p with the exact flags in the workdir, the prompt on stdin; the agent commits itself', async () => {
    const f = setup('ok');
    const head = git(f.repo.root, 'rev-parse', 'HEAD').trim();
    const outcome = await claude({ model: 'claude-opus-4-1', maxTurns: 30 }).run(f.request);

    const rec = f.record();
    expect(rec.argv).toEqual([
      '-p',
      '--verbose',
      '--output-format',
      'stream-json',
      '--permission-mode',
      'acceptEdits',
      '--allowedTools',
      'Read,Glob,Grep,Bash(git status:*),Bash(git diff:*),Bash(git log:*),Bash(git show:*),Bash(git add:*),Bash(git commit:*),Bash(python:*),Bash(python3:*),Bash(.venv/bin/python:*)',
      '--model',
      'claude-opus-4-1',
      '--max-turns',
      '30',
      '--add-dir',
      dirname(f.request.resultFile),
    ]);
    expect(rec.argv).not.toContain('--dangerously-skip-permissions');
    expect(rec.stdin).toBe(f.request.prompt);
    expect(rec.cwd).toBe(f.repo.root);

    expect(outcome).toMatchObject({ status: 'finished', exitCode: 0 });
    expect(outcome.infraError).toBeUndefined();
    expect(outcome.result?.summary).toBe('Fused the two matmuls in chunk.py into one dot_general.');
    expect(git(f.repo.root, 'rev-parse', 'HEAD~1').trim()).toBe(head);
    expect(git(f.repo.root, 'log', '-1', '--format=%an <%ae>|%s').trim()).toBe(
      'claude (hillclimb agent) <claude-agent@users.noreply.invalid>|Fuse the two chunk matmuls',
    );
    expect(readFileSync(f.request.logFile, 'utf8')).toContain('"type":"result"');
  });

  it('uses configured allowed tools and lets extra_args replace the permission mode', async () => {
    const f = setup('no-commit');
    const outcome = await claude({
      allowedTools: ['Read', 'Edit'],
      extraArgs: ['--permission-mode', 'dontAsk'],
    }).run(f.request);
    const argv = f.record().argv;
    expect(argv.slice(4)).toEqual([
      '--allowedTools',
      'Read,Edit',
      '--add-dir',
      dirname(f.request.resultFile),
      '--permission-mode',
      'dontAsk',
    ]);
    expect(outcome.status).toBe('finished');
    expect(outcome.result?.summary).toBe('No change is worth making.');
    expect(git(f.repo.root, 'rev-list', '--count', 'HEAD').trim()).toBe('1');
  });

  it('allows the project interpreter by its absolute path (the prompt’s test command names it so)', async () => {
    const f = setup('no-commit');
    await claude({ allowedTools: ['Read'] }).run({ ...f.request, interpreter: '/work/p/.venv/bin/python' });
    const argv = f.record().argv;
    expect(argv[argv.indexOf('--allowedTools') + 1]).toBe('Read,Bash(/work/p/.venv/bin/python:*)');
  });

  it('takes the result from a JSON block in the final message when the file is missing', async () => {
    const f = setup('final-json');
    const outcome = await claude().run(f.request);
    expect(outcome.result?.hypothesis).toBe('Fusing the two chunk matmuls halves the launches.');
    expect(outcome.resultProblem).toBeUndefined();
  });

  it('reports a wrongly shaped result file as a resultProblem naming each field', async () => {
    const f = setup('garbage');
    const outcome = await claude().run(f.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.result).toBeUndefined();
    expect(outcome.resultProblem).toContain('hypothesis must be a string (got number)');
    expect(outcome.resultProblem).toContain('summary is empty');
    expect(outcome.resultProblem).toContain('next_idea is missing');
  });

  it.each([
    ['overloaded', /529.*overloaded_error/],
    ['rate-limit', /429.*rate_limit_error/],
  ])('classifies %s as an infrastructure failure', async (mode, pattern) => {
    const f = setup(mode);
    const outcome = await claude().run(f.request);
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.infraError).toMatch(pattern);
  });

  it.each(['max-turns', 'crash'])('does not call %s infrastructure', async (mode) => {
    const f = setup(mode);
    const outcome = await claude().run(f.request);
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.infraError).toBeUndefined();
  });

  it('kills a silent claude at the idle timeout', async () => {
    const f = setup('hang', { idleTimeoutMs: 700 });
    const outcome = await claude().run(f.request);
    expect(outcome.status).toBe('timeout');
    expect(outcome.infraError).toBeUndefined();
  });
});
