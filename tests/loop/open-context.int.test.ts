// openLoopContext is the one place a driver gets its loop context: what the role's steps use is built
// and opened (a CPU-gate job allocates no accelerator, only propose gets the agent), and close()
// releases every backend it opened, also one whose open failed half-way.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Backend } from '../../src/compute/backend.js';
import { backends } from '../../src/compute/factory.js';
import { folderRelayStore } from '../../src/compute/relay-store.js';
import { loadConfig, selectTarget } from '../../src/config/load.js';
import type { BackendKind, HillclimbConfig } from '../../src/config/types.js';
import { STEPS, type StepName } from '../../src/evidence/record.js';
import { NO_AGENT } from '../../src/loop/context.js';
import { openLoopContext } from '../../src/loop/open-context.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo } from './toy-repo.js';

/** A stand-in for an accelerator backend that records what was asked of it. */
function recordingBackend(events: string[], failOpen = false): Backend {
  return {
    name: 'zz-accelerator',
    open: async () => {
      events.push('accelerator open');
      if (failOpen) throw new Error('allocated, then lost the VM');
    },
    run: () => Promise.reject(new Error('not run here')),
    close: async () => {
      events.push('accelerator close');
    },
    info: () => ({
      backend: 'zz-accelerator',
      hasAccelerator: true,
      platform: 'tpu',
      description: 'recording',
    }),
  };
}

let repo: { dir: string; cleanup: () => void };
beforeAll(() => {
  repo = tempDir('hc-context-');
  makeToyRepo(repo.dir);
});
afterAll(() => repo.cleanup());

function config(backend: string): HillclimbConfig {
  const c = loadConfig(join(repo.dir, 'hillclimb.yml'));
  c.compute = { backend: backend as BackendKind };
  return c;
}

async function open(c: HillclimbConfig, steps: readonly StepName[]) {
  const opened = await openLoopContext(c, {
    target: selectTarget(c),
    runId: 'r1',
    steps,
    totalIterations: 1,
    prepareMayProfile: false,
    logger: memoryLogger(),
  });
  const events: string[] = [];
  vi.spyOn(opened.ctx.cpuBackend, 'open').mockImplementation(async () => void events.push('cpu open'));
  vi.spyOn(opened.ctx.cpuBackend, 'close').mockImplementation(async () => void events.push('cpu close'));
  return { ...opened, events };
}

describe('openLoopContext', () => {
  const accelerator: string[] = [];
  let failOpen = false;
  beforeAll(() => backends.register('zz-accelerator', () => recordingBackend(accelerator, failOpen)));
  afterAll(() => backends.unregister('zz-accelerator'));

  it('a CPU-gate role opens only the CPU backend, never the accelerator, and gets no agent', async () => {
    accelerator.length = 0;
    const { ctx, openBackends, close, events } = await open(config('zz-accelerator'), ['cpu-gate']);
    expect(ctx.backend.name).toBe('zz-accelerator');
    expect(ctx.cpuBackend).not.toBe(ctx.backend);
    expect(ctx.agent).toBe(NO_AGENT);
    await openBackends();
    await close();
    expect(events).toEqual(['cpu open', 'cpu close']);
    expect(accelerator).toEqual([]);
  });

  it('only a role that proposes gets the configured agent; one that runs no compute step opens nothing', async () => {
    accelerator.length = 0;
    const { ctx, openBackends, close, events } = await open(config('zz-accelerator'), [
      'prepare',
      'propose',
      'guard',
    ]);
    expect(ctx.agent.name).toBe('replay');
    await openBackends();
    await close();
    expect([...events, ...accelerator]).toEqual([]);
  });

  it("a proposing role whose agent can call the tools opens this machine's CPU for them, never the accelerator", async () => {
    accelerator.length = 0;
    const c = config('zz-accelerator');
    c.agent.kind = 'command';
    c.agent.command = { command: ['true'], network: 'none' };
    const { ctx, openBackends, close, events } = await open(c, ['prepare', 'propose', 'guard']);
    // A CI propose job holds no cloud credentials: the tools time on the runner's CPU.
    expect(ctx.toolsBackend).toBe(ctx.cpuBackend);
    await openBackends();
    await close();
    expect(events).toEqual(['cpu open', 'cpu close']);
    expect(accelerator).toEqual([]);
    c.agent.tools.enabled = false;
    const off = await open(c, ['prepare', 'propose', 'guard']);
    await off.openBackends();
    await off.close();
    expect(off.events).toEqual([]);
  });

  it("a proposing role with the tools relay times its tools' sessions on the serving machine, and opens only this CPU", async () => {
    accelerator.length = 0;
    const c = config('zz-accelerator');
    c.agent.kind = 'command';
    c.agent.command = { command: ['true'], network: 'none' };
    const opened = await openLoopContext(c, {
      target: selectTarget(c),
      runId: 'r1',
      steps: ['prepare', 'propose', 'guard'],
      totalIterations: 1,
      prepareMayProfile: false,
      logger: memoryLogger(),
      toolsRelay: { store: folderRelayStore(join(repo.dir, '.relay')), client: 'main' },
    });
    const events: string[] = [];
    vi.spyOn(opened.ctx.cpuBackend, 'open').mockImplementation(async () => void events.push('cpu open'));
    vi.spyOn(opened.ctx.cpuBackend, 'close').mockImplementation(async () => void events.push('cpu close'));
    const tools = opened.ctx.toolsBackend;
    expect(tools).not.toBe(opened.ctx.cpuBackend);
    // It describes the machine the serving job times on: the tools export for its platform.
    expect(tools.info()).toMatchObject({
      platform: 'tpu',
      hasAccelerator: true,
      description: 'recording, through the tools relay',
    });
    await opened.openBackends();
    await opened.close();
    expect(events).toEqual(['cpu open', 'cpu close']);
    // This job holds no credentials: the serving job opens the machine, never this one.
    expect(accelerator).toEqual([]);
  });

  it('a role that measures lets the tools time on the measuring backend', async () => {
    const { ctx, close } = await open(config('zz-accelerator'), [
      'prepare',
      'propose',
      'guard',
      'cpu-gate',
      'measure',
    ]);
    expect(ctx.toolsBackend).toBe(ctx.backend);
    await close();
  });

  it('a whole iteration opens both; close releases both even when the accelerator failed to open', async () => {
    accelerator.length = 0;
    failOpen = true;
    try {
      const { openBackends, close, events } = await open(config('zz-accelerator'), STEPS);
      await expect(openBackends()).rejects.toThrow('lost the VM');
      await close();
      expect(accelerator).toEqual(['accelerator open', 'accelerator close']);
      // Opening stopped at the failure; releasing still covers the CPU backend that was due to open.
      expect(events).toEqual(['cpu close']);
    } finally {
      failOpen = false;
    }
  });

  it('with the local backend the CPU gate shares it: one backend, opened once', async () => {
    const { ctx, openBackends, close, events } = await open(config('local'), STEPS);
    expect(ctx.cpuBackend).toBe(ctx.backend);
    await openBackends();
    await close();
    expect(events).toEqual(['cpu open', 'cpu close']);
  });
});
