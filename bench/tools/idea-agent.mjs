// A scripted `command` agent for `npm run bench:tools`: a fixed sequence of ideas for the toy kernel,
// tried the way an agent would with and without the harness's tools (docs/agents.md, "Tools").
//
//   node idea-agent.mjs IDEAS.json blind   commits idea N at iteration N, whatever it is
//   node idea-agent.mjs IDEAS.json tools   tries the ideas in order on its tree: `check` each, `screen`
//                                          the ones that pass, and keeps the first that screens faster
//
// An idea is {name, edits: [{from, to}]} on toy/kernel.py; one whose text is gone (the champion moved
// on) is skipped. Writes the structured result the harness asks for; never prints a number it was not
// told by a tool.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const [ideasFile, mode] = process.argv.slice(2);
const ideas = JSON.parse(readFileSync(ideasFile, 'utf8'));
const KERNEL = 'toy/kernel.py';
const original = readFileSync(KERNEL, 'utf8');
/** A screen must clear this to be kept (the loop's practical delta is 2%). */
const KEEP_ABOVE = 1.05;

const apply = (idea) => {
  let text = original;
  for (const { from, to } of idea.edits) {
    if (!text.includes(from)) return false;
    text = text.replace(from, to);
  }
  writeFileSync(KERNEL, text);
  return true;
};
const tool = (...args) => {
  const r = spawnSync(process.execPath, [process.env.HILLCLIMB_TOOLS_CLIENT, ...args], { encoding: 'utf8' });
  return { ok: r.status === 0, text: `${r.stdout}${r.stderr}`.trim() };
};
const result = (hypothesis, summary) =>
  writeFileSync(
    process.env.HILLCLIMB_RESULT_FILE,
    JSON.stringify({ hypothesis, summary, next_idea: 'the next idea on the list' }),
  );

if (mode === 'blind') {
  const idea = ideas[Number(process.env.HILLCLIMB_ITERATION) - 1];
  if (idea && apply(idea)) result(`Idea: ${idea.name}.`, `Applied ${idea.name} without checking it.`);
  else result('No idea left.', 'No change.');
} else {
  const tried = [];
  let kept;
  for (const idea of ideas) {
    if (!apply(idea)) continue;
    const check = tool('check');
    if (!check.ok) {
      tried.push(`${idea.name}: check failed`);
      continue;
    }
    const screen = tool('screen', '{"rounds": 3}');
    const estimate = Number(/: ([\d.]+)× the champion/.exec(screen.text)?.[1]);
    tried.push(`${idea.name}: ${screen.ok ? `screened ${estimate}×` : 'screen failed'}`);
    if (screen.ok && estimate > KEEP_ABOVE) {
      kept = idea;
      break;
    }
  }
  if (!kept) writeFileSync(KERNEL, original);
  result(
    kept ? `Idea: ${kept.name}.` : 'No idea on the list helps.',
    `Tried with the tools: ${tried.join('; ') || 'nothing applicable'}.`,
  );
}
