// The `-- --trials N --seed S` arguments of the seeded simulations (bench:stats, bench:search).

export interface TrialsArgs {
  trials: number;
  seed: number;
}

/** Parse `--trials N --seed S` (positive integers) over `defaults`; exit 2 with usage on anything else. */
export function parseTrialsArgs(argv: readonly string[], command: string, defaults: TrialsArgs): TrialsArgs {
  const args: TrialsArgs = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    if ((flag === '--trials' || flag === '--seed') && Number.isSafeInteger(value) && value > 0) {
      args[flag === '--trials' ? 'trials' : 'seed'] = value;
      i += 1;
    } else {
      process.stderr.write(`usage: npm run ${command} [-- --trials N --seed S]; bad argument ${flag}\n`);
      process.exit(2);
    }
  }
  return args;
}
