/**
 * A stand-in for the loop's tools (src/loop implements AgentTools): records every call, answers from a
 * script, and can hold calls until released (for the concurrency tests).
 */
import type { AgentTools, ToolAnswer, ToolDescription } from '../../src/agent/tools.js';

export const STUB_TOOLS: readonly ToolDescription[] = [
  {
    name: 'check',
    description: 'Export and verify your working tree at the gate shapes. Advice, never evidence.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'ledger',
    description: 'What earlier iterations tried, with their verdicts.',
    inputSchema: { type: 'object', properties: { last: { type: 'integer' } }, additionalProperties: false },
  },
];

export interface StubCall {
  name: string;
  args: unknown;
  signal?: AbortSignal;
}

export interface StubTools extends AgentTools {
  calls: StubCall[];
  /** Calls held (hold: true) until release() is called; released in order. */
  release(): void;
  held(): number;
}

/**
 * `answers[name]` is the list of answers a tool gives, one per call (the last repeats); `hold` makes
 * every call wait for release(); a call to a tool not listed is an error answer, as the contract says.
 */
export function stubTools(
  answers: Record<string, ReadonlyArray<string | ToolAnswer>> = {},
  o: { hold?: boolean; throws?: boolean } = {},
): StubTools {
  const calls: StubCall[] = [];
  const waiting: Array<() => void> = [];
  return {
    calls,
    release: () => waiting.shift()?.(),
    held: () => waiting.length,
    list: () => STUB_TOOLS,
    async call(name, args, signal) {
      calls.push({ name, args, signal });
      if (o.hold) await new Promise<void>((resolve) => waiting.push(resolve));
      if (o.throws) throw new Error('stub tool crashed');
      const script = answers[name];
      if (!script) return { text: `unknown tool ${name}`, isError: true };
      const n = calls.filter((c) => c.name === name).length;
      const a = script[Math.min(n, script.length) - 1]!;
      return typeof a === 'string' ? { text: a, isError: false } : a;
    },
  };
}
