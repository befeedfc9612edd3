/**
 * Forges (local, github): branches, pull requests, sticky comments, labels. Other modules import from
 * this entry, never from its files.
 */
export { buildForge } from './factory.js';
export type { CommentStamp, Forge } from './forge.js';
export { MANAGED_LABEL_PREFIX } from './labels.js';
export { BODY_CAP_CHARS, capBody, capTitle, TITLE_CAP_CHARS } from './limits.js';
export { formatPull, formatPullList, listLocalPulls, showLocalPull } from './local-reader.js';
