// Bundles the CLI (dist/cli.js) and every action entry (actions/<name>/dist/index.js) with esbuild.
// `--check` rebuilds the action bundles in memory and fails if the committed ones differ.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// ESM bundles of CommonJS dependencies need a real `require`.
const banner = {
  js: "import { createRequire as __hcCreateRequire } from 'node:module'; const require = __hcCreateRequire(import.meta.url);",
};
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner,
  legalComments: 'none',
  logLevel: 'warning',
};

const check = process.argv.includes('--check');

if (!check) {
  await build({
    ...common,
    entryPoints: [join(root, 'src/cli/bin.ts')],
    outfile: join(root, 'dist/cli.js'),
    sourcemap: 'linked',
  });
}

const actionsDir = join(root, 'actions');
const stale = [];
for (const name of existsSync(actionsDir) ? readdirSync(actionsDir).sort() : []) {
  const entry = join(actionsDir, name, 'src', 'main.ts');
  if (!existsSync(entry)) continue;
  for (const part of ['main', 'post']) {
    const src = join(actionsDir, name, 'src', `${part}.ts`);
    if (!existsSync(src)) continue;
    const outfile = join(actionsDir, name, 'dist', `${part === 'main' ? 'index' : 'post'}.js`);
    const result = await build({ ...common, target: 'node24', entryPoints: [src], outfile, write: !check });
    if (check) {
      const fresh = result.outputFiles[0].text;
      const committed = existsSync(outfile) ? readFileSync(outfile, 'utf8') : '';
      if (fresh !== committed) stale.push(outfile);
    }
  }
}
if (stale.length > 0) {
  console.error(
    `action bundles out of date:\n  ${stale.join('\n  ')}\nrun: npm run build, then commit actions/*/dist`,
  );
  process.exit(1);
}
