import { describe, expect, it } from 'vitest';
import { GCP_NAME, gcpResourceName, jobSlug, labelValue, raySubmissionId } from '../../src/compute/names.js';
import { defaultRunId } from '../../src/compute/tpu/lifecycle.js';

describe('raySubmissionId', () => {
  it('prefixes a safe job id unchanged, so the same job always gets the same submission id', () => {
    expect(raySubmissionId('run7-i003-bench-b-02')).toBe('hillclimb-run7-i003-bench-b-02');
    expect(raySubmissionId('a.b_c-d')).toBe('hillclimb-a.b_c-d');
  });

  it('replaces unsafe characters and adds a hash so distinct ids stay distinct', () => {
    const a = raySubmissionId('run/1 x');
    const b = raySubmissionId('run?1 x');
    expect(a).toMatch(/^hillclimb-run_1_x-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    expect(raySubmissionId('..')).toMatch(/^hillclimb-__-[0-9a-f]{8}$/);
    expect(raySubmissionId('x'.repeat(300)).length).toBeLessThanOrEqual(120);
  });
});

describe('jobSlug', () => {
  it('keeps safe ids and never starts with a dot', () => {
    expect(jobSlug('r1-i001-bench-a-01')).toBe('r1-i001-bench-a-01');
    expect(jobSlug('.hidden')).toMatch(/^_hidden-[0-9a-f]{8}$/);
    expect(jobSlug('a/b')).toMatch(/^a_b-[0-9a-f]{8}$/);
  });
});

describe('gcpResourceName', () => {
  it('joins prefix and run id when both are valid', () => {
    expect(gcpResourceName('hillclimb', 'gh123-1')).toBe('hillclimb-gh123-1');
    expect(gcpResourceName('hillclimb', 'gh123-1', 'g2')).toBe('hillclimb-gh123-1-g2');
  });

  it('always yields a valid name, with a hash when the run id had to change', () => {
    for (const run of ['Run_One', 'UPPER', '--x--', '9'.repeat(100), 'ünï', '']) {
      const name = gcpResourceName('hillclimb', run);
      expect(name, run).toMatch(GCP_NAME);
      expect(name.length).toBeLessThanOrEqual(63);
    }
    expect(gcpResourceName('hillclimb', 'Run_One')).not.toBe(gcpResourceName('hillclimb', 'run-one'));
    expect(gcpResourceName('hc', 'a'.repeat(80), 'g3')).toMatch(/-g3$/);
  });

  it('is deterministic', () => {
    expect(gcpResourceName('hc', 'Some Run')).toBe(gcpResourceName('hc', 'Some Run'));
  });
});

describe('labelValue', () => {
  it('lowercases and keeps only label characters', () => {
    expect(labelValue('GH123-1_a.b')).toBe('gh123-1_a-b');
    expect(labelValue('x'.repeat(80))).toHaveLength(63);
  });
});

describe('defaultRunId', () => {
  it('prefers HILLCLIMB_RUN_ID, then the GitHub run and attempt, then a timestamp', () => {
    expect(defaultRunId({ HILLCLIMB_RUN_ID: 'mine' })).toBe('mine');
    expect(defaultRunId({ GITHUB_RUN_ID: '42', GITHUB_RUN_ATTEMPT: '3' })).toBe('gh42-3');
    expect(defaultRunId({}, new Date('2026-01-02T03:04:05Z'))).toBe('local-20260102-030405');
  });
});
