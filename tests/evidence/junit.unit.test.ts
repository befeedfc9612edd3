import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failureSummary, parseJUnitXml, readJUnitXml } from '../../src/evidence/junit.js';
import { ExitCode, InputError } from '../../src/util/errors.js';
import { FIXTURES, tempDir } from '../helpers/paths.js';

const JUNIT = join(FIXTURES, 'junit');
const fixture = (name: string): string => join(JUNIT, name);

/** The InputError a read raises, so its message can be checked. */
async function readError(file: string): Promise<InputError> {
  const err = await readJUnitXml(file).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InputError);
  return err as InputError;
}

function parseOneLine(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).message;
  }
  throw new Error('expected an InputError');
}

describe('readJUnitXml on real pytest output', () => {
  it('counts every outcome as pytest does', async () => {
    const r = await readJUnitXml(fixture('pytest-default.xml'));
    // pytest's own attributes: errors="3" failures="3" skipped="3" tests="13"
    expect(r.totals).toEqual({ tests: 13, passed: 4, failed: 3, errors: 3, skipped: 3, time: r.totals.time });
    expect(r.totals.time).toBeGreaterThan(0);
    expect(r.file).toBe(fixture('pytest-default.xml'));
  });

  it('reads each case: names, status, messages, skip reasons', async () => {
    const { cases } = await readJUnitXml(fixture('pytest-default.xml'));
    const byName = (name: string) => cases.filter((c) => c.name === name);
    expect(byName('test_parametrized[B2-T63-H4]')[0]).toMatchObject({
      suite: 'pytest',
      classname: 'sample_tests',
      status: 'passed',
      message: null,
      details: null,
      skipReason: null,
      file: null,
      line: null,
    });
    const failed = byName('test_fails')[0]!;
    expect(failed.status).toBe('failed');
    // Entities decoded; the message keeps pytest's newline.
    expect(failed.message).toBe("AssertionError: one is not two <&> 'quoted'\nassert 1 == 2");
    expect(failed.details).toContain('sample_tests.py:28: AssertionError');
    expect(byName('test_skipped')[0]).toMatchObject({
      status: 'skipped',
      skipReason: 'needs a TPU',
      skipType: 'pytest.skip',
    });
    expect(byName('test_xfail')[0]).toMatchObject({
      status: 'skipped',
      skipReason: 'known bug 42',
      skipType: 'pytest.xfail',
    });
    expect(byName('test_xpass_strict')[0]).toMatchObject({
      status: 'failed',
      message: '[XPASS(strict)] was a bug',
    });
    expect(byName('test_setup_error')[0]).toMatchObject({
      status: 'error',
      message: 'failed on setup with "RuntimeError: fixture setup exploded"',
    });
    // A test that passed its call but failed teardown is an error.
    expect(byName('test_teardown_error').map((c) => c.status)).toEqual(['error']);
    // pytest writes a failing test whose teardown also fails as two cases.
    expect(byName('test_fails_then_teardown_error').map((c) => c.status)).toEqual(['failed', 'error']);
    expect(cases.find((c) => c.name === 'test_in_class')!.classname).toBe('sample_tests.TestGrouped');
  });

  it('reads file, line and captured output from the xunit1 family with logging', async () => {
    const r = await readJUnitXml(fixture('pytest-xunit1-logging.xml'));
    expect(r.totals.tests).toBe(13);
    const passes = r.cases.find((c) => c.name === 'test_passes')!;
    expect(passes).toMatchObject({ file: 'sample_tests.py', line: 16, status: 'passed' });
    expect(passes.systemOut).toContain('hello from stdout');
    expect(passes.systemErr).toContain('Captured Err');
  });
});

describe('failureSummary: a failure message on one line for the verdict', () => {
  it("keeps numpy's values where pytest's message says only 'AssertionError: ' on its first line", async () => {
    const r = await readJUnitXml(fixture('pytest-numpy-allclose.xml'));
    const message = r.cases[0]!.message!;
    expect(message.split('\n')[0]).toBe('AssertionError: ');
    const summary = failureSummary(message);
    expect(summary).toMatch(
      /^AssertionError: Not equal to tolerance rtol=0\.001, atol=0 Mismatched elements: 1 \/ 2 \(50%\) Mismatch at index: \[1\]: 2\.0 \(ACTUAL\), 2\.5 \(DESIRED\)/,
    );
    expect(summary.length).toBeLessThanOrEqual(300);
  });

  it('is the first line when that says something', () => {
    expect(failureSummary('assert 3 == 4\n +  where 3 = f()')).toBe('assert 3 == 4');
    expect(failureSummary('AssertionError: o: max abs error 0.3\nmore')).toBe(
      'AssertionError: o: max abs error 0.3',
    );
  });
});

