// Structural checks of rendered markdown shared by the report tests: mermaid charts that parse the
// way mermaid's xychart grammar expects, tables that are whole, fences that are closed.
import { expect } from 'vitest';

/** The bodies of ```mermaid blocks. */
export function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```mermaid\n([\s\S]*?)\n```$/gm)].map((m) => m[1]!);
}

const NUM = String.raw`-?\d+(?:\.\d+)?`;
const QUOTED = String.raw`"[^"\n]*"`;

/**
 * Checks an xychart-beta source line by line (after an optional `---` config block, whose only key may
 * be the plot colour palette); returns the parsed data for further assertions. `series.bar` is the first
 * bar series, `bars` all of them.
 */
export function checkXyChart(source: string): {
  labels: string[];
  series: Record<'bar' | 'line', number[]>;
  bars: number[][];
  palette: string[] | undefined;
  lo: number;
  hi: number;
} {
  let lines = source.split('\n');
  let palette: string[] | undefined;
  if (lines[0] === '---') {
    const end = lines.indexOf('---', 1);
    expect(end).toBeGreaterThan(0);
    const config = lines.slice(1, end);
    expect(config.slice(0, 3)).toEqual(['config:', '  themeVariables:', '    xyChart:']);
    const colours = /^ {6}plotColorPalette: "((?:#[0-9a-f]{6}(?:, )?)+)"$/.exec(config[3] ?? '');
    expect(colours, config.join('\n')).not.toBeNull();
    expect(config).toHaveLength(4);
    palette = colours![1]!.split(', ');
    lines = lines.slice(end + 1);
  }
  expect(lines[0]).toBe('xychart-beta');
  let labels: string[] = [];
  let lo = Number.NaN;
  let hi = Number.NaN;
  const bars: number[][] = [];
  let line: number[] = [];
  const title = new RegExp(`^  title ${QUOTED}$`);
  const xAxis = new RegExp(`^  x-axis ${QUOTED} \\[(${QUOTED}(?:, ${QUOTED})*)\\]$`);
  const yAxis = new RegExp(`^  y-axis ${QUOTED} (${NUM}) --> (${NUM})$`);
  const data = new RegExp(`^  (bar|line) \\[(${NUM}(?:, ${NUM})*)\\]$`);
  for (const text of lines.slice(1)) {
    const x = xAxis.exec(text);
    const y = yAxis.exec(text);
    const d = data.exec(text);
    if (x) labels = x[1]!.split(', ').map((l) => l.slice(1, -1));
    else if (y) {
      lo = Number(y[1]);
      hi = Number(y[2]);
    } else if (d) {
      const values = d[2]!.split(', ').map(Number);
      if (d[1] === 'bar') bars.push(values);
      else line = values;
    } else if (!title.test(text)) throw new Error(`unexpected mermaid line: ${JSON.stringify(text)}`);
  }
  expect(labels.length).toBeGreaterThan(0);
  expect(new Set(labels).size).toBe(labels.length);
  expect(lo).toBeLessThan(hi);
  for (const values of [...bars, line]) {
    if (values === line && line.length === 0 && bars.length > 0) continue;
    expect(values).toHaveLength(labels.length);
    for (const v of values) {
      expect(v).toBeGreaterThanOrEqual(lo);
      expect(v).toBeLessThanOrEqual(hi);
    }
  }
  return { labels, series: { bar: bars[0] ?? [], line }, bars, palette, lo, hi };
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
