import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Azurite's Queue and Table services, embedded: started in a worker thread of this process (in memory, or
 * on disk under `location`). The worker loads Azurite on the second core while the main thread loads the
 * app, which keeps `npm start` fast. Azurite has no documented in-process API, so this uses its server
 * classes directly; the version is pinned in package.json.
 */

const ACCOUNT = 'devstoreaccount1';
// Azurite's well-known development key: public, documented, and accepted only by the emulator.
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface EmbeddedAzurite {
  connectionString: string;
  queueEndpoint: string;
  tableEndpoint: string;
  close(): Promise<void>;
}

export interface AzuriteOptions {
  /** Folder for on-disk persistence; in memory when absent. */
  location?: string;
  host?: string;
  queuePort?: number;
  tablePort?: number;
}

// Plain JavaScript run in the worker (eval), so it needs no TypeScript loader.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { join } = require('node:path');
const load = (p) => require(workerData.modules[p]).default;
const QueueServer = load('QueueServer'), QueueConfiguration = load('QueueConfiguration');
const TableServer = load('TableServer'), TableConfiguration = load('TableConfiguration');
const { host, location, queuePort, tablePort } = workerData;
const inMemory = !location;
// Argument order: azurite/dist/src/queue/QueueConfiguration.js and table/TableConfiguration.js (3.35.0).
const queue = new QueueServer(new QueueConfiguration(
  host, queuePort, undefined,
  inMemory ? 'queue-meta' : join(location, '__azurite_db_queue__.json'),
  inMemory ? 'queue-extent' : join(location, '__azurite_db_queue_extent__.json'),
  inMemory ? undefined : [{ locationId: 'Default', locationPath: join(location, '__queuestorage__'), maxConcurrency: 1 }],
  false, undefined, false, undefined, false,
  true, // skipApiVersionCheck: @azure/storage-queue 12.30 sends a newer API version than Azurite 3.35 knows
  '', '', '', undefined, false, inMemory));
const table = new TableServer(new TableConfiguration(
  host, tablePort, undefined,
  inMemory ? 'table-meta' : join(location, '__azurite_db_table__.json'),
  false, false, undefined, undefined, false, true, '', '', '', undefined, false, inMemory));
Promise.all([queue.start(), table.start()]).then(
  () => parentPort.postMessage({ ready: true, queue: queue.getHttpServerAddress(), table: table.getHttpServerAddress() }),
  (error) => parentPort.postMessage({ ready: false, error: String(error && error.stack || error) }));
parentPort.on('message', (message) => {
  if (message === 'close') Promise.all([queue.close(), table.close()]).finally(() => parentPort.postMessage({ closed: true }));
});
`;

export async function startAzurite(options: AzuriteOptions = {}): Promise<EmbeddedAzurite> {
  const location = options.location ? resolve(options.location) : '';
  if (location) mkdirSync(location, { recursive: true });
  const modules = Object.fromEntries(
    [
      ['QueueServer', 'queue/QueueServer'],
      ['QueueConfiguration', 'queue/QueueConfiguration'],
      ['TableServer', 'table/TableServer'],
      ['TableConfiguration', 'table/TableConfiguration'],
    ].map(([key, path]) => [key, require.resolve(`azurite/dist/src/${path}`)]),
  );
  const host = options.host ?? '127.0.0.1';
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { modules, host, location, queuePort: options.queuePort ?? 0, tablePort: options.tablePort ?? 0 },
    // Azurite's own console output would interleave with the host's JSON log lines.
    stdout: true,
  });
  worker.stdout.resume();
  const ready = await new Promise<{ queue: string; table: string }>((resolvePromise, reject) => {
    worker.once('message', (message: { ready: boolean; queue: string; table: string; error?: string }) =>
      message.ready ? resolvePromise(message) : reject(new Error(`Azurite failed to start: ${message.error}`)),
    );
    worker.once('error', reject);
  });
  const queueEndpoint = `${ready.queue}/${ACCOUNT}`;
  const tableEndpoint = `${ready.table}/${ACCOUNT}`;
  return {
    connectionString: `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${DEV_KEY};QueueEndpoint=${queueEndpoint};TableEndpoint=${tableEndpoint};`,
    queueEndpoint,
    tableEndpoint,
    async close() {
      await new Promise<void>((resolvePromise) => {
        worker.once('message', () => resolvePromise());
        worker.once('exit', () => resolvePromise());
        worker.postMessage('close');
      });
      await worker.terminate();
    },
  };
}
