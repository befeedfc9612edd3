/**
 * A journey's plan: its markers, in page order, turned into the steps the suite takes — commands to
 * run, lines left out (with why), documented output and phrases to check. Pure, so the unit test
 * can check every plan without running anything.
 */
import { type Marker, markerId, readMarkers } from './markers.js';
import { asTyped, commandsOf } from './steps.js';

/** The pages that carry journey markers; a page that gets a marker must be listed here. */
export const JOURNEY_PAGES = [
  'README.md',
  'docs/setup.md',
  'docs/user-guide.md',
  'docs/reports.md',
  'docs/troubleshooting.md',
  'docs/kernels.md',
  'docs/actions.md',
  'docs/forge-and-store.md',
  'docs/agents.md',
];

/** A line of a marked block the journey does not run, and why; it must match at least one line. */
export interface LineSkip {
  command: RegExp;
  why: string;
}

export type Step =
  | { kind: 'command'; marker: Marker; where: string; text: string }
  | { kind: 'skipped'; marker: Marker; where: string; text: string; why: string }
  | { kind: 'output'; marker: Extract<Marker, { kind: 'output' }> }
  | { kind: 'expects'; marker: Extract<Marker, { kind: 'expects' }> };

/** Every marker of every journey page. */
export function allMarkers(): Marker[] {
  return JOURNEY_PAGES.flatMap((page) => readMarkers(page));
}

/** The steps of `journey`, from its markers in page order. Skip markers are not steps. */
export function planJourney(journey: string, markers: Marker[], skips: LineSkip[] = []): Step[] {
  const steps: Step[] = [];
  for (const m of markers.filter((x) => x.journey === journey)) {
    if (m.kind === 'commands') {
      for (const { where, text: shown } of commandsOf(m.block)) {
        const c = { where, text: asTyped(shown) };
        const skip = skips.find((s) => s.command.test(c.text));
        steps.push(
          skip
            ? { kind: 'skipped', marker: m, where: c.where, text: c.text, why: skip.why }
            : { kind: 'command', marker: m, where: c.where, text: c.text },
        );
      }
    } else if (m.kind === 'run')
      steps.push({ kind: 'command', marker: m, where: markerId(m), text: m.command });
    else if (m.kind === 'output') steps.push({ kind: 'output', marker: m });
    else if (m.kind === 'expects') steps.push({ kind: 'expects', marker: m });
  }
  return steps;
}
