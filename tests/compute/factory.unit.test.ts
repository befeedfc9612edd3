import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/compute/backend.js';
import { LocalBackend } from '../../src/compute/backends/local.js';
import { RayBackend } from '../../src/compute/backends/ray.js';
import { TpuVmBackend } from '../../src/compute/backends/tpu-vm.js';
import { backends, buildBackend, tpuStateDirFor } from '../../src/compute/factory.js';
import type { BackendKind, HillclimbConfig } from '../../src/config/types.js';
import { ConfigError, UnknownNameError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { configWith } from './helpers.js';

const opts = { root: '/repo', logger: memoryLogger() };

describe('backend factory', () => {
  it('lists the backends sorted', () => {
    expect(backends.names()).toEqual(['local', 'ray', 'tpu-vm']);
  });

  it('builds the backend compute.backend names', () => {
    expect(buildBackend(configWith('  backend: local\n'), opts)).toBeInstanceOf(LocalBackend);
    expect(
      buildBackend(configWith('  backend: ray\n  ray:\n    address: http://127.0.0.1:8265\n'), opts),
    ).toBeInstanceOf(RayBackend);
    const tpu = configWith(
      '  backend: tpu-vm\n  tpu_vm:\n    project: p\n    zones: [z]\n    accelerator_type: v5p-8\n    runtime_version: v2\n',
    );
    const b = buildBackend(tpu, { ...opts, runId: 'r1' });
    expect(b).toBeInstanceOf(TpuVmBackend);
    expect(b.info()).toMatchObject({ backend: 'tpu-vm', acceleratorType: 'v5p-8', hasAccelerator: true });
    expect(tpuStateDirFor(tpu)).toBe('/repo/.hillclimb/tpu');
  });

  it('names the valid backends for an unknown name', () => {
    const config = { ...configWith('  backend: local\n') };
    config.compute = { backend: 'slurm' as BackendKind };
    const err = (() => {
      try {
        buildBackend(config as HillclimbConfig, opts);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnknownNameError);
    expect((err as Error).message).toBe('unknown compute backend "slurm"; known: local, ray, tpu-vm');
  });

  it('a backend without its section is a config error naming the key', () => {
    const config = configWith('  backend: local\n');
    config.compute = { backend: 'ray' };
    expect(() => buildBackend(config, opts)).toThrow(ConfigError);
    expect(() => buildBackend(config, opts)).toThrow(/compute\.ray/);
  });

  it('can register and unregister a backend', () => {
    const fake = { name: 'x' } as unknown as Backend;
    backends.register('zz-test', () => fake);
    try {
      expect(backends.names()).toEqual(['local', 'ray', 'tpu-vm', 'zz-test']);
      const config = configWith('  backend: local\n');
      config.compute = { backend: 'zz-test' as BackendKind };
      expect(buildBackend(config, opts)).toBe(fake);
    } finally {
      backends.unregister('zz-test');
    }
    expect(backends.names()).toEqual(['local', 'ray', 'tpu-vm']);
  });
});
