// Structural checks of rendered markdown shared by the report tests: mermaid charts that parse the
// way mermaid's xychart grammar expects, tables that are whole, fences that are closed.
import { expect } from 'vitest';

/** The bodies of ```mermaid blocks. */
export function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```mermaid\n([\s\S]*?)\n```$/gm)].map((m) => m[1]!);
}

const NUM = String.raw`-?\d+(?:\.\d+)?`;
const QUOTED = String.raw`"[^"\n]*"`;

/** Checks an xychart-beta source line by line; returns the parsed data for further assertions. */
export function checkXyChart(source: string): {
  labels: string[];
  series: Record<'bar' | 'line', number[]>;
  lo: number;
  hi: number;
} {
  const lines = source.split('\n');
  expect(lines[0]).toBe('xychart-beta');
  let labels: string[] = [];
  let lo = Number.NaN;
  let hi = Number.NaN;
  const series: Record<'bar' | 'line', number[]> = { bar: [], line: [] };
  const title = new RegExp(`^  title ${QUOTED}$`);
  const xAxis = new RegExp(`^  x-axis ${QUOTED} \\[(${QUOTED}(?:, ${QUOTED})*)\\]$`);
  const yAxis = new RegExp(`^  y-axis ${QUOTED} (${NUM}) --> (${NUM})$`);
  const data = new RegExp(`^  (bar|line) \\[(${NUM}(?:, ${NUM})*)\\]$`);
  for (const line of lines.slice(1)) {
    const x = xAxis.exec(line);
    const y = yAxis.exec(line);
    const d = data.exec(line);
    if (x) labels = x[1]!.split(', ').map((l) => l.slice(1, -1));
    else if (y) {
      lo = Number(y[1]);
      hi = Number(y[2]);
    } else if (d) series[d[1] as 'bar' | 'line'] = d[2]!.split(', ').map(Number);
    else if (!title.test(line)) throw new Error(`unexpected mermaid line: ${JSON.stringify(line)}`);
  }
  expect(labels.length).toBeGreaterThan(0);
  expect(new Set(labels).size).toBe(labels.length);
  expect(lo).toBeLessThan(hi);
  for (const kind of ['bar', 'line'] as const) {
    expect(series[kind]).toHaveLength(labels.length);
    for (const v of series[kind]) {
      expect(v).toBeGreaterThanOrEqual(lo);
      expect(v).toBeLessThanOrEqual(hi);
    }
  }
  return { labels, series, lo, hi };
}

/** Every table has a header, a separator and rows with the same number of cells; fences are closed. */
export function checkWellFormed(markdown: string): void {
  const lines = markdown.split('\n');
  let fences = 0;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (/^`{3,}/.test(line)) fences++;
    if (fences % 2 === 0 && line.startsWith('| ')) {
      const block: string[] = [];
      while (i < lines.length && lines[i]!.startsWith('|')) block.push(lines[i++]!);
      const cells = (row: string) => row.replaceAll('\\|', '').split('|').length;
      expect(block.length, block.join('\n')).toBeGreaterThanOrEqual(2);
      expect(block[1], block.join('\n')).toMatch(/^\|( -{3}:? \|)+$/);
      for (const row of block) expect(cells(row), row).toBe(cells(block[0]!));
      continue;
    }
    i++;
  }
  expect(fences % 2, 'unclosed code fence').toBe(0);
  expect(markdown.split('<details>').length).toBe(markdown.split('</details>').length);
}