describe('parseJUnitXml on generic JUnit', () => {
  it('walks nested suites, CDATA, flaky reruns and thousands separators', async () => {
    const r = await readJUnitXml(fixture('generic-nested.xml'));
    expect(r.cases.map((c) => [c.suite, c.name, c.status])).toEqual([
      ['outer', 'fails', 'failed'],
      ['outer', 'skipped', 'skipped'],
      ['inner', 'ok', 'passed'],
      ['second', 'errs', 'error'],
      ['second', 'flaky', 'passed'],
    ]);
    const fails = r.cases[0]!;
    expect(fails.message).toBe('expected <1> but was <2>');
    expect(fails.systemOut).toBe('some <raw> output');
    expect(fails.systemErr).toBe('warning & more');
    expect(r.cases[1]!.skipReason).toBeNull();
    expect(r.cases[3]!.time).toBe(1500.75);
    // Top-level suite times: 2.0 + 1501.0.
    expect(r.totals).toEqual({ tests: 5, passed: 2, failed: 1, errors: 1, skipped: 1, time: 1503 });
  });

  it('accepts a lone <testsuite> root and sums case times when suites have none', async () => {
    const r = await readJUnitXml(fixture('single-suite.xml'));
    expect(r.totals).toEqual({ tests: 2, passed: 1, failed: 0, errors: 0, skipped: 1, time: 0.75 });
    expect(r.cases[1]!.skipReason).toBe('not on CPU');
  });

  it('accepts a run with no tests', () => {
    const r = parseJUnitXml('<testsuites name="pytest tests"></testsuites>', 'x.xml');
    expect(r.totals).toEqual({ tests: 0, passed: 0, failed: 0, errors: 0, skipped: 0, time: 0 });
  });
});

describe('bad JUnit input', () => {
  it('says where a truncated file ends, with exit code 2', async () => {
    const err = await readError(fixture('truncated.xml'));
    expect(err.message).toBe(
      `${fixture('truncated.xml')}: truncated XML: the file ends inside <testsuites> > <testsuite> > <testcase> > <skipped>`,
    );
    expect(err.exitCode).toBe(ExitCode.badInput);
    expect(err.file).toBe(fixture('truncated.xml'));
    expect(err.hint).toMatch(/killed before pytest finished/);
  });

  it('names the line and column of malformed XML', () => {
    const bad =
      '<testsuites>\n  <testsuite name="s">\n    <testcase name="a" time="1"></testsuite>\n</testsuites>';
    expect(parseOneLine(() => parseJUnitXml(bad, 'bad.xml'))).toMatch(
      /^bad\.xml: invalid XML at line 3, column \d+: .+$/,
    );
    expect(parseOneLine(() => parseJUnitXml('<testsuites>', 'open.xml'))).toBe(
      'open.xml: truncated XML: <testsuites> opened at line 1 is never closed',
    );
  });

  it.each([
    ['empty.xml', 'empty file, expected JUnit XML'],
    ['not-junit.xml', 'not JUnit XML: root element <html>, expected <testsuites> or <testsuite>'],
    ['bad-time.xml', 'testcase "m::t" has time "fast", not a number of seconds'],
  ])('%s', async (name, problem) => {
    const err = await readError(fixture(name));
    expect(err.message).toBe(`${fixture(name)}: ${problem}`);
    expect(err.exitCode).toBe(2);
  });

  it('reports a missing file or a directory in one line', async () => {
    const { dir, cleanup } = tempDir();
    try {
      expect((await readError(join(dir, 'nope.xml'))).message).toBe(
        `${join(dir, 'nope.xml')}: cannot read JUnit XML: no such file`,
      );
      expect((await readError(dir)).message).toBe(`${dir}: cannot read JUnit XML: is a directory`);
      const garbage = join(dir, 'garbage.xml');
      writeFileSync(garbage, 'this is not xml at all');
      expect((await readError(garbage)).message).toMatch(/garbage\.xml: (invalid XML|not JUnit XML)/);
    } finally {
      cleanup();
    }
  });
});
