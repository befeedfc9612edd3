/**
 * doctor's check of the account a TPU VM runs as, against a stand-in `gcloud` that answers the two
 * read-only commands as gcloud does (`iam service-accounts describe`, `projects get-iam-policy` with a
 * flatten/filter/format that prints one role per line).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { tpuAccountCheck } from '../../src/doctor/doctor.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir('hc-doctor-tpu-');
afterAll(t.cleanup);

/** A gcloud whose account exists or not, and holds these roles. */
function fakeGcloud(name: string, exists: boolean, roles: string[]): string {
  const file = join(t.dir, name);
  writeFileSync(
    file,
    [
      '#!/bin/sh',
      'case "$1 $2" in',
      `  "iam service-accounts") ${exists ? 'echo "$4"; exit 0' : 'echo "ERROR: (gcloud.iam.service-accounts.describe) NOT_FOUND: Unknown service account" >&2; exit 1'} ;;`,
      `  "projects get-iam-policy") printf '${roles.map((r) => `${r}\\n`).join('')}'; exit 0 ;;`,
      'esac',
      'exit 2',
      '',
    ].join('\n'),
  );
  chmodSync(file, 0o755);
  return file;
}

const config = (account = '') =>
  parseConfig(
    `version: 1\ntargets:\n  k:\n    editable: [k/**]\n    protected: [h/**]\n    correctness: {cpu: {command: [x]}}\n    programs: {module: m}\n    bench: {metric: {path: a.b, direction: lower}}\ncompute:\n  backend: tpu-vm\n  tpu_vm:\n    project: hc-proj\n    zones: [us-east5-a]\n    accelerator_type: v5p-8\n    runtime_version: v2\n${account}`,
    '/repo/hillclimb.yml',
  );

describe('doctor: the TPU VM account', () => {
  it('passes for an account with no roles', async () => {
    const r = await tpuAccountCheck(config(), fakeGcloud('ok', true, [])).run();
    expect(r).toEqual({
      ok: true,
      detail: 'hillclimb-tpu@hc-proj.iam.gserviceaccount.com, no roles in hc-proj',
    });
  });

  it('fails for an account that holds a role, naming it and the key to change', async () => {
    const r = await tpuAccountCheck(
      config('    service_account: ci-runner@hc-proj.iam.gserviceaccount.com\n'),
      fakeGcloud('roles', true, ['roles/editor', 'roles/storage.admin']),
    ).run();
    expect(r.ok).toBe(false);
    expect(r.detail).toBe(
      'ci-runner@hc-proj.iam.gserviceaccount.com holds roles/editor, roles/storage.admin: candidate code on the VM can use them',
    );
    expect(r.hint).toContain('compute.tpu_vm.service_account in /repo/hillclimb.yml');
  });

  it('fails for an account that does not exist, saying how to create it', async () => {
    const r = await tpuAccountCheck(config(), fakeGcloud('missing', false, [])).run();
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(
      /^hillclimb-tpu@hc-proj\.iam\.gserviceaccount\.com: not found \(ERROR: .*NOT_FOUND/,
    );
    expect(r.hint).toContain('gcloud iam service-accounts create hillclimb-tpu --project hc-proj');
  });
});
