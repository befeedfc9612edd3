// Builds nektos/act, the GitHub Actions runner the workflow tests (tests/workflows/act/) run the real
// workflow files in, from the Go module proxy, into a cache folder of this checkout
// (node_modules/.cache/hillclimb-act/<version>-<fix>/act). Built once per checkout; every later call finds
// the binary and returns at once.
//
// It is `go install github.com/nektos/act@<version>` with these fixes, each making act do what GitHub does:
//
// - A skipped job's outputs: GitHub gives every output of a skipped job the empty string; act 0.2.89
//   leaves the job's `outputs:` templates uninterpolated, so `needs.<skipped>.outputs.x` reads as the
//   literal text `${{ steps.….outputs.… }}` (nektos/act#2467, closed "not planned"). hillclimb's workflows
//   chain attestations with `||` across jobs that may be skipped (measure-local, measure-cloud,
//   cpu-gate), so without the fix a later job gets that text as its attestation.
//   tests/workflows/act/runner.act.test.ts shows the difference.
// - A failed step's last lines: act runs a host step on a pseudo-terminal and copies its output in a
//   goroutine, but when the step exits non-zero it returns at once and closes the terminal, dropping
//   whatever the goroutine had not copied yet: on a busy machine, the `::error::` line a step prints
//   just before `exit 1`. A step that passes is drained (an end-of-transmission byte marks the end); the
//   fix drains a failed one the same way.
// - A matrix's outputs: GitHub combines the job outputs of a matrix's legs, so legs that set outputs of
//   different names (`attestation-c1`, `attestation-c2`, …) all reach the next job; act 0.2.89's legs
//   share one job whose output templates the first leg to finish replaces with its values, empty ones
//   included, so the other legs' outputs are lost (nektos/act#981, open). The fix keeps the templates;
//   every leg interpolates them and adds its non-empty values. hillclimb.yml's search (a matrix of
//   propose and cpu-gate jobs) hands each candidate's attestation on that way.
// - @actions/artifact 6 (the client of src/compute/relay-store.ts) against act's artifact server, in two
//   places where act 0.2.89 refuses what GitHub's service takes (the artifact actions the workflows pin
//   bundle an older client, which meets neither): CreateArtifact carries a `mime_type` act's copy of the
//   protocol lacks (HTTP 500, "unknown field"; the fix passes over unknown fields, protojson's
//   DiscardUnknown), and the client's blob library (@azure/storage-blob 12.32) drops the `=` padding of
//   the upload URL's base64 `sig`, which act then fails to decode ("Error unauthorized", nektos/act#6021;
//   the fix decodes it with or without the padding). tests/workflows/act/relay-store.act.test.ts fails
//   on a build without them.
//
// The source comes from the module proxy (`go mod download`, checked against go.sum's database like
// `go install`), the fixes are applied to a copy, and `go build` builds the copy.
//
// Usage: node scripts/build-act.mjs
//   exit 0: the binary's path is the last line of stdout (stderr says whether it was built, and how long
//           that took);
//   exit 3: Go is not installed, so there is nothing to build the runner with (the reason on stderr);
//           the workflow tests skip with that reason;
//   exit 1: the build failed (go's own output on stderr).
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = 'v0.2.89';
/** Bump when the fix below changes, so an old build is not reused. */
const FIX = 'hc4';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'node_modules', '.cache', 'hillclimb-act', `${VERSION}-${FIX}`);
const binary = join(dir, 'act');
const GO_MISSING = 3;

