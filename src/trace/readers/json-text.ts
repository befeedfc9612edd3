/**
 * Low-level helpers for scanning JSON text held in a JS string: string ends, value skipping, numbers.
 *
 * The scanner works on decoded chunks of the file; a value cut by the end of a chunk raises `NEED_MORE`
 * so the caller can retry once more text has arrived. Syntax errors raise `JsonSyntaxError` with the
 * offset inside the current text.
 */

/** Thrown when a value runs past the end of the text seen so far. */
export const NEED_MORE = Symbol('need more text');

export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError';
  constructor(
    readonly at: number,
    problem: string,
  ) {
    super(problem);
  }
}

const QUOTE = 34;
const BACKSLASH = 92;
/** Strings up to this long are checked for escapes char by char rather than with a backslash search. */
const SHORT_STRING = 48;

/** Describe the character at `p` for an error message. */
export function charAt(text: string, p: number): string {
  if (p >= text.length) return 'end of text';
  const c = text[p]!;
  return /[\x20-\x7e]/.test(c) ? `'${c}'` : `U+${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Raise NEED_MORE when `p` is at or past the end (the value may continue), else a syntax error. */
export function fail(text: string, p: number, expected: string): never {
  if (p >= text.length) throw NEED_MORE;
  throw new JsonSyntaxError(p, `expected ${expected}, found ${charAt(text, p)}`);
}

/**
 * Finds string ends in one text. Caches the next backslash so strings without escapes (nearly all) cost
 * one `indexOf` each.
 */
export class StringScanner {
  private text = '';
  private nextBackslash = 0;
  /** The position the cached backslash search started from; the cache holds only for strings after it. */
  private searchedFrom = 0;
  /** Whether the last string found contained an escape sequence. */
  escaped = false;

  reset(text: string): void {
    this.text = text;
    this.nextBackslash = -2;
    this.searchedFrom = 0;
  }

  /** Index of the closing quote of the string whose body starts at `s` (just after the opening quote). */
  end(s: number): number {
    const text = this.text;
    let q = text.indexOf('"', s);
    if (q < 0) throw NEED_MORE;
    let nb = this.nextBackslash;
    if ((nb !== -1 && nb < s) || s < this.searchedFrom) {
      // A short string (an event or op name) is checked in place: in traces whose args hold escapes
      // (`source_stack`'s `\n`) the next backslash is usually far ahead, and searching for it would
      // cost more than the string itself.
      if (q - s <= SHORT_STRING) {
        let k = s;
        while (k < q && text.charCodeAt(k) !== BACKSLASH) k++;
        if (k === q) {
          this.escaped = false;
          return q;
        }
      }
      nb = text.indexOf('\\', s);
      this.nextBackslash = nb;
      this.searchedFrom = s;
    }
    if (nb === -1 || nb > q) {
      this.escaped = false;
      return q;
    }
    // The string holds escapes: skip quotes preceded by an odd number of backslashes.
    while (isEscaped(text, q)) {
      q = text.indexOf('"', q + 1);
      if (q < 0) throw NEED_MORE;
    }
    this.escaped = true;
    this.nextBackslash = text.indexOf('\\', q);
    this.searchedFrom = q;
    return q;
  }
}

/** Whether the character at `q` is preceded by an odd number of backslashes. */
function isEscaped(text: string, q: number): boolean {
  let n = 0;
  while (text.charCodeAt(q - 1 - n) === BACKSLASH) n++;
  return (n & 1) === 1;
}

/** Skip whitespace; returns the index of the next non-space character (maybe text.length). */
export function skipSpace(text: string, p: number): number {
  let c = text.charCodeAt(p);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = text.charCodeAt(++p);
  return p;
}

/** Skip one JSON value starting at `p` (no leading space); returns the index after it. */
export function skipValue(text: string, p: number, strings: StringScanner): number {
  const c = text.charCodeAt(p);
  if (c === QUOTE) return strings.end(p + 1) + 1;
  if (c === 123 || c === 91) return skipContainer(text, p, strings);
  return skipScalar(text, p);
}

/** Skip a number or literal; it must be followed by a delimiter inside the text. */
export function skipScalar(text: string, p: number): number {
  const start = p;
  const len = text.length;
  for (;;) {
    if (p >= len) throw NEED_MORE;
    const c = text.charCodeAt(p);
    // Digits, sign, dot, exponent and the letters of true/false/null.
    if ((c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46 || (c >= 97 && c <= 122) || c === 69) p++;
    else break;
  }
  if (p === start) fail(text, p, 'a JSON value');
  return p;
}

/** Skip an object or array starting at `p`; returns the index after its closing bracket. */
export function skipContainer(text: string, p: number, strings: StringScanner): number {
  let depth = 0;
  const len = text.length;
  for (;;) {
    if (p >= len) throw NEED_MORE;
    const c = text.charCodeAt(p);
    if (c === QUOTE) p = strings.end(p + 1) + 1;
    else if (c === 123 || c === 91) {
      depth++;
      p++;
    } else if (c === 125 || c === 93) {
      depth--;
      p++;
      if (depth === 0) return p;
    } else p++;
  }
}

/** End index of the last number parsed by `parseTimePs` / `parseInteger`. */
export let numberEnd = 0;

/**
 * Parse a JSON number of microseconds at `p` into integer picoseconds relative to `originUs`
 * (an integer). Digit-exact for plain decimals: `5439011.7444999995` becomes 5439011744500.
 */
export function parseTimePs(text: string, p: number, originUs: number): number {
  const start = p;
  let c = text.charCodeAt(p);
  let negative = false;
  if (c === 45) {
    negative = true;
    c = text.charCodeAt(++p);
  }
  let int = 0;
  let digits = 0;
  while (c >= 48 && c <= 57) {
    int = int * 10 + (c - 48);
    digits++;
    c = text.charCodeAt(++p);
  }
  let frac = 0;
  let fracDigits = 0;
  let roundUp = false;
  if (c === 46) {
    c = text.charCodeAt(++p);
    while (c >= 48 && c <= 57) {
      if (fracDigits < 6) frac = frac * 10 + (c - 48);
      else if (fracDigits === 6) roundUp = c >= 53;
      fracDigits++;
      c = text.charCodeAt(++p);
    }
  }
  if (c === 101 || c === 69 || digits === 0 || int > 9e15) {
    // Exponent or huge values: go through a double.
    const end = skipScalar(text, start);
    numberEnd = end;
    const v = Number(text.slice(start, end));
    if (Number.isNaN(v)) fail(text, start, 'a number');
    return Math.round((v - originUs) * 1e6);
  }
  if (p >= text.length) throw NEED_MORE;
  numberEnd = p;
  for (let k = fracDigits; k < 6; k++) frac *= 10;
  const ps = (int - (negative ? -originUs : originUs)) * 1e6 + frac + (roundUp ? 1 : 0);
  return negative ? -ps : ps;
}

/** The integer part of a JSON number at `p` (used for µs origins and integer ids). */
export function parseInteger(text: string, p: number): number {
  let c = text.charCodeAt(p);
  let negative = false;
  if (c === 45) {
    negative = true;
    c = text.charCodeAt(++p);
  }
  let v = 0;
  while (c >= 48 && c <= 57) {
    v = v * 10 + (c - 48);
    c = text.charCodeAt(++p);
  }
  numberEnd = p;
  return negative ? -v : v;
}
