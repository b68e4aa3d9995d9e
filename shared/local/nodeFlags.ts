import { join } from 'node:path';

/**
 * The V8 flags the host runs with: locally (`npm start`, and the hosts the tests and benches start) and on
 * Azure (the app setting `languageWorkers__node__arguments`, infra/app.bicep). A test keeps the three the same.
 *
 * `--heap-growing-percent=100`: after a full collection the old generation may grow to twice what it kept,
 * where V8 otherwise lets it grow up to about four times when collections are cheap, as they are here (some
 * 40–50 MB live, collected in about 10 ms). At 1,000 clusters / 100,000 bindings the host's memory then peaks
 * at about 230 MB in every phase instead of 350–380 MB while evicting, with planning, evictions and
 * registrations as fast (docs/measurements.md, "Host memory").
 */
export const HOST_NODE_FLAGS: readonly string[] = ['--heap-growing-percent=100'];

/** Node's arguments that start the local host as `npm start` does: these flags, tsx, `shared/local/main.ts`. */
export const localHostArgs = (): string[] => [...HOST_NODE_FLAGS, '--import', 'tsx', join(__dirname, 'main.ts')];
