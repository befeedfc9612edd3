import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandAgent } from '../../src/agent/agents/command.js';
import { memoryLogger } from '../../src/util/log.js';
import { git } from '../workspace/repo.js';
import { type AgentFixture, agentFixture, FIXTURES } from './setup.js';

const fixtures: AgentFixture[] = [];
afterEach(() => {
  for (const f of fixtures.splice(0)) f.repo.cleanup();
});

function run(mode: string, ...args: string[]) {
  const f = agentFixture('unused');
  fixtures.push(f);
  f.request.iteration = 7;
  const agent = new CommandAgent({
    command: ['node', join(FIXTURES, 'command-agent.mjs'), mode, ...args],
    passEnv: [],
    logger: memoryLogger(),
  });
  return { f, outcome: agent.run(f.request) };
}

describe('command adapter', () => {
  it('runs the program in the workdir with the prompt on stdin and the HILLCLIMB_* variables', async () => {
    const { f, outcome } = run('ok');
    const o = await outcome;
    const rec = f.record();
    expect(rec.argv).toEqual(['ok']);
    expect(rec.cwd).toBe(f.repo.root);
    expect(rec.stdin).toBe(f.request.prompt);
    expect(rec.env.HILLCLIMB_RESULT_FILE).toBe(f.request.resultFile);
    expect(rec.env.HILLCLIMB_WORKDIR).toBe(f.repo.root);
    expect(rec.env.HILLCLIMB_ITERATION).toBe('7');
    expect(o).toMatchObject({ status: 'finished', exitCode: 0 });
    expect(o.result?.next_idea).toBe('Tile V to fit VMEM.');
    expect(git(f.repo.root, 'log', '-1', '--format=%an|%s').trim()).toBe(
      'command (hillclimb agent)|Iteration 7: fuse matmuls',
    );
  });

  it('treats exit code 75 (EX_TEMPFAIL) as an infrastructure failure', async () => {
    const o = await run('tempfail').outcome;
    expect(o).toMatchObject({ status: 'failed', exitCode: 75 });
    // What the agent said on stderr comes with it: the warning and the evidence say why.
    expect(o.infraError).toBe(
      'the agent reported an infrastructure failure (exit code 75): model endpoint unreachable, try later',
    );
    expect(o.resultProblem).toMatch(/no result file/);
  });

  it('quotes only the last lines of an exit-75 agent’s stderr, on one line, the harness’s secrets redacted', async () => {
    const secret = 'hc-test-secret-0123456789';
    process.env.HC_TEST_QUOTE_TOKEN = secret;
    try {
      const o = await run('tempfail-loud', secret).outcome;
      expect(o.infraError).toBe(
        'the agent reported an infrastructure failure (exit code 75): retrying the endpoint, try 49 / ' +
          'retrying the endpoint, try 50 / upstream said 503 to key ***',
      );
    } finally {
      delete process.env.HC_TEST_QUOTE_TOKEN;
    }
  });

  it('treats any other non-zero exit as the agent’s failure', async () => {
    const o = await run('fail').outcome;
    expect(o).toMatchObject({ status: 'failed', exitCode: 3 });
    expect(o.infraError).toBeUndefined();
  });

  it('refuses an empty command', () => {
    expect(() => new CommandAgent({ command: [], passEnv: [], logger: memoryLogger() })).toThrow(/empty/);
  });
});
