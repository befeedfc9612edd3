/**
 * Errors, loggers, durable files, locks, redaction, registries: what every module uses. Other modules
 * import from this entry, never from its files.
 */

export { type UnzipLimits, unzipBounded } from './bounded-unzip.js';
export { assertBranchName } from './branch-name.js';
export {
  ApiError,
  ConfigError,
  ExitCode,
  errorMessage,
  HillclimbError,
  InputError,
  isHillclimbError,
} from './errors.js';
export {
  appendLineDurable,
  readJson,
  readJsonLines,
  readTextFile,
  sha256File,
  writeFileAtomic,
  writeJsonAtomic,
} from './files.js';
export type { WaitingLockOptions } from './lock.js';
export { takeLock, withFileLock } from './lock.js';
export type { Logger } from './log.js';
export { actionsLogger, terminalLogger, withoutControls } from './log.js';
export type { TellingLineOptions } from './log-lines.js';
export { tellingLogLine } from './log-lines.js';
export { isSecretName, redact, secretsFromEnv } from './redact.js';
export { Registry } from './registry.js';
export { type CopyOptions, copyPlainTree, notPlainFile, readPlainFile } from './untrusted-files.js';
