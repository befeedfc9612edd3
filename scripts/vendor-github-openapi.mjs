// Vendors the slice of GitHub's REST OpenAPI description that hillclimb's GitHub forge calls, so the
// contract server in tests/helpers/github-contract-server.ts can validate every request without the
// 385 MB @octokit/openapi package in CI.
//
// Usage (needs @octokit/openapi installed, e.g. `npm install --no-save @octokit/openapi`):
//   node scripts/vendor-github-openapi.mjs [path/to/api.github.com.deref.json]
//
// Keeps, for each operation in OPERATIONS: operationId, summary, path/query parameters (name, in,
// required, schema) and the JSON request-body schema. Responses are not kept: the contract server
// writes its own and only requests are checked. Add an operation here before the forge starts calling it.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = '@octokit/openapi';
const DEFAULT_SOURCE = join(root, 'node_modules', PACKAGE, 'generated', 'api.github.com.deref.json');
const OUT = join(root, 'tests', 'fixtures', 'github-openapi', 'api.github.com.subset.json');

/**
 * [method, path template] of every REST operation src/forge/forges/github.ts uses, and of those the
 * workflows' own steps call through `gh` (pr-evidence's authorize job, hillclimb.yml's continue job),
 * which the workflow tests (tests/workflows/act/) send to the contract server.
 */
const OPERATIONS = [
  ['get', '/user'],
  ['get', '/repos/{owner}/{repo}/pulls'],
  ['post', '/repos/{owner}/{repo}/pulls'],
  ['patch', '/repos/{owner}/{repo}/pulls/{pull_number}'],
  ['get', '/repos/{owner}/{repo}/issues/{issue_number}/comments'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/comments'],
  ['patch', '/repos/{owner}/{repo}/issues/comments/{comment_id}'],
  ['delete', '/repos/{owner}/{repo}/issues/comments/{comment_id}'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/labels'],
  ['delete', '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}'],
  ['post', '/repos/{owner}/{repo}/labels'],
  // gh api repos/{repo}/pulls/{number}; gh api repos/{repo}/collaborators/{user}/permission
  ['get', '/repos/{owner}/{repo}/pulls/{pull_number}'],
  ['get', '/repos/{owner}/{repo}/collaborators/{username}/permission'],
  // gh workflow run hillclimb.yml --ref … -f …
  ['post', '/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches'],
];

const source = process.argv[2] ?? DEFAULT_SOURCE;
const spec = JSON.parse(readFileSync(source, 'utf8'));
const pkgVersion = JSON.parse(
  readFileSync(join(root, 'node_modules', PACKAGE, 'package.json'), 'utf8'),
).version;

const paths = {};
for (const [method, path] of OPERATIONS) {
  const op = spec.paths?.[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in ${source}`);
  const parameters = (op.parameters ?? [])
    .filter((p) => p.in === 'path' || p.in === 'query')
    .map((p) => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema }));
  const body = op.requestBody?.content?.['application/json'];
  paths[path] ??= {};
  paths[path][method] = {
    operationId: op.operationId,
    summary: op.summary,
    parameters,
    ...(body
      ? { requestBody: { required: op.requestBody.required === true, schema: stripExamples(body.schema) } }
      : {}),
  };
}

const subset = {
  openapi: spec.openapi,
  info: { title: spec.info.title, version: spec.info.version },
  'x-provenance': {
    package: `${PACKAGE}@${pkgVersion}`,
    source: relative(root, source).startsWith('..') ? source : relative(root, source),
    extracted: new Date().toISOString().slice(0, 10),
    script: 'scripts/vendor-github-openapi.mjs',
    note: 'Request side only (path/query parameters and JSON bodies) of the operations hillclimb calls.',
  },
  paths,
};
writeFileSync(OUT, `${JSON.stringify(subset, null, 2)}\n`);
console.log(`wrote ${relative(root, OUT)}: ${OPERATIONS.length} operations from ${PACKAGE}@${pkgVersion}`);

/** Examples bloat the file and are not part of the contract. */
function stripExamples(schema) {
  if (Array.isArray(schema)) return schema.map(stripExamples);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'examples' || k === 'example') continue;
    out[k] = stripExamples(v);
  }
  return out;
}
