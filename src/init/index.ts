/**
 * hillclimb init: a repository's hillclimb.yml, workflows and prompts. Other modules import from this
 * entry, never from its files.
 */

export { type ExistingRepository, readExistingRepository } from './add-target.js';
export { CONFIG_FILE } from './answers.js';
export type { Ask, InitFlags } from './gather.js';
export { detectBase, gatherAnswers, nonInteractiveError } from './gather.js';
export { applyPlan, type ConfigPlan, nextSteps, planFiles, requirementsWarning } from './init.js';
export { resolvePin, UnknownHillclimbRepository } from './pin.js';
