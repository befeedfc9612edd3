/**
 * The project root, the Python venv and the package version. Other modules import from this entry,
 * never from its files.
 */
export {
  DEFAULT_REQUIREMENTS,
  interpreterReadPaths,
  type RequirementPaths,
  setupPython,
  venvPython,
} from './python.js';
export { parseRequirementsSpec, requirementLines } from './requirements.js';
export { CONFIG_FILE, findProjectRoot, packageRoot, packageVersion } from './root.js';
