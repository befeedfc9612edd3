/**
 * Attacks from inside the sandbox (src/exec/sandbox.ts), each run as a real sandboxed process. Every
 * test fails if the attack gets through. The sandbox must be available here: CI runs on the same
 * machines, and a skip would hide a broken defence.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/exec/exec.js';
import { type SandboxSpec, sandboxAvailability, sandboxCommand } from '../../src/exec/sandbox.js';
import { tempDir } from '../helpers/paths.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function scratch(): string {
  const t = tempDir('hc-sandbox-');
  cleanups.push(t.cleanup);
  return t.dir;
}

/** Run a shell script in a sandbox; returns exit code and output. */
async function inSandbox(
  spec: SandboxSpec,
  script: string,
  opts: { env?: Record<string, string>; input?: string } = {},
) {
  const { command, args } = sandboxCommand(spec, 'sh', ['-c', script]);
  return run(command, args, {
    allowedExitCodes: 'any',
    timeoutMs: 60_000,
    env: opts.env,
    input: opts.input,
  });
}

beforeAll(async () => {
  const a = await sandboxAvailability();
  if (!a.available) throw new Error(`the sandbox is not available on this machine: ${a.reason}`);
});

describe('the sandbox', () => {
  it('runs the command in its working directory with its stdin, output and exit code', async () => {
    const wd = scratch();
    writeFileSync(join(wd, 'f.txt'), 'hello\n');
    const r = await inSandbox({ cwd: wd, readOnly: [wd], writable: [] }, 'pwd; cat f.txt; cat; exit 3', {
      input: 'from stdin\n',
    });
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe(`${wd}\nhello\nfrom stdin\n`);
  });

  it('keeps read-only paths read-only and lets only the writable ones be written', async () => {
    const wd = scratch();
    const out = scratch();
    writeFileSync(join(wd, 'kernel.py'), 'x = 1\n');
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [out] },
      `echo hacked > kernel.py; echo "ro=$?"; echo result > ${out}/metrics.json; echo "rw=$?"; echo t > /tmp/t && echo "tmp=$?"`,
    );
    expect(r.stdout).toMatch(/ro=[1-9]/);
    expect(r.stdout).toContain('rw=0');
    expect(r.stdout).toContain('tmp=0');
    expect(readFileSync(join(wd, 'kernel.py'), 'utf8')).toBe('x = 1\n');
    expect(readFileSync(join(out, 'metrics.json'), 'utf8')).toBe('result\n');
  });

  it('keeps read-only paths read-only when its stage or a listed path is reached through a link', async () => {
    // mountinfo names mounts by their real paths: a link in the stage's path (a TMPDIR through a link)
    // or in a listed path's must not leave the read-only mount writable.
    const wd = scratch();
    writeFileSync(join(wd, 'kernel.py'), 'x = 1\n');
    const links = scratch();
    mkdirSync(join(links, 'stage'));
    symlinkSync(join(links, 'stage'), join(links, 'stage-link'));
    symlinkSync(wd, join(links, 'wd-link'));
    for (const listed of [wd, join(links, 'wd-link')]) {
      const { command, args } = sandboxCommand({ cwd: listed, readOnly: [listed], writable: [] }, 'sh', [
        '-c',
        'echo hacked > kernel.py; echo "ro=$?"',
      ]);
      const at = args.indexOf('hillclimb-sandbox') + 1;
      args[at] = join(links, 'stage-link');
      const r = await run(command, args, { allowedExitCodes: 'any', timeoutMs: 60_000 });
      expect(`${r.stdout}${r.stderr}`).toMatch(/ro=[1-9]/);
      expect(readFileSync(join(wd, 'kernel.py'), 'utf8')).toBe('x = 1\n');
    }
  });

  it('shows nothing that is not listed: HOME, sibling folders, the runner temp folder', async () => {
    const wd = scratch();
    const secretDir = scratch();
    writeFileSync(join(secretDir, 'credentials.json'), '{"token":"sk-do-not-leak"}');
    const home = process.env.HOME ?? '/root';
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      `cat ${secretDir}/credentials.json; ls ${home}; ls /work /home /root /mnt 2>&1; echo done`,
    );
    expect(r.stdout + r.stderr).not.toContain('sk-do-not-leak');
    expect(r.stdout).toContain('done');
    expect(r.stderr).toMatch(/No such file or directory/);
  });

  it("cannot read the harness's environment through /proc (its own PID namespace)", async () => {
    const wd = scratch();
    const marker = `HC_PARENT_SECRET_${process.pid}`;
    process.env[marker] = 'ghs_parent-token-value';
    cleanups.push(() => delete process.env[marker]);
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      `cat /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'; for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null | tr '\\0' '\\n'; done; echo pids: $(ls /proc | grep -c '^[0-9]')`,
      // The harness's variables do not even reach the sandbox's own environment unless passed.
      { env: { [marker]: undefined as unknown as string } },
    );
    expect(r.stdout).not.toContain('ghs_parent-token-value');
    const pids = Number(/pids: (\d+)/.exec(r.stdout)?.[1]);
    expect(pids).toBeGreaterThan(0);
    expect(pids).toBeLessThan(10);
  });

  it('cannot write a file it only knows the path of (GITHUB_OUTPUT in the runner temp folder)', async () => {
    const wd = scratch();
    const runnerTemp = scratch();
    const outputFile = join(runnerTemp, 'set_output_1234');
    writeFileSync(outputFile, '');
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      `echo "attestation=forged" >> "$GITHUB_OUTPUT"; echo "rc=$?"`,
      { env: { GITHUB_OUTPUT: outputFile } },
    );
    expect(r.stdout).toMatch(/rc=[1-9]/);
    expect(readFileSync(outputFile, 'utf8')).toBe('');
  });

  it('kills every process the command leaves behind, even one in a new session', async () => {
    const wd = scratch();
    const out = scratch();
    const marker = `hc-orphan-${process.pid}-${Date.now()}`;
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [out] },
      `setsid sh -c 'sleep 300; : ${marker}' </dev/null >/dev/null 2>&1 & nohup sh -c 'sleep 300; echo late > ${out}/late' >/dev/null 2>&1 & echo started`,
    );
    expect(r.stdout).toContain('started');
    // Give the kernel a moment to reap, then look for the orphan anywhere on the machine.
    await new Promise((res) => setTimeout(res, 300));
    const alive = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker);
        } catch {
          return false;
        }
      });
    expect(alive).toEqual([]);
    expect(existsSync(join(out, 'late'))).toBe(false);
  });

  it('dies with the harness, even one killed by SIGKILL: nothing of it is left (issue 35)', async () => {
    const wd = scratch();
    const marker = `hc-pdeath-${process.pid}-${Date.now()}`;
    const orphan = `sleep 300; : ${marker}`;
    const script = `setsid sh -c '${orphan}' & ${orphan}`;
    const { command, args } = sandboxCommand({ cwd: wd, readOnly: [wd], writable: [] }, 'sh', ['-c', script]);
    // The harness stands in as a shell that starts the sandbox and waits; it is killed, not stopped.
    const harness = spawn('sh', ['-c', '"$@" & wait', 'harness', command, ...args], { stdio: 'ignore' });
    /** Command lines naming the marker, of processes inside the sandbox only when `insideOnly`. */
    const alive = (insideOnly = false) =>
      readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .flatMap((p) => {
          try {
            const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8');
            if (!cmdline.includes(marker)) return [];
            // Inside the sandbox: a PID in a namespace of its own too (NSpid lists two).
            const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1];
            return !insideOnly || (nspid ?? '').trim().split(/\s+/).length > 1 ? [cmdline] : [];
          } catch {
            return [];
          }
        });
    // The command and its own orphan (new session) run inside before the harness is killed: waited for
    // by their exact command lines, since a shell's child holds its parent's until it execs (a loaded
    // machine caught that window with a count).
    const running = () => {
      const inside = alive(true);
      return inside.includes(`sh\0-c\0${script}\0`) && inside.includes(`sh\0-c\0${orphan}\0`);
    };
    for (let i = 0; !running() && i < 600; i++) await new Promise((r) => setTimeout(r, 50));
    expect(running()).toBe(true);
    process.kill(harness.pid!, 'SIGKILL');
    for (let i = 0; alive().length > 0 && i < 600; i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive()).toEqual([]);
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((s) => s.end('reached\n'));
      await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => server.close());

    const probe = (p: number) =>
      `python3 -c "import socket; s = socket.create_connection(('127.0.0.1', ${p}), timeout=5); print(s.recv(10).decode())" 2>&1 || echo unreachable`;

    it('has none by default: not even the host loopback', async () => {
      const wd = scratch();
      const r = await inSandbox({ cwd: wd, readOnly: [wd], writable: [] }, probe(port));
      expect(r.stdout).not.toContain('reached');
      expect(r.stdout).toContain('unreachable');
    });

    it('shares the host network only when asked', async () => {
      const wd = scratch();
      const r = await inSandbox({ cwd: wd, readOnly: [wd], writable: [], network: 'host' }, probe(port));
      expect(r.stdout).toContain('reached');
    });

    describe('with a forward to a socket outside (the agent and its key proxy)', () => {
      let socketServer: Server;
      let socket: string;
      let abstractServer: Server;
      const abstractName = `hillclimb-test-${process.pid}`;
      beforeAll(async () => {
        socket = join(scratch(), 'proxy.sock');
        socketServer = createServer((s) => s.end('forwarded\n'));
        await new Promise<void>((res) => socketServer.listen(socket, res));
        abstractServer = createServer((s) => s.end('abstract reached\n'));
        await new Promise<void>((res) => abstractServer.listen(`\0${abstractName}`, res));
      });
      afterAll(() => {
        socketServer.close();
        abstractServer.close();
      });

      // Node.js on both ends: it binds an abstract name padded to the full address length, as it connects.
      const abstractProbe = `'${process.execPath}' -e 'const s = require("node:net").connect("\\0${abstractName}"); s.on("data", (d) => console.log(String(d))); s.on("error", () => console.log("unreachable"))'`;

      it('reaches the socket on its loopback port, and nothing else: not the host loopback, not an abstract socket', async () => {
        const wd = scratch();
        const r = await inSandbox(
          { cwd: wd, readOnly: [wd], writable: [], network: { port: 4321, socket } },
          `${probe(4321)}; ${probe(port)}; ${abstractProbe}; exit 3`,
        );
        expect(r.exitCode).toBe(3);
        expect(r.stdout).toContain('forwarded');
        expect(r.stdout).not.toContain('reached');
        expect(r.stdout.match(/unreachable/g)).toHaveLength(2);
      });

      it('the host can reach the abstract socket the sandbox cannot (the probe itself works)', async () => {
        const wd = scratch();
        const r = await inSandbox({ cwd: wd, readOnly: [wd], writable: [], network: 'host' }, abstractProbe);
        expect(r.stdout).toContain('abstract reached');
      });

      it('passes the command its stdin and its exit code', async () => {
        const wd = scratch();
        const r = await inSandbox(
          { cwd: wd, readOnly: [wd], writable: [], network: { port: 4321, socket } },
          'read line; echo "got $line"; exit 7',
          { input: 'hello\n' },
        );
        expect(r).toMatchObject({ exitCode: 7, stdout: 'got hello\n' });
      });
    });
  });

  it('cannot undo its read-only mounts, unmount them or gain capabilities in a new namespace', async () => {
    const wd = scratch();
    writeFileSync(join(wd, 'kernel.py'), 'x = 1\n');
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      [
        `mount -o remount,rw ${wd} 2>/dev/null && echo REMOUNTED`,
        `umount -l ${wd} 2>/dev/null && echo UNMOUNTED`,
        `unshare --user --map-root-user --mount sh -c 'mount -o remount,bind,rw ${wd} && echo NESTED-REMOUNT' 2>/dev/null`,
        'grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status',
        'grep NoNewPrivs /proc/self/status',
        `echo hacked > ${wd}/kernel.py 2>/dev/null && echo WROTE`,
      ].join('; '),
    );
    expect(r.stdout).not.toMatch(/REMOUNTED|UNMOUNTED|NESTED-REMOUNT|WROTE/);
    expect(r.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(r.stdout).toMatch(/CapBnd:\s+0+\n/);
    expect(r.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(readFileSync(join(wd, 'kernel.py'), 'utf8')).toBe('x = 1\n');
  });

  it('cannot open a kernel setting for writing, even where hillclimb runs as root (core_pattern runs as host root)', async () => {
    const wd = scratch();
    // Opened and closed, never written: on a host where this succeeds nothing changes, but the test fails.
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      `python3 -c "open('/proc/sys/kernel/core_pattern', 'a').close(); print('WRITABLE')" 2>&1; python3 -c "open('/proc/sysrq-trigger', 'a').close(); print('WRITABLE')" 2>&1; echo done`,
    );
    expect(r.stdout).toContain('done');
    expect(r.stdout).not.toContain('WRITABLE');
    expect(r.stdout).toMatch(/Read-only file system|Permission denied/);
  });

  it('hands the command no descriptor but its standard three', async () => {
    const wd = scratch();
    // A program that lists its own open descriptors (a shell would add its own).
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      `python3 -c "import os; print(' '.join(sorted(os.listdir('/proc/self/fd'), key=int)))"`,
    );
    // 0-2, and the one listdir itself opens on /proc/self/fd.
    expect(
      r.stdout
        .trim()
        .split(' ')
        .map(Number)
        .filter((fd) => fd > 3),
    ).toEqual([]);
  });

  it('masks credential files under /etc', async () => {
    const wd = scratch();
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      'cat /etc/shadow | wc -c; ls /etc/ssh | wc -l',
    );
    expect(r.stdout.trim().split('\n')).toEqual(['0', '0']);
  });

  it('refuses a path it could not pass through the mount table unambiguously', () => {
    expect(() => sandboxCommand({ cwd: '/tmp', readOnly: ['/tmp/a\nb'], writable: [] }, 'true', [])).toThrow(
      /line break/,
    );
    expect(() =>
      sandboxCommand({ cwd: '/tmp', readOnly: ['relative/path'], writable: [] }, 'true', []),
    ).toThrow(/absolute/);
  });

  it('handles folder names with spaces (read-only stays read-only)', async () => {
    const base = scratch();
    const wd = join(base, 'my kernels');
    mkdirSync(wd);
    writeFileSync(join(wd, 'k.py'), 'x = 1\n');
    const r = await inSandbox(
      { cwd: wd, readOnly: [wd], writable: [] },
      'cat k.py; echo y > k.py 2>/dev/null && echo WROTE',
    );
    expect(r.stdout).toBe('x = 1\n');
  });
});
