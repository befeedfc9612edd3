/**
 * The user's environment for a test that runs the loop in this process (the key, the base URL, the
 * interpreter, as each CLI's docs tell people): `set` changes process.env, `restore` puts back what was
 * there before the first change of each name.
 */
export function userEnvironment(): { set(vars: Record<string, string>): void; restore(): void } {
  const saved: Record<string, string | undefined> = {};
  return {
    set(vars) {
      for (const [k, v] of Object.entries(vars)) {
        if (!(k in saved)) saved[k] = process.env[k];
        process.env[k] = v;
      }
    },
    restore() {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    },
  };
}
