/**
 * What is installed and what is missing for a config. Other modules import from this entry, never from
 * its files.
 */
export { defaultChecks, formatChecks, runChecks } from './doctor.js';
