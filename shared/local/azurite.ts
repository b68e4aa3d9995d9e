import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Azurite's Queue and Table services started in this process (in memory, or on disk under `location`).
 * Azurite has no documented in-process API, so this uses its server classes directly; the version is pinned.
 */
interface AzuriteServer {
  start(): Promise<void>;
  close(): Promise<void>;
  clean(): Promise<void>;
  getHttpServerAddress(): string;
}
type ServerClass = new (config: unknown) => AzuriteServer;
type ConfigClass = new (...args: unknown[]) => unknown;

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

export async function startAzurite(options: AzuriteOptions = {}): Promise<EmbeddedAzurite> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const QueueServer = require('azurite/dist/src/queue/QueueServer').default as ServerClass;
  const QueueConfiguration = require('azurite/dist/src/queue/QueueConfiguration').default as ConfigClass;
  const TableServer = require('azurite/dist/src/table/TableServer').default as ServerClass;
  const TableConfiguration = require('azurite/dist/src/table/TableConfiguration').default as ConfigClass;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const host = options.host ?? '127.0.0.1';
  const inMemory = !options.location;
  const location = options.location ? resolve(options.location) : '';
  if (location) mkdirSync(location, { recursive: true });
  const queueConfig = new QueueConfiguration(
    host, options.queuePort ?? 0, undefined,
    inMemory ? 'queue-meta' : join(location, '__azurite_db_queue__.json'),
    inMemory ? 'queue-extent' : join(location, '__azurite_db_queue_extent__.json'),
    inMemory ? undefined : [{ locationId: 'Default', locationPath: join(location, '__queuestorage__'), maxConcurrency: 1 }],
    false, undefined, false, undefined, false,
    true, // skipApiVersionCheck: @azure/storage-queue 12.30 sends a newer API version than Azurite 3.35 knows
    '', '', '', undefined, false, inMemory,
  );
  const tableConfig = new TableConfiguration(
    host, options.tablePort ?? 0, undefined,
    inMemory ? 'table-meta' : join(location, '__azurite_db_table__.json'),
    false, false, undefined, undefined, false, true, '', '', '', undefined, false, inMemory,
  );
  const queue = new QueueServer(queueConfig);
  const table = new TableServer(tableConfig);
  await Promise.all([queue.start(), table.start()]);
  const queueEndpoint = `${queue.getHttpServerAddress()}/${ACCOUNT}`;
  const tableEndpoint = `${table.getHttpServerAddress()}/${ACCOUNT}`;
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${DEV_KEY};QueueEndpoint=${queueEndpoint};TableEndpoint=${tableEndpoint};`;
  return {
    connectionString,
    queueEndpoint,
    tableEndpoint,
    async close() {
      await Promise.all([queue.close(), table.close()]);
    },
  };
}
