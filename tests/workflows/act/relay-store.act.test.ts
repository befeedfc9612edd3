// artifactRelayStore() (src/compute/relay-store.ts) against a real artifact service: act's (the v4
// protocol @actions/artifact speaks: CreateArtifact, the blob upload, FinalizeArtifact, ListArtifacts,
// GetSignedArtifactURL, the download). Two jobs of one act run, with no `needs` between them, run the
// action relay-store-action.ts bundles to: the request/answer round trip of the agent tools relay
// (src/loop/relay), then what the store does with a name put twice and with links. scripts/build-act.mjs
// builds act with two fixes this needs (@actions/artifact 6 against act's server); without them every
// put fails.
//
// Where act's artifact server differs from GitHub's, the assertions say what act does:
// - it lists a name from CreateArtifact on, before the upload is finalized (GitHub: once finalized), so
//   the action waits for a marker put after each name before it gets that name;
// - it takes a second upload of a name and replaces the artifact (GitHub answers 409 Conflict);
// - its ListArtifacts fails for a run that has no artifact yet (it reads the run's folder, which the
//   first CreateArtifact makes; GitHub lists nothing), so the test makes the run's folder first;
// - it lists an artifact's size as its folder's (GitHub: the zip's bytes), so the store's size check
//   before a download means nothing under act.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActRun, ActWorld, actBinary, runAct } from '../../helpers/act.js';
import { tempDir } from '../../helpers/paths.js';
import { git } from './repo.js';

const act = actBinary();

const ACTION = `name: relay store check
inputs:
  role: { required: true }
runs:
  using: node24
  main: index.mjs
`;

const WORKFLOW = `name: relay store
on: workflow_dispatch
jobs:
  asker:
    runs-on: ubuntu-24.04
    steps:
      # As on GitHub, a local action is read from the checkout (act copies the clone it runs in).
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8
      - uses: ./relay-action
        with: { role: asker }
  answerer:
    runs-on: ubuntu-24.04
    steps:
      # As on GitHub, a local action is read from the checkout (act copies the clone it runs in).
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8
      - uses: ./relay-action
        with: { role: answerer }
`;

const RUN_ID = 7;

describe.skipIf(act.skip)(`artifactRelayStore in act${act.skip ? ` (skipped: ${act.skip})` : ''}`, () => {
  const t = tempDir('hc-act-relay-store-');
  let run: ActRun;
  const result = (job: string): Record<string, unknown> => {
    const line = run
      .text(job)
      .split('\n')
      .find((l) => l.startsWith('relay-store-result '));
    expect(line, run.describe()).toBeDefined();
    return JSON.parse(line!.slice('relay-store-result '.length)) as Record<string, unknown>;
  };

  beforeAll(async () => {
    const repo = join(t.dir, 'repo');
    mkdirSync(join(repo, '.github', 'workflows'), { recursive: true });
    mkdirSync(join(repo, 'relay-action'));
    writeFileSync(join(repo, '.github', 'workflows', 'relay.yml'), WORKFLOW);
    writeFileSync(join(repo, 'relay-action', 'action.yml'), ACTION);
    // As scripts/build.mjs bundles the actions (an ESM bundle of CommonJS dependencies needs `require`).
    await build({
      entryPoints: [join(import.meta.dirname, 'relay-store-action.ts')],
      outfile: join(repo, 'relay-action', 'index.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      banner: {
        js: "import { createRequire as __hcCreateRequire } from 'node:module'; const require = __hcCreateRequire(import.meta.url);",
      },
      legalComments: 'none',
      logLevel: 'warning',
    });
    git(t.dir, {}, 'init', '-q', '-b', 'main', repo);
    git(repo, {}, 'add', '-A');
    git(repo, {}, 'commit', '-q', '-m', 'relay store check');
    git(repo, {}, 'remote', 'add', 'origin', 'https://github.com/octo/relay.git');
    const world = new ActWorld({ dir: join(t.dir, 'act'), remotes: {} });
    // act's ListArtifacts reads <artifacts>/<run id>/ and fails while it does not exist (before the run's
    // first CreateArtifact); the answerer lists before the asker has put anything.
    mkdirSync(join(world.artifacts, String(RUN_ID)), { recursive: true });
    run = await runAct({
      act: act.path!,
      world,
      repo,
      workflow: 'relay.yml',
      event: 'workflow_dispatch',
      payload: {},
      apiUrl: 'http://127.0.0.1:9',
      runId: RUN_ID,
      artifactServer: true,
      timeoutMs: 240_000,
    });
  }, 300_000);
  afterAll(() => {
    if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
  });

  it('two jobs at once: a request put by one is listed, got byte for byte by the other, and answered', () => {
    expect(run.code, run.describe()).toBe(0);
    expect(run.result('asker')).toBe('success');
    expect(run.result('answerer')).toBe('success');
    const asker = result('asker');
    const answerer = result('answerer');
    // Each waited for the other: the two ran at the same time.
    expect(Math.max(asker.started as number, answerer.started as number)).toBeLessThan(
      Math.min(asker.ended as number, answerer.ended as number),
    );
    expect(answerer.listed).toEqual(
      expect.arrayContaining(['hc-relay-test-request', 'hc-relay-test-request-sent']),
    );
    expect(answerer.identical).toBe(true);
    expect(answerer.files).toBe(4);
    // The answer carries the answerer's manifest (path, size, sha256) of what it got: the asker's own.
    expect(asker.roundTrip).toBe(true);
  });

  it("a second put of a name: act's server takes it and replaces the artifact (GitHub answers 409)", () => {
    const asker = result('asker');
    expect(asker.second).toBe('ok');
    expect(asker.afterSecond).toBe(2);
  });

  it('links: put refuses a folder holding one, and get a zip holding a link entry', () => {
    const asker = result('asker');
    // As the folder store refuses it (@actions/artifact would zip the link's target).
    expect(asker.putLink).toMatch(
      /^threw: relay: hc-relay-test-with-link holds what the relay never takes: link: a symbolic link$/,
    );
    // A zip made with a link entry (unix mode 0120777, as `zip --symlinks` makes it), uploaded as it is:
    // get() unpacks the zip itself, within limits, and refuses the link entry (@actions/artifact's own
    // unpacking would have written it as a plain file holding the target's path).
    expect(asker.getZipLink).toMatch(
      /^threw: relay: hc-relay-test-zip-with-link\S* holds what the relay never takes: .*"link": a link or a device$/,
    );
    expect(asker.zipLinkGot).toBeUndefined();
  });
});
