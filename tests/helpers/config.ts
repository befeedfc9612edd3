/** The smallest valid hillclimb.yml (one target), for tests that add the section they are about. */
export const MINIMAL_CONFIG = `version: 1
targets:
  k:
    editable: [kernels/k/**]
    protected: [kernels/harness/**]
    correctness:
      cpu:
        command: ["{python}", "-m", "pytest", "kernels"]
    programs:
      module: bench
    bench:
      metric:
        path: measurements.fwd.median_ms
        direction: lower
`;

/** A config on the tpu-vm backend (two zones, fast polling), for tests that drive a fake gcloud. */
export const TPU_CONFIG = `${MINIMAL_CONFIG}compute:
  backend: tpu-vm
  tpu_vm:
    project: hc-proj
    zones: [zone-a, zone-b]
    accelerator_type: v5p-8
    runtime_version: v2-alpha-tpuv5
    poll_seconds: 0.01
    allocate_attempts: 1
`;
