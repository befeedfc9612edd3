import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CODEX_SANDBOX_NOTE, CodexAgent, codexArgs } from '../../src/agent/agents/codex.js';
import { memoryLogger } from '../../src/util/log.js';
import { git } from '../workspace/repo.js';
import { useAgentFixtures } from './setup.js';

const setup = useAgentFixtures();

function codex(opts: Partial<ConstructorParameters<typeof CodexAgent>[0]> = {}) {
  const logger = memoryLogger();
  const agent = new CodexAgent({ binary: 'codex', extraArgs: [], passEnv: [], logger, ...opts });
  return { agent, logger };
}

describe('codex adapter', () => {
  it('an agent flooding the key proxy ends with its own outcome, one bounded warning, and flat memory (issue 35)', async () => {
    const f = setup('flood');
    const { agent, logger } = codex({
      // The key makes the harness hold it behind the proxy; the upstream is never reached.
      sourceEnv: { OPENAI_API_KEY: 'sk-flood-0123', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    global.gc?.();
    const before = process.memoryUsage().rss;
    const outcome = await agent.run({ ...f.request, timeoutMs: 240_000, idleTimeoutMs: 240_000 });
    const grown = process.memoryUsage().rss - before;
    expect(outcome.status, outcome.infraError ?? outcome.resultProblem).toBe('finished');
    expect(outcome.result).toBeDefined();
    const warned = logger.lines.filter((l) => l.includes('the key proxy refused'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('(34000 in all)');
    expect(warned[0]!.length).toBeLessThan(5_000);
    expect(grown).toBeLessThan(200 * 1024 * 1024);
  }, 300_000);

  it('runs codex exec with the exact flags, the prompt on stdin, and commits the change for the agent', async () => {
    const f = setup('ok');
    const head = git(f.repo.root, 'rev-parse', 'HEAD').trim();
    const { agent } = codex({
      model: 'gpt-5.5',
      reasoningEffort: 'high',
      extraArgs: ['--search'],
      sourceEnv: { OPENAI_BASE_URL: 'https://llm-proxy.example/v1' },
    });
    const outcome = await agent.run(f.request);

    const rec = f.record();
    const lastMessage = f.request.logFile.replace(/\.log$/, '.last-message.txt');
    expect(rec.argv).toEqual([
      'exec',
      '--json',
      '--color',
      'never',
      '--sandbox',
      'workspace-write',
      '--ephemeral',
      '-C',
      f.repo.root,
      '--output-last-message',
      lastMessage,
      '--output-schema',
      expect.stringMatching(/(?:hc-codex-|\.codex-)[^/]+\/result\.schema\.json$/),
      '-c',
      'sandbox_workspace_write.network_access=false',
      '-c',
      'sandbox_workspace_write.exclude_slash_tmp=true',
      '-c',
      'analytics.enabled=false',
      '-c',
      'check_for_update_on_startup=false',
      '-c',
      'features.apps=false',
      '-c',
      'features.plugins=false',
      '-c',
      'openai_base_url="https://llm-proxy.example/v1"',
      '-m',
      'gpt-5.5',
      '-c',
      'model_reasoning_effort="high"',
      '--add-dir',
      dirname(f.request.resultFile),
      '--search',
      '-',
    ]);
    expect(rec.argv).not.toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(rec.stdin).toBe(`${f.request.prompt}${CODEX_SANDBOX_NOTE}`);
    expect(rec.cwd).toBe(f.repo.root);
    expect(existsSync(rec.argv[12]!)).toBe(false); // the schema's scratch folder is gone

    expect(outcome.status).toBe('finished');
    expect(outcome.exitCode).toBe(0);
    expect(outcome.infraError).toBeUndefined();
    expect(outcome.result).toEqual({
      hypothesis: 'Fusing the two chunk matmuls halves the launches.',
      summary: 'Fused the two matmuls in chunk.py into one dot_general.',
      next_idea: 'Tile V to fit VMEM.',
    });
    expect(outcome.resultProblem).toBeUndefined();
    // The adapter runs no git in the agent's repository: the change stays in the working tree, for the
    // loop to take as plain files (workspace/agent-tree.ts).
    expect(git(f.repo.root, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(f.repo.root, 'status', '--porcelain').trim()).not.toBe('');
    const log = readFileSync(f.request.logFile, 'utf8');
    expect(log).toContain('$ codex exec --json');
    expect(log).toContain('"type":"turn.completed"');
    expect(outcome.logFile).toBe(f.request.logFile);
  });

  it('inside the harness’s sandbox, where its own cannot start, asks for danger-full-access', () => {
    const base = { workdir: '/w', lastMessageFile: '/l', schemaFile: '/s', extraArgs: [] };
    expect(codexArgs({ ...base, insideHarnessSandbox: true }).slice(4, 6)).toEqual([
      '--sandbox',
      'danger-full-access',
    ]);
    expect(codexArgs(base).slice(4, 6)).toEqual(['--sandbox', 'workspace-write']);
    // A sandbox the user chose still wins.
    const chosen = codexArgs({ ...base, insideHarnessSandbox: true, extraArgs: ['--sandbox', 'read-only'] });
    expect(chosen.filter((a) => a === '--sandbox')).toHaveLength(1);
  });

  it('lets extra_args choose the endpoint or the provider instead of OPENAI_BASE_URL', () => {
    const base = { workdir: '/w', lastMessageFile: '/l', schemaFile: '/s', baseUrl: 'https://a.example/v1' };
    expect(codexArgs({ ...base, extraArgs: [] })).toContain('openai_base_url="https://a.example/v1"');
    for (const own of ['openai_base_url="https://b.example/v1"', 'model_provider="azure"']) {
      const args = codexArgs({ ...base, extraArgs: ['-c', own] });
      expect(args.filter((a) => a.startsWith('openai_base_url=') || a.startsWith('model_provider='))).toEqual(
        [own],
      );
    }
  });

  it('leaves out --add-dir when the result file is inside the workdir, and lets extra_args replace the sandbox', async () => {
    const f = setup('no-change');
    f.request.resultFile = `${f.repo.root}/.hillclimb/result.json`;
    f.request.prompt = f.request.prompt.replace(/result_file: .*/, `result_file: ${f.request.resultFile}`);
    const { agent } = codex({ extraArgs: ['--dangerously-bypass-approvals-and-sandbox'] });
    const outcome = await agent.run(f.request);
    const argv = f.record().argv;
    expect(argv).not.toContain('--add-dir');
    expect(argv).not.toContain('--sandbox');
    expect(argv).not.toContain('-m');
    expect(argv.at(-2)).toBe('--dangerously-bypass-approvals-and-sandbox');
    expect(f.record().stdin).toBe(f.request.prompt); // no read-only-.git note outside our sandbox
    expect(outcome.status).toBe('finished');
    expect(outcome.result?.summary).toBe('No change is worth making.');
  });

  it('takes the result from the schema-constrained final message when the file is missing', async () => {
    const f = setup('message-only');
    const outcome = await codex().agent.run(f.request);
    expect(outcome.result?.next_idea).toBe('Tile V to fit VMEM.');
    expect(outcome.resultProblem).toBeUndefined();
  });

  it('reports a garbage result as a resultProblem, and leaves the change for the loop to take', async () => {
    const f = setup('garbage');
    const outcome = await codex().agent.run(f.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.result).toBeUndefined();
    expect(outcome.resultProblem).toMatch(/not valid JSON/);
    expect(git(f.repo.root, 'status', '--porcelain').trim()).not.toBe('');
  });

  it.each([
    ['rate-limit', /429 Too Many Requests/],
    ['server-error', /503 Service Unavailable/],
  ])('classifies %s as an infrastructure failure', async (mode, pattern) => {
    const f = setup(mode);
    const outcome = await codex().agent.run(f.request);
    expect(outcome.status).toBe('failed');
    expect(outcome.exitCode).toBe(1);
    expect(outcome.infraError).toMatch(/^model API failure: /);
    expect(outcome.infraError).toMatch(pattern);
    expect(outcome.resultProblem).toMatch(/no result file/);
  });

  it('does not call the agent’s own failure infrastructure, even when its output mentions a 503', async () => {
    const f = setup('agent-error');
    const outcome = await codex().agent.run(f.request);
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.infraError).toBeUndefined();
  });

  it('reports a crash (killed by a signal) as failed, not infrastructure', async () => {
    const f = setup('crash');
    const outcome = await codex().agent.run(f.request);
    expect(outcome).toMatchObject({ status: 'failed', exitCode: null });
    expect(outcome.infraError).toBeUndefined();
  });

  it('kills a silent agent at the idle timeout and counts it as the agent’s', async () => {
    const f = setup('hang', { idleTimeoutMs: 700 });
    const outcome = await codex().agent.run(f.request);
    expect(outcome.status).toBe('timeout');
    expect(outcome.infraError).toBeUndefined();
    expect(outcome.durationMs).toBeLessThan(10_000);
  });

  it('counts an idle timeout as infrastructure when codex was retrying the model API', async () => {
    const f = setup('hang-retrying', { idleTimeoutMs: 700 });
    const outcome = await codex().agent.run(f.request);
    expect(outcome.status).toBe('timeout');
    expect(outcome.infraError).toMatch(/went silent while retrying the model API: .*Reconnecting/);
  });

  it('stops a busy agent at the wall-clock timeout, not infrastructure', async () => {
    const f = setup('slow', { timeoutMs: 800, idleTimeoutMs: 5000 });
    const outcome = await codex().agent.run(f.request);
    expect(outcome.status).toBe('timeout');
    expect(outcome.infraError).toBeUndefined();
  });

  it('reports a missing binary as infrastructure', async () => {
    const f = setup('ok');
    const outcome = await codex({ binary: 'codex-not-installed-here' }).agent.run(f.request);
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: null,
      infraError: 'agent binary not found: codex-not-installed-here',
    });
    expect(existsSync(f.recordFile)).toBe(false);
  });

  it('reports a cancelled run as infrastructure ("cancelled")', async () => {
    const f = setup('hang');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const outcome = await codex().agent.run({ ...f.request, signal: controller.signal });
    expect(outcome).toMatchObject({ status: 'failed', infraError: 'cancelled' });
  });
});
