// The agent's environment is scrubbed: fake agents dump what they got, and we check it names only the
// allowed variables, carries no token or cloud credential, and that API keys never reach the log.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from '../../src/agent/agents/claude.js';
import { CodexAgent } from '../../src/agent/agents/codex.js';
import { CommandAgent } from '../../src/agent/agents/command.js';
import { agentEnvironment, isRefusedName } from '../../src/agent/environment.js';
import { PLACEHOLDER_KEY } from '../../src/agent/key-proxy.js';
import { memoryLogger } from '../../src/util/log.js';
import { type AgentFixture, agentFixture, FIXTURES, fakesFirstOnPath } from './setup.js';

const PLANTED: Record<string, string> = {
  GITHUB_TOKEN: 'ghs_planted_github_token_value',
  GH_TOKEN: 'gho_planted_gh_token_value',
  HF_TOKEN: 'hf_planted_token_value',
  ACTIONS_RUNTIME_TOKEN: 'planted-actions-runtime',
  ACTIONS_ID_TOKEN_REQUEST_URL: 'https://planted.invalid/oidc',
  GOOGLE_APPLICATION_CREDENTIALS: '/planted/gcp-key.json',
  CLOUDSDK_AUTH_ACCESS_TOKEN: 'planted-gcloud-token',
  AWS_SECRET_ACCESS_KEY: 'planted-aws-secret',
  AWS_REGION: 'us-east-1',
  SOME_UNRELATED_VAR: 'not for the agent',
  OPENAI_API_KEY: 'sk-planted-openai-key-1234',
  ANTHROPIC_API_KEY: 'sk-ant-planted-anthropic-key',
  HTTPS_PROXY: 'http://proxy.invalid:3128',
  LC_ALL: 'C.UTF-8',
};
const FORBIDDEN = Object.keys(PLANTED).filter((k) =>
  /TOKEN|ACTIONS_|GOOGLE_|CLOUDSDK_|AWS_|UNRELATED/.test(k),
);

