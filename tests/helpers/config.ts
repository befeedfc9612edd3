/** The smallest valid hillclimb.yml (one target), for tests that add the section they are about. */
export const MINIMAL_CONFIG = `version: 1
targets:
  k:
    editable: [kernels/k/**]
    protected: [kernels/harness/**]
    correctness:
      cpu:
        command: ["{python}", "-m", "pytest", "kernels"]
    bench:
      command: ["{python}", "-m", "bench", "--out", "{metrics}"]
      metric:
        path: measurements.fwd.median_ms
        direction: lower
`;
