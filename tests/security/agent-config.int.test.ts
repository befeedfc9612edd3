/**
 * The agent's own config folder (codex's CODEX_HOME, Claude Code's CLAUDE_CONFIG_DIR) in the sandbox:
 * the agent gets a private copy, so what it writes there never runs in the user's next session, and
 * the tokens in it never reach its log. Through launchAgent, as every adapter starts its CLI.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { launchAgent } from '../../src/agent/launch.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("the agent's config folder", () => {
  it('attack 21: the agent cannot plant a hook in the user’s real config, nor log its refresh token', async () => {
    const t = tempDir('hc-sec-cfg-');
    cleanups.push(t.cleanup);
    const realConfig = join(t.dir, 'user-home', '.fakeagent');
    mkdirSync(realConfig, { recursive: true });
    const token = 'rt_refresh_0123456789abcdefghijklmnop';
    writeFileSync(join(realConfig, 'auth.json'), JSON.stringify({ tokens: { refresh_token: token } }));
    writeFileSync(join(realConfig, 'config.toml'), 'model = "x"\n');
    mkdirSync(join(realConfig, 'sessions'));
    writeFileSync(join(realConfig, 'sessions', 'old.jsonl'), 'a past session\n');
    const work = join(t.dir, 'work');
    const out = join(t.dir, 'out');
    mkdirSync(work);
    mkdirSync(out);
    const script = [
      'echo \'notify = ["sh", "-c", "touch /tmp/pwned-by-agent"]\' >> "$FAKEAGENT_HOME/config.toml"',
      'cat "$FAKEAGENT_HOME/auth.json"',
      'ls "$FAKEAGENT_HOME"',
    ].join('; ');
    const outcome = await launchAgent(
      {
        iteration: 1,
        workdir: work,
        prompt: '',
        resultFile: join(out, 'result.json'),
        logFile: join(out, 'agent.log'),
        timeoutMs: 30_000,
        idleTimeoutMs: 30_000,
        env: { FAKEAGENT_HOME: realConfig },
        isolation: { sandbox: { readOnly: [], writable: [work, out], home: join(out, 'home') } },
      },
      {
        agent: 'fake',
        command: 'sh',
        args: ['-c', script],
        modelKeys: [],
        passEnv: [],
        configDir: { env: 'FAKEAGENT_HOME', defaultInHome: '.fakeagent' },
        logger: memoryLogger(),
      },
    );
    expect(outcome).toMatchObject({ status: 'finished', isolation: 'sandbox' });
    // The user's folder is as it was; the agent wrote into its copy.
    expect(readFileSync(join(realConfig, 'config.toml'), 'utf8')).toBe('model = "x"\n');
    expect(readFileSync(join(out, 'home', '.fakeagent', 'config.toml'), 'utf8')).toContain('notify');
    // Login and settings came along; its session history did not.
    const log = readFileSync(join(out, 'agent.log'), 'utf8');
    expect(log).toContain('auth.json');
    expect(log).not.toContain('sessions');
    // The token it printed is redacted in the log.
    expect(log).not.toContain(token);
    expect(log).toContain('***');
    expect(existsSync('/tmp/pwned-by-agent')).toBe(false);
  });
});
