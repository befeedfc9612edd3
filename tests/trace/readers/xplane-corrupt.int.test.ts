/**
 * Single-bit flips in a real XSpace (the JAX CPU fixture, whose FLOPs come from the HLO it stores):
 * each one is refused by name, or the summary says what it lost. None may pass quietly.
 *
 * The `xprof` column is what xprof 2.24.2 (C++ protobuf, proto3) does with the same file; the last
 * test checks it when the dev venv has xprof.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summarizeTracePath } from '../../../src/trace/from-path.js';
import type { TraceSummary } from '../../../src/trace/types.js';
import { InputError } from '../../../src/util/errors.js';
import { FIXTURES, REPO_ROOT, tempDir } from '../../helpers/paths.js';

const FIXTURE = join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.xplane.pb');
const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');
const COST_NOTE = /FLOPs and bytes of 1 program\(s\) from the HLO in the XSpace/;

interface Flip {
  byte: number;
  bit: number;
  xprof: 'rejects' | 'accepts';
  /** Refused: the problem named after "corrupt XSpace protobuf: " (or the whole message). */
  refused?: RegExp;
  /** Read: a summary warning that states the loss. */
  warns?: RegExp;
}

// Byte 0 is the first plane's tag (0x0a); that plane is /host:metadata, which holds the HLO.
const FLIPS: Flip[] = [
  { byte: 0, bit: 0, xprof: 'rejects', refused: /^XSpace: field 1 has the group start wire type/ },
  { byte: 0, bit: 1, xprof: 'rejects', refused: /^XSpace\.planes has the varint wire type, expected length/ },
  { byte: 0, bit: 2, xprof: 'rejects', refused: /^XSpace: field 1 has invalid wire type 6/ },
  { byte: 0, bit: 3, xprof: 'rejects', refused: /^XSpace: field number 0 at byte 0$/ },
  {
    byte: 0,
    bit: 4,
    xprof: 'rejects',
    refused: /^XSpace\.warnings: the string of 34284 bytes is not valid UTF-8/,
  },
  { byte: 0, bit: 7, xprof: 'rejects', refused: /^XSpace\.planes has the varint wire type/ },
  // The plane's length: it now runs past the end of the file.
  {
    byte: 3,
    bit: 2,
    xprof: 'rejects',
    refused: /^XSpace: a field of \d+ bytes runs \d+ bytes past the end of the file/,
  },
  {
    byte: 5,
    bit: 1,
    xprof: 'rejects',
    refused: /^XSpace\.planes > XPlane: field \d+ has the group end wire type/,
  },
  {
    byte: 6,
    bit: 7,
    xprof: 'rejects',
    refused: /^XSpace\.planes > XPlane\.name: the string of 14 bytes is not valid UTF-8/,
  },
  {
    byte: 21,
    bit: 1,
    xprof: 'rejects',
    refused: /event_metadata entry: a varint runs past the end of its message/,
  },
  {
    byte: 34256,
    bit: 7,
    xprof: 'rejects',
    refused: /XPlane\.stats > XStat\.str_value: the string of \d+ bytes is not valid UTF-8/,
  },
  {
    byte: 35046,
    bit: 7,
    xprof: 'rejects',
    refused: /XLine\.events > XEvent: a field of \d+ bytes runs \d+ bytes past the end of its message/,
  },
  {
    byte: 34644,
    bit: 7,
    xprof: 'rejects',
    refused: /XEvent\.stats > XStat: a varint runs past the end of its message/,
  },
  {
    byte: 40571,
    bit: 1,
    xprof: 'rejects',
    refused: /XEvent\.offset_ps has the length-delimited wire type, expected varint/,
  },
  {
    byte: 60160,
    bit: 4,
    xprof: 'rejects',
    refused: /XStat\.int64_value has the length-delimited wire type, expected varint/,
  },
  {
    byte: 62136,
    bit: 2,
    xprof: 'rejects',
    refused: /XLine\.events > XEvent: field 4 has invalid wire type 6/,
  },
  { byte: 64071, bit: 7, xprof: 'rejects', refused: /XEvent: a field tag does not fit in 32 bits/ },
  {
    byte: 71018,
    bit: 7,
    xprof: 'rejects',
    refused: /XPlane\.lines > XLine\.name: the string of \d+ bytes is not valid UTF-8/,
  },
  {
    byte: 71396,
    bit: 7,
    xprof: 'rejects',
    refused: /XEvent\.stats > XStat: a varint is longer than 5 bytes/,
  },
  // xprof keeps a known field with the wrong wire type as an unknown one, dropping it: we refuse.
  {
    byte: 44194,
    bit: 1,
    xprof: 'accepts',
    refused: /XPlane\.lines > XLine\.events has the varint wire type/,
  },
  // The plane's tag becomes unknown field 5 or 9 of XSpace: xprof drops the HLO plane without a word.
  {
    byte: 0,
    bit: 5,
    xprof: 'accepts',
    refused:
      /^the cost data \(HLO\) of 1 program\(s\) that ran \(8\) is missing.*field 5 in XSpace, 34284 bytes at byte 0/,
  },
  {
    byte: 0,
    bit: 6,
    xprof: 'accepts',
    refused: /^the cost data \(HLO\) of 1 program\(s\) that ran \(8\) is missing.*field 9 in XSpace/,
  },
  // The plane's name becomes unknown field 10; the HLO is still found (by its stat), the skip is said.
  {
    byte: 4,
    bit: 6,
    xprof: 'accepts',
    warns:
      /skipped fields hillclimb does not know \(field 10 in XSpace\.planes > XPlane, 14 bytes at byte 4\)/,
  },
  {
    byte: 69479,
    bit: 5,
    xprof: 'accepts',
    warns: /field 6 in XSpace\.planes > XPlane\.lines > XLine\.events > XEvent, 5 bytes/,
  },
  // The HLO stat's metadata id changes: the program's HLO is no longer found.
  {
    byte: 34155,
    bit: 6,
    xprof: 'accepts',
    warns: /the file holds no HLO for 1 program\(s\) that ran \(8\): their ops have no FLOPs or bytes/,
  },
];

