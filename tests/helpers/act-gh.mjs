#!/usr/bin/env node
// `gh` for the workflows under nektos/act (tests/helpers/act.ts puts it first on PATH): GitHub's CLI is
// not installed here and could not reach GitHub anyway. It speaks to the API at $GITHUB_API_URL (the
// contract server) with $GH_TOKEN, as gh does with GH_HOST/GH_TOKEN, for the two commands the workflows
// run, and appends each call's arguments to $HILLCLIMB_ACT_GH_LOG (one JSON array a line):
//
//   gh api <endpoint> [--jq <filter>]      GET; prints the body, or the --jq result with strings raw
//                                          (gh's own jq prints strings unquoted); on an HTTP error prints
//                                          the body and `gh: <message> (HTTP <status>)`, exit 1
//   gh workflow run <file> --repo <owner/name> --ref <ref> [-f key=value]...
//                                          POST /repos/<repo>/actions/workflows/<file>/dispatches
//                                          (gh looks the workflow up first to get its id; the file
//                                          name is what the endpoint accepts too)
import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const argv = process.argv.slice(2);
if (process.env.HILLCLIMB_ACT_GH_LOG)
  appendFileSync(process.env.HILLCLIMB_ACT_GH_LOG, `${JSON.stringify(argv)}\n`);
const api = (process.env.GITHUB_API_URL ?? '').replace(/\/$/, '');
const token = process.env.GH_TOKEN ?? process.env.GITHUB_TOKEN ?? '';

function usage(message) {
  process.stderr.write(`gh (test stand-in): ${message}\n`);
  process.exit(2);
}

async function request(method, endpoint, body) {
  const res = await fetch(`${api}/${endpoint.replace(/^\//, '')}`, {
    method,
    headers: {
      accept: 'application/vnd.github+json',
      ...(token ? { authorization: `token ${token}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) {
    if (text) process.stdout.write(`${text}\n`);
    let message = res.statusText;
    try {
      message = JSON.parse(text).message ?? message;
    } catch {}
    process.stderr.write(`gh: ${message} (HTTP ${res.status})\n`);
    process.exit(1);
  }
  return text;
}

async function main() {
  if (!api) usage('GITHUB_API_URL is not set');
  const [command, sub, ...rest] = argv;
  if (command === 'api') {
    const endpoint = sub;
    if (!endpoint) usage('gh api <endpoint> [--jq <filter>]');
    let jq;
    for (let i = 0; i < rest.length; i++) {
      if (rest[i] === '--jq' || rest[i] === '-q') jq = rest[++i];
      else usage(`unsupported gh api argument ${rest[i]}`);
    }
    const text = await request('GET', endpoint);
    if (jq === undefined) return process.stdout.write(`${text}\n`);
    const r = spawnSync('jq', ['-r', jq], { input: text, encoding: 'utf8' });
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    process.exit(r.status ?? 1);
  }
  if (command === 'workflow' && sub === 'run') {
    const [workflow, ...flags] = rest;
    let repo;
    let ref;
    const inputs = {};
    for (let i = 0; i < flags.length; i++) {
      const flag = flags[i];
      if (flag === '--repo' || flag === '-R') repo = flags[++i];
      else if (flag === '--ref' || flag === '-r') ref = flags[++i];
      else if (flag === '-f' || flag === '--raw-field') {
        const field = flags[++i] ?? '';
        const eq = field.indexOf('=');
        if (eq < 1) usage(`bad field ${field}`);
        inputs[field.slice(0, eq)] = field.slice(eq + 1);
      } else usage(`unsupported gh workflow run argument ${flag}`);
    }
    if (!workflow || !repo || !ref) usage('gh workflow run <file> --repo <owner/name> --ref <ref> [-f k=v]');
    await request('POST', `repos/${repo}/actions/workflows/${encodeURIComponent(workflow)}/dispatches`, {
      ref,
      inputs,
    });
    process.stderr.write(`✓ Created workflow_dispatch event for ${workflow} at ${ref}\n`);
    return;
  }
  usage(`unsupported command: gh ${argv.join(' ')}`);
}

await main();
