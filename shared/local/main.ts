import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, loadConfig } from '../config';
import { warnAboutAuth } from '../http/auth';
import { QUEUES } from '../queue/storageQueue';
import { controlPlane } from '../runtime';
import { storageFromConnectionString } from '../store/connection';
import { ensureTables, TableLeaseStore, TABLES } from '../store/tableStorage';
import { errorFields, jsonLogger } from '../telemetry/log';
import { shutdownTelemetry } from '../telemetry/setup';
import { EmbeddedAzurite, startAzurite } from './azurite';
import { installFunctionsCore, registeredFunctions, triggerOf } from './functionsCore';
import { LocalFunctionsHost } from './host';
import { readHostSettings } from './hostJson';
import { startSimulatedReporters } from './simulate';

/**
 * `npm start`: the project's own Functions host. Uses AzureWebJobsStorage when set (so several hosts can
 * share one Azurite or a real account), otherwise starts Azurite in this process (in memory, or on disk
 * under AZURITE_LOCATION).
 */

function projectRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'host.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('host.json not found above ' + __dirname);
    dir = parent;
  }
  return dir;
}

const PORT_PATTERN = /^\d{1,5}$/;

const USAGE = `usage: npm start [-- --simulate]
  --simulate   stand in for the clusters' reporters: every registered cluster reports its last conditions
               every 10 s (Ready=True if it never reported), so a local fleet does not go Unknown by itself`;

async function main(): Promise<void> {
  const started = performance.now();
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--simulate');
  if (unknown.length > 0 || args.includes('--help')) {
    process.stderr.write(`${unknown.length > 0 ? `unknown argument ${JSON.stringify(unknown[0])}\n` : ''}${USAGE}\n`);
    process.exit(2);
  }
  const simulate = args.includes('--simulate');
  installFunctionsCore();
  // Like `func start`, which ignores function keys locally, the local host checks nothing unless told to.
  if (process.env.AUTH_MODE === undefined) process.env.AUTH_MODE = 'none';
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  // Made after the settings are read, so an invalid LOG_LEVEL stops the host with the others.
  const log = jsonLogger({ level: config.logLevel });
  const portSetting = process.env.PORT ?? '7071';
  if (!PORT_PATTERN.test(portSetting) || Number(portSetting) > 65535) {
    process.stderr.write(`Invalid app settings:\n  - PORT: must be a port number 0-65535, got "${portSetting}"\n`);
    process.exit(1);
  }
  const root = projectRoot();
  const settings = readHostSettings(join(root, 'host.json'));

  // Azurite starts on a worker thread while this thread loads the app.
  const azuriteStarting: Promise<EmbeddedAzurite> | undefined = config.storageConnectionString
    ? undefined
    : startAzurite({ location: process.env.AZURITE_LOCATION || undefined });

  // Load the app: every import in functions/index registers one function through @azure/functions.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(join(__dirname, '..', '..', 'functions', 'index'));
  const functions = registeredFunctions();

  const azurite = await azuriteStarting;
  let storageLabel = 'AzureWebJobsStorage';
  if (azurite) {
    process.env.AzureWebJobsStorage = azurite.connectionString;
    storageLabel = process.env.AZURITE_LOCATION ? `embedded Azurite on disk at ${process.env.AZURITE_LOCATION}` : 'embedded Azurite in memory';
  }
  const storage = storageFromConnectionString(process.env.AzureWebJobsStorage!);

  const queueNames = new Set<string>(Object.values(QUEUES));
  for (const fn of functions) if (triggerOf(fn).type === 'queueTrigger') queueNames.add(String(triggerOf(fn).queueName));
  await ensureTables(storage.tableService());
  await Promise.all([...queueNames].flatMap((name) => [storage.queue(name).createIfNotExists(), storage.queue(`${name}-poison`).createIfNotExists()]));

  const host = new LocalFunctionsHost({
    functions,
    settings,
    queue: (name) => storage.queue(name),
    leases: new TableLeaseStore(storage.table(TABLES.leases)),
    log,
    port: Number(portSetting),
    queueHoldSeconds: process.env.LOCAL_QUEUE_HOLD_SECONDS ? Number(process.env.LOCAL_QUEUE_HOLD_SECONDS) : undefined,
  });
  try {
    await host.start();
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'EADDRINUSE') {
      process.stderr.write(`port ${portSetting} is in use (another npm start?): stop it, or start this one with PORT=<another port> npm start\n`);
      await azurite?.close();
      process.exit(1);
    }
    throw error;
  }
  log.info('host started', {
    url: host.url,
    api: `${host.url}/api/`,
    console: `${host.url}/api/console/`,
    hostId: host.id,
    storage: storageLabel,
    startupMs: Math.round(performance.now() - started),
    functions: functions.map((fn) => `${fn.name}:${triggerOf(fn).type}`),
  });
  warnAboutAuth(config.auth, (message) => log.warn(message));
  // The first thing a newcomer needs to know: with the gate off, clusters are tainted but nothing moves.
  if (config.failoverEnabled) log.info('Failover gate is ON: workloads are evicted from clusters with NoExecute taints (FAILOVER_ENABLED=true)');
  else
    log.warn(
      'Failover gate is OFF: clusters are tainted, but no workload is evicted. Start with FAILOVER_ENABLED=true npm start to turn it on (a drain, cluster-failover drain CLUSTER, still evicts)',
    );
  const reporters = simulate ? startSimulatedReporters(controlPlane(), log) : undefined;
  if (!simulate) log.info('no simulated reporters: clusters that nobody reports turn Unknown; npm start -- --simulate reports for them');
  if (azurite) {
    log.info('embedded Azurite endpoints', { queueEndpoint: azurite.queueEndpoint, tableEndpoint: azurite.tableEndpoint });
  }

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info('host stopping', { signal });
    try {
      await reporters?.stop();
      await host.stop();
      // Export the spans and metrics still buffered before Azurite and the process go.
      await shutdownTelemetry();
      await azurite?.close();
      log.info('host stopped', { signal });
      process.exit(0);
    } catch (error) {
      log.error('host stop failed', errorFields(error));
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error) => {
  process.stderr.write(`host failed to start: ${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});