const FIXES = [
  {
    // A skipped job's outputs become empty strings, as on GitHub (nektos/act#2467).
    file: join('pkg', 'runner', 'run_context.go'),
    find: '\tif !runJob {\n\t\trc.result("skipped")\n',
    replace:
      '\tif !runJob {\n\t\trc.result("skipped")\n' +
      '\t\t// hillclimb: GitHub gives every output of a skipped job the empty string (nektos/act#2467).\n' +
      '\t\tfor k := range job.Outputs {\n\t\t\tjob.Outputs[k] = ""\n\t\t}\n',
  },
  {
    // A failed host step's output is drained from its terminal before the terminal is closed.
    file: join('pkg', 'container', 'host_environment.go'),
    find: '\terr = cmd.Run()\n\tif err != nil {\n\t\treturn err\n\t}\n\tif tty != nil {\n',
    replace:
      '\terr = cmd.Run()\n' +
      "\t// hillclimb: a failed step's last lines are drained too, not dropped with the terminal.\n" +
      '\tif tty != nil {\n',
  },
  {
    // A matrix's legs add their outputs to the job's instead of the first leg fixing them all (nektos/act#981).
    file: join('pkg', 'runner', 'run_context.go'),
    find: '\t"strings"\n\t"time"\n',
    replace: '\t"strings"\n\t"sync"\n\t"time"\n',
  },
  {
    file: join('pkg', 'runner', 'run_context.go'),
    find:
      'func (rc *RunContext) interpolateOutputs() common.Executor {\n' +
      '\treturn func(ctx context.Context) error {\n' +
      '\t\tee := rc.NewExpressionEvaluator(ctx)\n' +
      '\t\tfor k, v := range rc.Run.Job().Outputs {\n' +
      '\t\t\tinterpolated := ee.Interpolate(ctx, v)\n' +
      '\t\t\tif v != interpolated {\n' +
      '\t\t\t\trc.Run.Job().Outputs[k] = interpolated\n' +
      '\t\t\t}\n' +
      '\t\t}\n',
    replace:
      '// hillclimb: the legs of a matrix share one job: each interpolates the output templates (kept from\n' +
      "// before the first leg finished) and adds its non-empty values, as GitHub combines a matrix's outputs.\n" +
      'var hcOutputsMu sync.Mutex\n' +
      'var hcOutputTemplates = map[*model.Job]map[string]string{}\n\n' +
      'func (rc *RunContext) interpolateOutputs() common.Executor {\n' +
      '\treturn func(ctx context.Context) error {\n' +
      '\t\tee := rc.NewExpressionEvaluator(ctx)\n' +
      '\t\tjob := rc.Run.Job()\n' +
      '\t\thcOutputsMu.Lock()\n' +
      '\t\tdefer hcOutputsMu.Unlock()\n' +
      '\t\ttemplates, ok := hcOutputTemplates[job]\n' +
      '\t\tif !ok {\n' +
      '\t\t\ttemplates = make(map[string]string, len(job.Outputs))\n' +
      '\t\t\tfor k, v := range job.Outputs {\n' +
      '\t\t\t\ttemplates[k] = v\n' +
      '\t\t\t}\n' +
      '\t\t\thcOutputTemplates[job] = templates\n' +
      '\t\t}\n' +
      '\t\tfor k, v := range templates {\n' +
      '\t\t\tinterpolated := ee.Interpolate(ctx, v)\n' +
      '\t\t\tif interpolated != "" || job.Outputs[k] == v {\n' +
      '\t\t\t\tjob.Outputs[k] = interpolated\n' +
      '\t\t\t}\n' +
      '\t\t}\n',
  },
  {
    // The artifact server passes over request fields it does not know (@actions/artifact 6's mime_type).
    file: join('pkg', 'artifacts', 'artifacts_v4.go'),
    find: '\terr = protojson.Unmarshal(body, req)\n',
    replace:
      "\t// hillclimb: fields of a newer protocol (@actions/artifact 6's mime_type) are passed over, as GitHub's service knows them.\n" +
      '\terr = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)\n',
  },
  {
    // A signed URL's sig is taken with or without its base64 padding (nektos/act#6021).
    file: join('pkg', 'artifacts', 'artifacts_v4.go'),
    find: '\tdsig, _ := base64.URLEncoding.DecodeString(sig)\n',
    replace:
      "\t// hillclimb: @azure/storage-blob 12.32 drops the padding of the upload URL's sig (nektos/act#6021).\n" +
      '\tdsig, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "="))\n',
  },
];

/** `go` on PATH, else the official tarball's place (often not on a non-login shell's PATH). */
function findGo() {
  for (const d of [...(process.env.PATH ?? '').split(delimiter), '/usr/local/go/bin']) {
    if (d && existsSync(join(d, 'go'))) return join(d, 'go');
  }
  return undefined;
}

function run(go, args, cwd) {
  const r = spawnSync(go, args, {
    cwd,
    env: { ...process.env, CGO_ENABLED: '0' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  return r.stdout;
}

function build(go, staging) {
  // The module's source as the proxy serves it (verified against the checksum database).
  const { Dir: source } = JSON.parse(
    run(go, ['mod', 'download', '-json', `github.com/nektos/act@${VERSION}`], root),
  );
  const src = join(staging, 'src');
  cpSync(source, src, { recursive: true });
  // The module cache is read-only; the copy must be writable to patch and build it.
  spawnSync('chmod', ['-R', 'u+w', src]);
  for (const fix of FIXES) {
    const file = join(src, fix.file);
    const text = readFileSync(file, 'utf8');
    if (text.split(fix.find).length !== 2) {
      throw new Error(`${fix.file} of act ${VERSION} does not have the expected code to fix`);
    }
    writeFileSync(file, text.replace(fix.find, fix.replace));
  }
  run(go, ['build', '-trimpath', '-o', join(staging, 'act'), '.'], src);
  rmSync(src, { recursive: true, force: true });
  chmodSync(join(staging, 'act'), 0o755);
}

function main() {
  if (existsSync(binary)) {
    process.stderr.write(`act ${VERSION}-${FIX}: up to date (${binary})\n`);
    process.stdout.write(`${binary}\n`);
    return 0;
  }
  const go = findGo();
  if (!go) {
    process.stderr.write(
      `act ${VERSION}: Go is not installed (no go on PATH or in /usr/local/go/bin), so the workflow runner cannot be built\n`,
    );
    return GO_MISSING;
  }
  // Into a fresh folder, then renamed: a build killed half way never leaves a binary that looks done.
  const staging = `${dir}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  process.stderr.write(`act ${VERSION}-${FIX}: building with ${go} from the Go module proxy…\n`);
  const started = Date.now();
  try {
    build(go, staging);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    process.stderr.write(`act ${VERSION}: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  if (existsSync(binary)) rmSync(staging, { recursive: true, force: true });
  else renameSync(staging, dir);
  process.stderr.write(`act ${VERSION}-${FIX}: built in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  process.stdout.write(`${binary}\n`);
  return 0;
}

process.exitCode = main();
