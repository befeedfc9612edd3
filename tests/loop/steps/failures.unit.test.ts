import { describe, expect, it } from 'vitest';
import { isProgramError } from '../../../src/loop/steps/failures.js';

const traceback = (last: string) =>
  `running export\nTraceback (most recent call last):\n  File "bench.py", line 3, in <module>\n    raise ValueError("x")\n${last}\n`;

describe('isProgramError: a failure no retry can fix', () => {
  it.each([
    "ModuleNotFoundError: No module named 'foo'",
    'ImportError: cannot import name "k" from "mypkg"',
    'SyntaxError: invalid syntax',
    "NameError: name 'jnp' is not defined",
    "TypeError: kernel() missing 1 required positional argument: 'q'",
    'AssertionError: o: max abs error 3.2 > 1e-3',
    'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)',
  ])('%s', (last) => {
    expect(isProgramError(traceback(last))).toBe(true);
  });

  it.each([
    'jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 4294967296 bytes',
    'RuntimeError: Unable to initialize backend tpu: TPU is already in use by process 4242',
    'OSError: [Errno 28] No space left on device',
    'MemoryError',
    'ConnectionResetError: [Errno 104] Connection reset by peer',
  ])('not the machine: %s', (last) => {
    expect(isProgramError(traceback(last))).toBe(false);
  });

  it('reads the last traceback only, and needs one', () => {
    const chained = `${traceback('KeyError: x')}\nDuring handling of the above exception, another exception occurred:\n\n${traceback('OSError: [Errno 5] Input/output error')}`;
    expect(isProgramError(chained)).toBe(false);
    expect(isProgramError('export: failed: ValueError: shapes differ\n')).toBe(false);
  });
});
