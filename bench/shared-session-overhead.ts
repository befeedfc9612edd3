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
 * model, CPU, Pallas interpret mode, the verifier pinned to one core), three runs pooled: 40 sessions
 * of 2–5 arms at 1 and 5 rounds, 2026-12-07 on the 2-core dev VM at load 1.1–3.7, RMS residual 0.55 s
 * (the runs alone: 2.05 + 1.29·arms + 0.398·arms·rounds, 2.53 + 1.09·arms + 0.397·arms·rounds and
 * 4.53 + 0.69·arms + 0.385·arms·rounds; the wall pooled: 2.85 + 1.06·arms + 0.411·arms·rounds).
 * bench:search takes it as the sessions' real overhead: 6.23 arm-rounds per arm for 2 arms, 4.49 for 4.
 * (A run at load 2.6–6.0 fitted 4.22 + 0.82·arms + 0.467·arms·rounds on CPU time: 6.26 and 4.01;
 * README, "Seconds per verdict".)
 */
export const MEASURED_SHARED_SESSION: SessionCostFit & { source: string } = {
  fixedSeconds: 2.74,
  perArmSeconds: 1.09,
  perArmRoundSeconds: 0.395,
  source: 'bench:verdict --overhead-only, CPU time of 40 sessions at load 1.1–3.7, 2026-12-07',
};
