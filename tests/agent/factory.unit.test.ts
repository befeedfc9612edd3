import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { agents, buildAgent, checkAgentInstalled } from '../../src/agent/factory.js';
import { parseConfig } from '../../src/config/load.js';
import type { HillclimbConfig } from '../../src/config/types.js';
import { ConfigError, HillclimbError, UnknownNameError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir();
mkdirSync(join(t.dir, 'examples', 'replay', 'gdn'), { recursive: true });
afterAll(() => t.cleanup());

const TARGET = MINIMAL_CONFIG;

function config(agentYaml = ''): HillclimbConfig {
  return parseConfig(`${TARGET}${agentYaml}`, join(t.dir, 'hillclimb.yml'));
}

const opts = { root: t.dir, logger: memoryLogger() };

describe('agent config keys', () => {
  it('defaults pass_env to [] and leaves claude.allowed_tools to the adapter', () => {
    const c = config();
    expect(c.agent.pass_env).toEqual([]);
    expect(c.agent.claude.allowed_tools).toBeUndefined();
  });

  it('accepts pass_env and claude.allowed_tools', () => {
    const c = config(`agent:
  kind: claude
  pass_env: [HTTPS_PROXY, NO_PROXY]
  claude:
    allowed_tools: ["Read", "Bash(pytest:*)"]
`);
    expect(c.agent.pass_env).toEqual(['HTTPS_PROXY', 'NO_PROXY']);
    expect(c.agent.claude.allowed_tools).toEqual(['Read', 'Bash(pytest:*)']);
  });

  it('rejects a pass_env entry that is not a variable name, naming the key path', () => {
    const e = (() => {
      try {
        config('agent:\n  pass_env: ["A=B"]\n');
      } catch (err) {
        return err as ConfigError;
      }
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect(e!.keyPath).toBe('agent.pass_env.0');
  });
});

describe('buildAgent', () => {
  it.each([
    ['codex', 'agent:\n  kind: codex\n'],
    ['claude', 'agent:\n  kind: claude\n'],
    ['command', 'agent:\n  kind: command\n  command:\n    command: [my-agent, --fast]\n'],
    ['replay', ''],
  ])('builds the %s agent from config', (name, yaml) => {
    expect(buildAgent(config(yaml), opts).name).toBe(name);
  });

  it('resolves the replay folder against the project root', () => {
    const c = config('agent:\n  replay:\n    dir: missing/patches\n');
    expect(() => buildAgent(c, opts)).toThrow(join(t.dir, 'missing', 'patches'));
  });

  it("reads a target's own replay folder (<dir>/<target>) when it has one, else the folder itself", async () => {
    const dir = join(t.dir, 'two', 'replay');
    mkdirSync(join(dir, 'mm'), { recursive: true });
    writeFileSync(join(dir, 'mm', '0001-tile.patch'), '# tile\n');
    const c = config('agent:\n  replay:\n    dir: two/replay\n');
    // Past the last patch the agent says which folder it read, and how many patches it found there.
    const said = async (target: string) => {
      const logFile = join(t.dir, 'logs', `${target}.log`);
      const outcome = await buildAgent(c, { ...opts, target }).run({
        iteration: 2,
        workdir: t.dir,
        prompt: '',
        resultFile: join(t.dir, 'logs', `${target}.json`),
        logFile,
        timeoutMs: 1000,
        idleTimeoutMs: 1000,
        env: {},
      });
      expect(outcome.status).toBe('finished');
      return readFileSync(logFile, 'utf8');
    };
    expect(await said('mm')).toContain(`(1 in ${join(dir, 'mm')})`);
    expect(await said('k')).toContain(`(0 in ${dir})`);
  });

  it('refuses an unknown kind with the sorted list of known ones', () => {
    const c = config();
    (c.agent as { kind: string }).kind = 'gpt-in-a-box';
    const err = (() => {
      try {
        buildAgent(c, opts);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(UnknownNameError);
    expect(err!.message).toBe('unknown agent "gpt-in-a-box"; known: claude, codex, command, replay');
  });

  it('refuses a token in pass_env before any agent runs', () => {
    const c = config('agent:\n  kind: codex\n  pass_env: [HTTPS_PROXY, GITHUB_TOKEN, AWS_ACCESS_KEY_ID]\n');
    expect(() => buildAgent(c, opts)).toThrow(ConfigError);
    expect(() => buildAgent(c, opts)).toThrow(/agent\.pass_env: GITHUB_TOKEN, AWS_ACCESS_KEY_ID/);
  });

  it('lists kinds sorted and accepts registered ones', () => {
    expect(agents.names()).toEqual(['claude', 'codex', 'command', 'replay']);
    const fake: Agent = {
      name: 'fake',
      run: async () => ({ status: 'finished', exitCode: 0, logFile: '', durationMs: 0 }),
    };
    agents.register('fake', () => fake);
    try {
      const c = config();
      (c.agent as { kind: string }).kind = 'fake';
      expect(buildAgent(c, opts)).toBe(fake);
      expect(agents.names()).toContain('fake');
    } finally {
      agents.unregister('fake');
    }
    expect(agents.names()).not.toContain('fake');
  });
});

describe('checkAgentInstalled', () => {
  it('passes when the program is on PATH, and for the replay agent and scripts in the repository', () => {
    expect(() =>
      checkAgentInstalled(config('agent:\n  kind: command\n  command: {command: ["sh", "x"]}\n')),
    ).not.toThrow();
    expect(() => checkAgentInstalled(config('agent:\n  kind: replay\n'))).not.toThrow();
    expect(() =>
      checkAgentInstalled(config('agent:\n  kind: command\n  command: {command: ["./agents/mine.sh"]}\n')),
    ).not.toThrow();
  });

  it('fails before the loop starts when the agent CLI is missing, naming the key and how to install it', () => {
    const c = config('agent:\n  kind: codex\n  codex: {binary: hc-no-such-codex}\n');
    let error: unknown;
    try {
      checkAgentInstalled(c);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HillclimbError);
    expect((error as HillclimbError).message).toBe(
      'agent codex: "hc-no-such-codex" is not installed (not found on PATH)',
    );
    expect((error as HillclimbError).hint).toBe(
      `install it (npm i -g @openai/codex) or point agent.codex.binary in ${c.file} at the program`,
    );
    expect((error as HillclimbError).exitCode).toBe(1);
    expect(() =>
      checkAgentInstalled(config('agent:\n  kind: command\n  command: {command: ["/nonexistent/agent"]}\n')),
    ).toThrow(/agent command: "\/nonexistent\/agent" is not installed/);
  });
});
