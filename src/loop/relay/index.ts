/** The agent's tools relay between a propose job and a credentialed job on the measuring machine. */
export { markRelayDone, type RelayClientOptions, relayBackend } from './client.js';
export { CLIENT as RELAY_CLIENT, doneName, relayPrefix } from './protocol.js';
export { markRelayClosed, type ServeOptions, type ServeReport, serveToolsRelay } from './serve.js';
