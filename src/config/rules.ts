/**
 * Cross-field rules: pure functions over a schema-valid config. Each problem names the keys involved.
 */
import type { ConfigProblem } from './load.js';
import type { HillclimbConfig } from './types.js';

/** Every placeholder the engine fills in commands. */
export const PLACEHOLDERS = ['python', 'metrics', 'junit', 'trace', 'root', 'cache'] as const;

export function crossFieldProblems(config: HillclimbConfig): ConfigProblem[] {
  return [
    ...loopTargetExists(config),
    ...backendSections(config),
    ...measureBounds(config),
    ...screenBounds(config),
    ...commandPlaceholders(config),
    ...agentSection(config),
    ...forgeAndStoreSections(config),
    ...staticCheckPatterns(config),
    ...retiredSandboxMode(config),
  ];
}

/** `sandbox.mode: auto` ran untrusted code unsandboxed without asking; the opt-out now has to be named. */
function retiredSandboxMode(c: HillclimbConfig): ConfigProblem[] {
  if ((c.sandbox.mode as string) !== 'auto') return [];
  return [
    {
      keyPath: 'sandbox.mode',
      message:
        'auto is retired: it ran the agent and candidate code unsandboxed, without asking, wherever the ' +
        'machine could not build the sandbox. Remove the key (required, the default), or, to accept that ' +
        'untrusted code runs with your rights on such a machine, set allow-unsandboxed',
    },
  ];
}

function loopTargetExists(c: HillclimbConfig): ConfigProblem[] {
  if (c.loop.target === undefined || c.targets[c.loop.target]) return [];
  return [
    {
      keyPath: 'loop.target',
      message: `names target "${c.loop.target}", but targets has only ${Object.keys(c.targets).sort().join(', ')}`,
    },
  ];
}

function backendSections(c: HillclimbConfig): ConfigProblem[] {
  if (c.compute.backend === 'ray' && !c.compute.ray) {
    return [
      {
        keyPath: 'compute.ray',
        message: 'compute.backend is ray, so compute.ray (with address) is required',
      },
    ];
  }
  if (c.compute.backend === 'tpu-vm' && !c.compute.tpu_vm) {
    return [
      { keyPath: 'compute.tpu_vm', message: 'compute.backend is tpu-vm, so compute.tpu_vm is required' },
    ];
  }
  return [];
}

function measureBounds(c: HillclimbConfig): ConfigProblem[] {
  if (c.measure.max_runs_per_arm >= c.measure.runs_per_arm) return [];
  return [
    {
      keyPath: 'measure.max_runs_per_arm',
      message: `(${c.measure.max_runs_per_arm}) is below measure.runs_per_arm (${c.measure.runs_per_arm})`,
    },
  ];
}

function screenBounds(c: HillclimbConfig): ConfigProblem[] {
  if (c.search.screen_max_rounds >= c.search.screen_rounds) return [];
  return [
    {
      keyPath: 'search.screen_max_rounds',
      message:
        `(${c.search.screen_max_rounds}) is below search.screen_rounds (${c.search.screen_rounds}): ` +
        'raise it, or set both to the same number for a screen of one session',
    },
  ];
}

function commandPlaceholders(c: HillclimbConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const check = (keyPath: string, args: readonly string[] | undefined) => {
    for (const arg of args ?? []) {
      for (const m of arg.matchAll(/\{([a-z_]+)\}/g)) {
        if (!(PLACEHOLDERS as readonly string[]).includes(m[1]!)) {
          problems.push({
            keyPath,
            message: `unknown placeholder {${m[1]}}; known: ${PLACEHOLDERS.join(', ')}`,
          });
        }
      }
    }
  };
  for (const [name, t] of Object.entries(c.targets)) {
    check(`targets.${name}.correctness.cpu.command`, t.correctness.cpu.command);
    check(`targets.${name}.correctness.accelerator.command`, t.correctness.accelerator?.command);
  }
  return problems;
}

function agentSection(c: HillclimbConfig): ConfigProblem[] {
  if (c.agent.kind === 'command' && !c.agent.command) {
    return [
      { keyPath: 'agent.command', message: 'agent.kind is command, so agent.command.command is required' },
    ];
  }
  return [];
}

function forgeAndStoreSections(c: HillclimbConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (c.forge.kind === 'github' && !c.forge.github) {
    problems.push({
      keyPath: 'forge.github',
      message: 'forge.kind is github, so forge.github.repository is required',
    });
  }
  if (c.store.kind === 'hf' && !c.store.hf) {
    problems.push({ keyPath: 'store.hf', message: 'store.kind is hf, so store.hf.repo is required' });
  }
  return problems;
}

function staticCheckPatterns(c: HillclimbConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [name, t] of Object.entries(c.targets)) {
    t.static_checks.forEach((s, i) => {
      try {
        new RegExp(s.pattern);
      } catch (e) {
        problems.push({
          keyPath: `targets.${name}.static_checks.${i}.pattern`,
          message: (e as Error).message,
        });
      }
    });
  }
  return problems;
}
