// What a verifier session of several arms costs, as `npm run bench:verdict -- --overhead-only` measures
// it, and the overhead per arm in arm-rounds that the search simulation's CostModel takes from it.

/** One verifier session timed from outside: its arms, its rounds and its wall seconds. */
export interface SessionCost {
  arms: number;
  rounds: number;
  seconds: number;
}

/** seconds ≈ fixedSeconds + perArmSeconds·arms + perArmRoundSeconds·arms·rounds. */
export interface SessionCostFit {
  /** The session's start whatever its arms: the interpreter, JAX, the target, the requests. */
  fixedSeconds: number;
  /** Each arm's loading and verification, once per session. */
  perArmSeconds: number;
  /** One arm timed once in a round (its warmup and repeats). */
  perArmRoundSeconds: number;
}

/** Solve the 3×3 system `m·x = v` (Gaussian elimination with partial pivoting); undefined if singular. */
function solve3(m: number[][], v: number[]): number[] | undefined {
  const a = m.map((row, i) => [...row, v[i]!]);
  for (let col = 0; col < 3; col++) {
    const pivot = [col, col + 1, col + 2]
      .filter((r) => r < 3)
      .reduce((best, r) => (Math.abs(a[r]![col]!) > Math.abs(a[best]![col]!) ? r : best));
    const scale = Math.max(...a.map((row) => Math.abs(row[col]!)));
    if (Math.abs(a[pivot]![col]!) <= 1e-12 * scale || scale === 0) return undefined;
    [a[col], a[pivot]] = [a[pivot]!, a[col]!];
    for (let r = 0; r < 3; r++) {
      if (r === col) continue;
      const factor = a[r]![col]! / a[col]![col]!;
      for (let c = col; c < 4; c++) a[r]![c]! -= factor * a[col]![c]!;
    }
  }
  return a.map((row, i) => row[3]! / row[i]!);
}

/**
 * Least-squares fit of `seconds = fixed + perArm·arms + perArmRound·arms·rounds` to measured sessions.
 * Throws unless the sessions span at least two arm counts and two round counts (otherwise the three
 * terms cannot be told apart).
 */
export function fitSessionCost(sessions: readonly SessionCost[]): SessionCostFit & { residuals: number[] } {
  const rows = sessions.map((s) => [1, s.arms, s.arms * s.rounds]);
  const normal = [0, 1, 2].map((i) => [0, 1, 2].map((j) => rows.reduce((sum, r) => sum + r[i]! * r[j]!, 0)));
  const rhs = [0, 1, 2].map((i) => rows.reduce((sum, r, k) => sum + r[i]! * sessions[k]!.seconds, 0));
  const x = solve3(normal, rhs);
  if (x === undefined) {
    throw new Error(
      `fitSessionCost: ${sessions.length} session(s) cannot separate the fixed, per-arm and per-arm-round costs; measure at least two arm counts and two round counts`,
    );
  }
  const [fixedSeconds, perArmSeconds, perArmRoundSeconds] = x as [number, number, number];
  const residuals = sessions.map(
    (s) => s.seconds - (fixedSeconds + perArmSeconds * s.arms + perArmRoundSeconds * s.arms * s.rounds),
  );
  return { fixedSeconds, perArmSeconds, perArmRoundSeconds, residuals };
}

/**
 * The overhead per arm, in arm-rounds, of a session of `arms` arms: the simulation charges a session
 * arms·(overhead + rounds) arm-rounds, so overhead = (fixed/arms + perArm) / perArmRound.
 */
export function overheadArmRounds(fit: SessionCostFit, arms: number): number {
  return (fit.fixedSeconds / arms + fit.perArmSeconds) / fit.perArmRoundSeconds;
}

/**
 * The CPU-time fit of `npm run bench:verdict -- --overhead-only` on the gdn tiny target (tiny kernel and
 * model, CPU, Pallas interpret mode, the verifier pinned to one core) at the target's
 * `bench.min_time_ms` of 1000 (100 calls of the kernel's programs a round, 20 of the model step): 8
 * sessions of 2–5 arms at 1 and 5 rounds, 2026-12-07 on the 2-core dev VM at load 1.1–1.3, RMS residual
 * 2.2 s (the wall's: 6.22 + 1.78·arms + 2.122·arms·rounds). bench:search takes it as the sessions' real
 * overhead: 2.33 arm-rounds per arm for 2 arms, 1.43 for 5. A round of 10 calls of every program
 * (`min_time_ms` 0) costs a fifth as much, so the same start is more of them: 40 sessions pooled at load
 * 1.1–3.7 fitted 2.74 + 1.09·arms + 0.395·arms·rounds, 6.23 arm-rounds per arm for 2 arms, 4.15 for 5
 * (README, "Seconds per verdict").
 */
export const MEASURED_SHARED_SESSION: SessionCostFit & { source: string } = {
  fixedSeconds: 6.39,
  perArmSeconds: 1.75,
  perArmRoundSeconds: 2.121,
  source:
    'bench:verdict --overhead-only at min_time_ms 1000, CPU time of 8 sessions at load 1.1–1.3, 2026-12-07',
};
