/**
 * hillclimb.yml read, validated and typed; the schema is the one source of defaults. Other modules
 * import from this entry, never from its files.
 */
export { fillCommand, usesPlaceholder } from './command.js';
export type { ConfigOverrides } from './load.js';
export { loadConfig, parseConfig, selectTarget } from './load.js';
export { MEASURE_DEFAULTS } from './schema.js';
export type {
  CommandArgs,
  GateConfig,
  HillclimbConfig,
  RayConfig,
  SandboxConfig,
  StaticCheck,
  TargetConfig,
  TpuProvisioning,
  TpuVmConfig,
} from './types.js';
