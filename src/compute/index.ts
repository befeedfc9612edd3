/**
 * Compute backends (local, ray, tpu-vm) behind the Backend interface, and the TPU lifecycle. Other
 * modules import from this entry, never from its files.
 */
export type { Backend, BackendInfo, JobOutputs, JobResult, JobSpec } from './backend.js';
export { EPHEMERAL_CACHE_KEY, VERIFIER_CACHE_KEY } from './backend.js';
export { buildBackend, buildCpuBackend, tpuStateDirFor } from './factory.js';
export { sampleMachine } from './machine-load.js';
export { artifactRelayStore, folderRelayStore, type RelayStore } from './relay-store.js';
export { serviceAccountEmail } from './tpu/commands.js';
export { gcloudCli } from './tpu/gcloud.js';
export type { JanitorReport, ReleaseReport, TpuContext } from './tpu/lifecycle.js';
export {
  allocateTpu,
  defaultRunId,
  janitorSweep,
  releaseRecorded,
  releaseTpu,
  tpuNames,
  tpuStatus,
} from './tpu/lifecycle.js';
export type { TpuAllocation } from './tpu/state.js';
export { readRecords, writeRecord } from './tpu/state.js';