const t = tempDir('hc-xplane-flip-');
afterAll(() => t.cleanup());
const original = readFileSync(FIXTURE);

function flipped(f: Flip): string {
  const bytes = Buffer.from(original);
  bytes[f.byte]! ^= 1 << f.bit;
  const path = join(t.dir, `flip-${f.byte}-${f.bit}.xplane.pb`);
  writeFileSync(path, bytes);
  return path;
}

async function outcome(path: string): Promise<TraceSummary | InputError> {
  try {
    return await summarizeTracePath(path);
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
}

describe('single-bit flips in a real XSpace', () => {
  it('the intact fixture reads cleanly, its FLOPs from the HLO', async () => {
    const s = await summarizeTracePath(FIXTURE);
    expect(s.warnings).toEqual([]);
    expect(s.notes.join('\n')).toMatch(COST_NOTE);
  });

  for (const f of FLIPS.filter((x) => x.refused !== undefined)) {
    it(`byte ${f.byte} bit ${f.bit} (xprof ${f.xprof}): refused, naming the problem and its byte`, async () => {
      const path = flipped(f);
      const r = await outcome(path);
      expect(r).toBeInstanceOf(InputError);
      const err = r as InputError;
      const problem = err.message.slice(`${path}: `.length).replace(/^corrupt XSpace protobuf: /, '');
      expect(err.message.startsWith(`${path}: `)).toBe(true);
      expect(problem).toMatch(f.refused!);
      expect(err.message).toMatch(/(at byte \d+|: the file looks damaged)$/);
      expect(err.message).not.toContain('\n');
      expect(err.hint).toMatch(/capture the profile again/);
      expect(err.exitCode).toBe(2);
    });
  }

  for (const f of FLIPS.filter((x) => x.warns !== undefined)) {
    it(`byte ${f.byte} bit ${f.bit} (xprof ${f.xprof}): read, and the summary says what was lost`, async () => {
      const r = await outcome(flipped(f));
      expect(r).not.toBeInstanceOf(InputError);
      expect((r as TraceSummary).warnings.join('\n')).toMatch(f.warns!);
    });
  }

  it('a flip in the HLO plane name (still valid UTF-8) loses no FLOPs: the HLO is found by its stat', async () => {
    const s = (await outcome(flipped({ byte: 6, bit: 0, xprof: 'accepts' }))) as TraceSummary;
    expect(s.notes.join('\n')).toMatch(COST_NOTE);
  });

  it('a truncated file is refused as such', async () => {
    const path = join(t.dir, 'truncated.xplane.pb');
    writeFileSync(path, original.subarray(0, 50_000));
    const r = await outcome(path);
    expect((r as InputError).message).toMatch(
      /XSpace: a field of 41998 bytes runs 26290 bytes past the end of the file \(truncated\?\) at byte 34288$/,
    );
  });
});

function xprofUnavailable(): string | undefined {
  if (!existsSync(PYTHON)) return `${PYTHON} not found (run hillclimb setup --dev)`;
  try {
    execFileSync(PYTHON, ['-c', 'import xprof.convert._pywrap_profiler_plugin'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'xprof is not installed in the dev venv';
  }
}

// Parses each flipped file the way xprof's tools do; prints one verdict per path.
const XPROF_VERDICTS = `
import sys
from xprof.convert import _pywrap_profiler_plugin as p
for path in sys.argv[1:]:
    _, ok = p.xspace_to_tools_data([path], 'hlo_stats', {'use_saved_result': False})
    print('accepts' if ok else 'rejects')
`;

describe.skipIf(xprofUnavailable() !== undefined)('the xprof column', () => {
  it('is what xprof does with each flipped file', () => {
    const paths = FLIPS.map(flipped);
    const out = execFileSync(PYTHON, ['-c', XPROF_VERDICTS, ...paths], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    expect(out.trim().split('\n')).toEqual(FLIPS.map((f) => f.xprof));
  });
});
