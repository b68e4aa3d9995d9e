import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, settingsSchema } from '../../shared/config';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/**
 * The documents whose ```bash examples run, in this order, against one host: later examples use what earlier
 * ones created (the HTTP API examples register member1 and the policy detect-cluster-not-ready; the concepts'
 * examples add member2 and the workload web; the CLI examples read them all).
 */
const RUNNABLE = ['README.md', 'docs/reference/http-api.md', 'docs/concepts.md', 'docs/reference/cli.md', 'docs/operations.md'];
/** Where the configuration table lives. */
const CONFIGURATION = 'docs/reference/configuration.md';

/** Every Markdown file of the documentation: the README and docs/, recursively. */
function documents(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith('.md') ? [join(dir, entry.name)] : [],
    );
  return ['README.md', ...walk('docs')];
}

interface Example {
  file: string;
  script: string;
  output?: unknown;
}

/** The ```bash examples of one document, each with the JSON output shown after it ("Output:"), if any. */
function examplesOf(file: string): Example[] {
  const text = read(file);
  const found: Example[] = [];
  const block = /```bash\n([\s\S]*?)```(\s*\nOutput:\s*\n+```json\n([\s\S]*?)```)?/g;
  for (let m = block.exec(text); m; m = block.exec(text)) {
    found.push({ file, script: m[1], ...(m[3] ? { output: JSON.parse(m[3]) } : {}) });
  }
  return found;
}

const examples = () => RUNNABLE.flatMap(examplesOf);

// The examples run with every check on, as in production.
const secrets = { ADMIN_TOKEN: 'readme-admin-token-0123456789', REPORTER_SIGNING_KEY: 'readme-signing-key-0123456789' };
let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ AUTH_MODE: 'required', FAILOVER_ENABLED: 'true', ...secrets });
});
afterAll(async () => host?.stop());

describe('README and docs', () => {
  it('has runnable examples, and every document with some is run', () => {
    expect(examples().length).toBeGreaterThanOrEqual(4);
    for (const file of documents()) {
      if (examplesOf(file).length > 0) expect(RUNNABLE, `${file} has bash examples: add it to RUNNABLE`).toContain(file);
    }
  });

  it('examples run against a local host, in order, and print what the docs show', async () => {
    for (const example of examples()) {
      const script = example.script.replaceAll('http://127.0.0.1:7071', host.url);
      const where = `${example.file}: ${example.script.split('\n')[0]}`;
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { env: { ...process.env, ...secrets } }).catch((error: Error) => {
        throw new Error(`${where}\n${error.message}`);
      });
      if (example.output !== undefined) expect(JSON.parse(stdout), where).toEqual(example.output);
    }
    const cluster = (await (await fetch(`${host.url}/api/clusters/member1`)).json()) as any;
    expect(cluster.spec.taints).toEqual([expect.objectContaining({ key: 'maintenance', effect: 'NoSchedule' })]);
    // The not-ready policy's window is open. The PreferNoSchedule example targets other clusters: applying it
    // re-evaluates only those, so member1 holds an unmatched window for it only once something else evaluated it.
    const windows = cluster.status.policyWindows as Array<{ policy: string; matched: boolean }>;
    expect(windows).toContainEqual(expect.objectContaining({ policy: 'detect-cluster-not-ready', matched: true }));
    expect(windows.filter((w) => w.policy !== 'detect-cluster-not-ready')).toEqual(
      windows.filter((w) => w.policy === 'disk-pressure-soft').map(() => expect.objectContaining({ policy: 'disk-pressure-soft', matched: false })),
    );
    const nginx = (await (await fetch(`${host.url}/api/resourcebindings/default/nginx`)).json()) as any;
    expect(nginx.spec.failover).toEqual({ cluster: { purgeMode: 'Directly', tolerationSeconds: 100 } });
    expect(((await (await fetch(`${host.url}/api/fleet`)).json()) as any).paused).toBe(false);
    const web = (await (await fetch(`${host.url}/api/resourcebindings/default/web`)).json()) as any;
    expect(web.spec.activeEvictionHistory).toEqual([{ clusterName: 'member1', creationTimestamp: expect.any(String) }]);
    expect(web.spec.gracefulEvictionTasks).toEqual([]);
    expect(web.status.propagationPolicy).toEqual({ kind: 'PropagationPolicy', namespace: 'default', name: 'web', fields: ['placement', 'failover'] });
    // The CLI examples run through npx (about 2.5 s of start-up each).
  }, 180_000);

  it('documents every app setting the code reads, with its default', () => {
    const defaults = loadConfig({});
    const table = read(CONFIGURATION);
    // The first table that names a setting is the app's (the local host's table comes after).
    const documented = new Map<string, string>();
    for (const m of table.matchAll(/^\| `([A-Za-z_]+)` \| ([^|]+) \|/gm)) if (!documented.has(m[1])) documented.set(m[1], m[2].trim());
    for (const setting of Object.keys(settingsSchema.shape)) expect(documented.has(setting), `${CONFIGURATION} lists ${setting}`).toBe(true);
    expect(documented.get('AUTH_MODE')).toBe(`\`${defaults.auth.mode}\``);
    expect(documented.get('CLUSTER_MONITOR_GRACE_PERIOD_SECONDS')).toBe(`\`${defaults.clusterMonitorGracePeriodSeconds}\``);
    expect(documented.get('CLUSTER_STARTUP_GRACE_PERIOD_SECONDS')).toBe(`\`${defaults.clusterStartupGracePeriodSeconds}\``);
    expect(documented.get('AUTO_REGISTER_CLUSTERS')).toBe(`\`${defaults.autoRegisterClusters}\``);
    expect(documented.get('MAX_REQUEST_BODY_BYTES')).toBe(`\`${defaults.maxRequestBodyBytes}\``);
    expect(documented.get('EVENT_LIST_LIMIT')).toBe(`\`${defaults.eventListLimit}\``);
    expect(documented.get('FAILOVER_ENABLED')).toBe(`\`${defaults.failoverEnabled}\``);
    expect(documented.get('RESOURCE_EVICTION_RATE')).toBe(`\`${defaults.rates.resourceEvictionRate}\``);
    expect(documented.get('SECONDARY_RESOURCE_EVICTION_RATE')).toBe(`\`${defaults.rates.secondaryResourceEvictionRate}\``);
    expect(documented.get('UNHEALTHY_CLUSTER_THRESHOLD')).toBe(`\`${defaults.rates.unhealthyClusterThreshold}\``);
    expect(documented.get('LARGE_CLUSTER_NUM_THRESHOLD')).toBe(`\`${defaults.rates.largeClusterNumThreshold}\``);
  });
});