const saved: Record<string, string | undefined> = {};
const fixtures: AgentFixture[] = [];
let restorePath: () => void;
beforeAll(() => {
  restorePath = fakesFirstOnPath();
  for (const [k, v] of Object.entries(PLANTED)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterAll(() => {
  restorePath();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
afterEach(() => {
  for (const f of fixtures.splice(0)) f.repo.cleanup();
});

function setup(mode: string) {
  const f = agentFixture(mode);
  // A request that (wrongly) tries to hand over a token: refused with a warning.
  f.request.env = { ...f.request.env, GITHUB_TOKEN: 'ghs_from_the_request', ITERATION_NOTE: 'ok' };
  fixtures.push(f);
  return f;
}

const GIT_IDENTITY = ['GIT_AUTHOR_EMAIL', 'GIT_AUTHOR_NAME', 'GIT_COMMITTER_EMAIL', 'GIT_COMMITTER_NAME'];
const REQUEST = ['FAKE_RECORD', 'ITERATION_NOTE'];

/**
 * The env holds exactly the base variables the harness has, plus `names`; nothing forbidden. (PWD, SHLVL
 * and _ are set by /bin/sh itself in the fakes' shims, not passed by us.)
 */
function expectOnly(recorded: Record<string, string>, names: string[]) {
  const env = Object.fromEntries(
    Object.entries(recorded).filter(([k]) => !['PWD', 'SHLVL', '_'].includes(k)),
  );
  const base = Object.keys(process.env).filter(
    (k) => ['PATH', 'HOME', 'LANG', 'LANGUAGE', 'TMPDIR'].includes(k) || k.startsWith('LC_'),
  );
  expect(Object.keys(env).sort()).toEqual([...new Set([...base, ...names])].sort());
  for (const k of FORBIDDEN) expect(env[k], k).toBeUndefined();
}

describe('scrubbed agent environment', () => {
  it('codex gets only the base variables, its own key, pass_env and the request env', async () => {
    const f = setup('show-key');
    const logger = memoryLogger();
    const agent = new CodexAgent({ binary: 'codex', extraArgs: [], passEnv: ['HTTPS_PROXY'], logger });
    await agent.run(f.request);
    const env = f.record().env;
    expectOnly(env, [
      'OPENAI_API_KEY',
      'CODEX_API_KEY',
      'TMPDIR',
      'HTTPS_PROXY',
      ...GIT_IDENTITY,
      ...REQUEST,
    ]);
    // The harness's key proxy holds the user's key: codex gets the placeholder under both names
    // (`codex exec` reads CODEX_API_KEY) and the proxy's URL (src/agent/key-proxy.ts).
    expect(env.OPENAI_API_KEY).toBe(PLACEHOLDER_KEY);
    expect(env.CODEX_API_KEY).toBe(PLACEHOLDER_KEY);
    expect(f.record().argv.join(' ')).toMatch(
      /openai_base_url="http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/v1"/,
    );
    // Its TMPDIR is a private scratch folder (the sandbox keeps /tmp read-only).
    expect(env.TMPDIR).toMatch(/\/evidence\/i001\/\.codex-[^/]+\/tmp$/);
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(env.GIT_AUTHOR_NAME).toBe('codex (hillclimb agent)');
    expect(logger.lines.join('\n')).toContain('not passing GITHUB_TOKEN to the agent');
    // The fake printed its key (the placeholder, redacted like any key); the user's key is nowhere.
    const log = readFileSync(f.request.logFile, 'utf8');
    expect(log).toContain('using key ***');
    expect(log).not.toContain(PLANTED.OPENAI_API_KEY);
  });

  it('claude gets its own key and not the OpenAI one', async () => {
    const f = setup('no-commit');
    const agent = new ClaudeAgent({
      binary: 'claude',
      allowedTools: DEFAULT_CLAUDE_ALLOWED_TOOLS,
      extraArgs: [],
      passEnv: [],
      logger: memoryLogger(),
    });
    await agent.run(f.request);
    const env = f.record().env;
    expectOnly(env, [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
      ...GIT_IDENTITY,
      ...REQUEST,
    ]);
    expect(env.OPENAI_API_KEY).toBeUndefined();
    // Its own key stays with the harness's proxy too: the placeholder, and the proxy's URL.
    expect(env.ANTHROPIC_API_KEY).toBe(PLACEHOLDER_KEY);
    expect(env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}$/);
    expect(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1'); // no telemetry or update calls
  });

  it('a command agent gets no model key at all, plus the HILLCLIMB_* variables', async () => {
    const f = setup('ok');
    const agent = new CommandAgent({
      command: ['node', join(FIXTURES, 'command-agent.mjs'), 'ok'],
      passEnv: [],
      logger: memoryLogger(),
    });
    await agent.run(f.request);
    const env = f.record().env;
    expectOnly(env, [
      ...GIT_IDENTITY,
      ...REQUEST,
      'HILLCLIMB_RESULT_FILE',
      'HILLCLIMB_WORKDIR',
      'HILLCLIMB_ITERATION',
    ]);
  });
});

describe('agentEnvironment', () => {
  const source = {
    PATH: '/bin',
    HOME: '/home/u',
    LC_CTYPE: 'C.UTF-8',
    OPENAI_API_KEY: 'sk-1234567',
    GITHUB_TOKEN: 'ghs_x',
    MY_SECRET: 'hush-hush',
    HTTPS_PROXY: 'http://p',
  };

  it('refuses tokens and credentials even when pass_env or the request names them', () => {
    const r = agentEnvironment({
      modelKeys: ['OPENAI_API_KEY'],
      passEnv: ['HTTPS_PROXY', 'GITHUB_TOKEN', 'MY_SECRET'],
      requestEnv: { AWS_PROFILE: 'x', NOTE: 'y' },
      source,
    });
    expect(r.env).toEqual({
      PATH: '/bin',
      HOME: '/home/u',
      LC_CTYPE: 'C.UTF-8',
      OPENAI_API_KEY: 'sk-1234567',
      HTTPS_PROXY: 'http://p',
      NOTE: 'y',
    });
    expect(r.refused).toEqual(['AWS_PROFILE', 'GITHUB_TOKEN', 'MY_SECRET']);
    expect(r.secrets).toEqual(['sk-1234567']);
  });

  it('knows which names are refused', () => {
    for (const name of [
      'GITHUB_TOKEN',
      'GH_TOKEN',
      'HF_TOKEN',
      'ACTIONS_CACHE_URL',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'CLOUDSDK_CORE_PROJECT',
      'AWS_REGION',
      'ANTHROPIC_API_KEY',
      'DB_PASSWORD',
    ]) {
      expect(isRefusedName(name), name).toBe(true);
    }
    expect(isRefusedName('ANTHROPIC_API_KEY', ['ANTHROPIC_API_KEY'])).toBe(false);
    expect(isRefusedName('HTTPS_PROXY')).toBe(false);
  });
});
