// The journey suite (issue 37): every command block the docs mark with `<!-- journey: NAME -->` runs, in
// page order, as a user would type it (bash, this checkout's CLI as `hillclimb`), in a scratch
// repository, and what the page shows next to it — an output block, a phrase of its prose — must be
// what the command printed. A doc change that breaks a journey, or a command that changes without its
// doc, fails here. The marker grammar: journeys/markers.ts; what each journey is: journeys/registry.ts.
// Small on purpose: the toy targets (stdlib Python, no JAX), the replay agent, the local forge.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo as makeAdoptionRepo } from '../init/scratch.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { markerId } from './journeys/markers.js';
import { allMarkers, planJourney, type Step } from './journeys/plan.js';
import { JOURNEYS, type JourneyContext, RUN_ELSEWHERE } from './journeys/registry.js';
import { linkHillclimb, pathWithout, type Ran, runCommand, writeProgram } from './journeys/runner.js';
import { linePattern, resolveCommand, unmatchedLines } from './journeys/steps.js';

const markers = allMarkers();
const reached = new Set<string>();
const seconds: Record<string, number> = {};
const t = tempDir('hc-journeys-');
let ctx: JourneyContext;
let refusing: Server;

/** An address where nothing listens: a port the kernel gave and took back. */
async function deadAddress(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  const [faster, wrong, sameSpeed] = STANDARD_PATCHES;
  const loopRepo = join(t.dir, 'loop');
  const searchRepo = join(t.dir, 'search');
  const adoptRepo = join(t.dir, 'adopt');
  makeToyRepo(loopRepo);
  // Candidate 1 is iteration 1's patch; candidates 2 and 3 its slot files (src/agent/agents/replay.ts).
  // Only iteration 1 has patches: the no-op iterations after it end the run as stuck, at the fewest.
  const stuckSoon = TOY_CONFIG.replace(
    'loop:\n  iterations: 4\n',
    'loop:\n  iterations: 4\n  stuck_after: 2\n',
  );
  makeToyRepo(
    searchRepo,
    [
      { ...wrong!, name: '0001-wrong-math' },
      { ...sameSpeed!, name: '0001.2-same-speed' },
      { ...faster!, name: '0001.3-shorter-delay' },
    ],
    stuckSoon,
  );
  makeAdoptionRepo(adoptRepo);
  refusing = createServer((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}');
  });
  await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
  ctx = {
    loopRepo,
    searchRepo,
    adoptRepo,
    path: `${linkHillclimb(t.dir)}:${pathWithout(['codex', 'claude'])}`,
    fakeAgentBin: join(t.dir, 'fake-agent'),
    refusingApi: `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`,
    deadApi: await deadAddress(),
    downAgent: join(t.dir, 'agents', 'down.sh'),
    python: systemPython(),
  };
  writeProgram(
    join(t.dir, 'agents'),
    'down.sh',
    '#!/bin/sh\necho "connecting to the model API" >&2\necho "model API: http://127.0.0.1:9/v1 is not answering" >&2\nexit 75\n',
  );
  // Present on PATH, never reached: the key check runs before the agent does.
  writeProgram(ctx.fakeAgentBin, 'codex', '#!/bin/sh\necho "codex-cli 0.0.0"\n');
});

afterAll(async () => {
  await new Promise<void>((r) => refusing?.close(() => r()));
  t.cleanup();
  console.log(`journeys: seconds per journey: ${JSON.stringify(seconds)}`);
});

for (const journey of JOURNEYS) {
  describe(`journey ${journey.name}`, () => {
    const steps = planJourney(journey.name, markers, journey.skip);
    let last: Ran | undefined;

    beforeAll(async () => {
      await journey.before?.(ctx);
    });

    const title = (s: Step): string => {
      if (s.kind === 'command') {
        const added = journey.append?.command.test(s.text)
          ? ` (+ ${journey.append.args}: ${journey.append.why})`
          : '';
        return `${s.where}: ${s.text}${added}`;
      }
      if (s.kind === 'skipped') return `${s.where}: ${s.text} — skipped: ${s.why}`;
      if (s.kind === 'output') return `${markerId(s.marker)}: prints the lines the page shows`;
      return `${markerId(s.marker)}: prints \`${s.marker.text}\``;
    };

    for (const step of steps) {
      if (step.kind === 'skipped') {
        it.skip(title(step), () => {});
        continue;
      }
      it(title(step), async () => {
        reached.add(markerId(step.marker));
        if (step.kind === 'command') {
          // Only the placeholders this command names: a value may need what earlier steps left.
          const values = Object.fromEntries(
            Object.entries(journey.placeholders ?? {})
              .filter(([k]) => step.text.includes(`<${k}>`))
              .map(([k, v]) => [k, v(ctx)]),
          );
          let command = resolveCommand(step.text, values, step.where);
          if (journey.append?.command.test(step.text)) command = `${command} ${journey.append.args}`;
          const rule = journey.rules?.find((r) => r.command.test(step.text));
          last = await runCommand(command, {
            cwd: journey.cwd(ctx),
            env: journey.env?.(ctx) ?? {},
            interruptWhen: rule?.interruptWhen,
          });
          seconds[journey.name] = (seconds[journey.name] ?? 0) + last.seconds;
          const shown = `$ ${command}\n${last.output.slice(-4000)}`;
          expect(last.code, shown).toBe(rule?.code ?? 0);
          for (const p of rule?.prints ?? []) {
            if (typeof p === 'string') expect(last.output, shown).toContain(p);
            else expect(last.output, shown).toMatch(p);
          }
          rule?.after?.(ctx);
          return;
        }
        expect(last, 'no command ran before this check').toBeDefined();
        if (step.kind === 'output') {
          const m = step.marker;
          expect(
            unmatchedLines(m.block.lines, m.only, last!.output),
            `$ ${last!.command}\n${last!.output}`,
          ).toEqual([]);
        } else {
          expect(last!.output, `$ ${last!.command}\n${last!.output}`).toMatch(linePattern(step.marker.text));
        }
      }, 120_000);
    }
  });
}

describe('the journeys, all together', () => {
  it('reached every marked block and phrase of every journey page (none left out silently)', () => {
    const expected = markers.filter((m) => m.kind !== 'skip' && !(m.journey in RUN_ELSEWHERE)).map(markerId);
    expect([...reached].sort()).toEqual(expected.sort());
  });
});
