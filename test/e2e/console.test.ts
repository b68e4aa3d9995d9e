import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { axeViolations, launchBrowser } from '../helpers/browser';
import { binding, cluster } from '../helpers/fleet';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';

/**
 * The operator console in a real browser against a real local host (AUTH_MODE=required): the token typed
 * into the page, a cluster that fails and is tainted by a policy, the queue held by Pause and drained
 * after Resume, a workload's history, the what-if panel, keyboard navigation and axe-core on every view.
 */
const ADMIN = 'console-admin-token-0123456789';
const SIGNING = 'console-signing-key-0123456789';
const ROOT = join(__dirname, '..', '..');
const BINDINGS = 15;
const run = promisify(execFile);

let host: HostProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;

async function apply(objects: unknown[]): Promise<void> {
  const res = await fetch(`${host.url}/api/apply`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify(objects),
  });
  if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${await res.text()}`);
}

/** A signed health report, as the cluster's reporter sends it. */
async function reportReady(name: string, status: 'True' | 'False'): Promise<void> {
  const body = JSON.stringify({ conditions: [{ type: 'Ready', status, reason: status === 'True' ? 'ClusterReady' : 'ClusterNotReachable' }] });
  const ts = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${host.url}/api/clusters/${name}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(SIGNING, name), ts, body) },
    body,
  });
  if (res.status !== 200) throw new Error(`report failed: ${res.status} ${await res.text()}`);
}

async function expectAccessible(view: string): Promise<void> {
  const violations = await axeViolations(page);
  expect(
    violations.map((v) => `${view}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.html).join(' | ')}`),
    `axe-core violations on the ${view} view`,
  ).toEqual([]);
}

/** Polls the page until the assertion holds (vitest's default of 1 s is too short for a 2 s refresh). */
const eventually = <T>(read: () => T | Promise<T>, timeout = 10_000) => expect.poll(read, { timeout, interval: 100 });
const focused = () => page.evaluate<string | undefined>('document.activeElement?.textContent');
const heading = () => page.getByRole('heading', { level: 2 });
const cell = (row: Locator, column: string) => row.locator(`td[data-col="${column}"]`);

beforeAll(async () => {
  // A fresh bundle (npm test builds it too; this keeps the file runnable on its own).
  await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'buildConsole.ts')], { cwd: ROOT });
  [host, browser] = await Promise.all([
    startHostProcess({
      FAILOVER_ENABLED: 'true',
      AUTH_MODE: 'required',
      ADMIN_TOKEN: ADMIN,
      REPORTER_SIGNING_KEY: SIGNING,
      RESOURCE_EVICTION_RATE: '5',
    }),
    launchBrowser(),
  ]);
  await apply([
    ...['edge1', 'edge2', 'edge3', 'edge4'].map((n) => cluster(n)),
    {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name: 'edge-not-ready' },
      spec: {
        targetCluster: { clusterNames: ['edge1'] },
        matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
        taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1 }],
      },
    },
    ...Array.from({ length: BINDINGS }, (_, i) => binding(`shop${i}`, ['edge1'])),
  ]);
  await Promise.all(['edge1', 'edge2', 'edge3', 'edge4'].map((n) => reportReady(n, 'True')));
  // The host's own CSP forbids inline scripts; axe-core is injected by the test, so the context bypasses it.
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC', bypassCSP: true });
  page = await context.newPage();
  // A missing element fails the step in 10 s with its name, well inside the test's time.
  page.setDefaultTimeout(10_000);
}, 30_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await host?.stop();
});

describe('operator console', () => {
  it('is served by the function app: index, assets, 404 and 405', async () => {
    for (const path of ['console', 'console/', 'console/index.html']) {
      const res = await fetch(`${host.url}/api/${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toContain('/api/console/app.js');
    }
    const js = await fetch(`${host.url}/api/console/app.js`);
    expect(js.headers.get('content-type')).toContain('text/javascript');
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect((await fetch(`${host.url}/api/console/app.css`)).headers.get('content-type')).toContain('text/css');
    for (const path of ['console/nope.js', 'console/..%2Fpackage.json', 'console/../../package.json', 'console/dist/console/app.js']) {
      const res = await fetch(`${host.url}/api/${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
    expect((await fetch(`${host.url}/api/console/app.js`, { method: 'POST' })).status).toBe(405);
    const head = await fetch(`${host.url}/api/console/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('walks the failover of a cluster: taint, paused queue, drain after resume, the workload, what-if', async () => {
    await page.goto(`${host.url}/api/console#/fleet`);
    await eventually(() => heading().textContent()).toBe('Fleet');

    // Keyboard: the skip link comes first, then the views; Enter on a nav link changes the view.
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Fleet');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Eviction queue');
    await page.keyboard.press('Enter');
    await eventually(() => heading().textContent()).toBe('Eviction queue');
    expect(page.url()).toMatch(/#\/queue$/);
    expect(await page.evaluate<string>('document.activeElement?.tagName')).toBe('H2');
    await page.getByRole('link', { name: 'Fleet', exact: true }).click();

    const edge1 = page.locator('tr[data-cluster="edge1"]');
    await edge1.waitFor();
    await eventually(() => edge1.textContent()).toContain('Ready=True');
    await eventually(() => page.locator('.u-wrap, figure.chart, .empty').count()).toBeGreaterThan(0);
    await expectAccessible('fleet');

    // Without the token the actions say so, and the API's 401 shows in the alert region; then the token is typed in.
    const pause = page.getByRole('button', { name: /^Pause evictions/ });
    await eventually(() => pause.textContent()).toBe('Pause evictions (admin token needed)');
    await pause.click();
    await eventually(() => page.getByRole('alert').textContent()).toContain('enter the admin token above');
    await page.getByLabel('Admin token').fill(ADMIN);
    await page.getByRole('button', { name: 'Use token' }).click();
    await eventually(() => pause.textContent()).toBe('Pause evictions');
    expect(await page.evaluate<string>('JSON.stringify(sessionStorage)')).toContain(ADMIN);
    expect(page.url()).not.toContain(ADMIN);

    await pause.click();
    await eventually(() => page.getByRole('alert').textContent()).toBe('');
    const evictionSwitch = page.getByTestId('eviction-switch');
    await eventually(() => evictionSwitch.textContent(), 10_000).toBe('paused');

    // edge1 fails: the policy taints it NoExecute after 1 s, and the fleet view says who holds the taint.
    await reportReady('edge1', 'False');
    await eventually(() => edge1.textContent(), 15_000).toContain('cluster.karmada.io/not-ready:NoExecute');
    expect(await edge1.textContent()).toContain('held by policy edge-not-ready');
    expect(await edge1.textContent()).toContain('Ready=False');

    // The "why" of the taint: holders and the cluster's events.
    await page.getByRole('link', { name: 'Why is edge1 tainted?' }).click();
    await eventually(() => heading().textContent()).toBe('Cluster edge1');
    await eventually(() => page.locator('main').textContent(), 10_000).toContain('TaintAdded');
    await expectAccessible('cluster');

    // The queue holds every eviction while paused.
    await page.getByRole('link', { name: 'Eviction queue' }).click();
    const queueRow = page.locator('tr[data-queue-cluster="edge1"]');
    await eventually(() => cell(queueRow, 'pending').textContent(), 15_000).toBe(String(BINDINGS));
    expect(await page.locator('table[data-rows-of="edge1"] tbody tr[data-state="pending"]').count()).toBe(BINDINGS);
    expect(await page.getByTestId('queue-state').textContent()).toContain('paused');
    await expectAccessible('queue');

    // Resume: the rows drain to done at 5/s, live, until nothing waits.
    await page.getByRole('button', { name: 'Resume evictions' }).click();
    await eventually(() => page.getByTestId('queue-state').textContent(), 10_000).toContain('running');
    await eventually(() => cell(queueRow, 'done').textContent(), 20_000).toBe(String(BINDINGS));
    expect(await cell(queueRow, 'pending').textContent()).toBe('0');
    expect(await cell(queueRow, 'scheduled').textContent()).toBe('0');
    expect(await page.locator('table[data-rows-of="edge1"] tbody tr[data-state="done"]').count()).toBe(BINDINGS);
    expect(await queueRow.textContent()).toContain('nothing waiting');

    // One workload: where it went, its graceful-eviction task and its eviction history.
    await page.getByRole('link', { name: 'default/shop0' }).click();
    await eventually(() => heading().textContent()).toBe('Workload default/shop0');
    const tasks = page.getByTestId('eviction-tasks');
    await eventually(() => tasks.textContent(), 10_000).toContain('edge1');
    expect(await tasks.textContent()).toContain('TaintUntolerated');
    const history = page.getByTestId('eviction-history');
    expect(await history.textContent()).toContain('edge1');
    expect(await history.textContent()).toContain('done');
    await eventually(() => page.locator('main').textContent()).toContain('Evicted');
    await expectAccessible('workload');

    // An unknown workload: the error is shown, not swallowed.
    await page.goto(`${host.url}/api/console#/workload/default/missing`);
    await eventually(() => page.getByRole('alert').textContent()).toContain('ResourceBinding "default/missing" not found');

    // What-if: fail edge2 as well; nothing is written.
    await page.getByRole('link', { name: 'What-if' }).click();
    await page.getByLabel('edge2').check();
    await page.getByRole('button', { name: 'Run what-if' }).click();
    await eventually(() => page.getByTestId('whatif-summary').textContent(), 10_000).toContain('tier');
    await expectAccessible('whatif');

    // The picture: the taint, and the evictions on the chart.
    await page.getByRole('link', { name: 'Fleet', exact: true }).click();
    await eventually(() => edge1.textContent()).toContain('cluster.karmada.io/not-ready:NoExecute');
    await eventually(() => evictionSwitch.textContent()).toBe('running');
    await page.mouse.move(0, 0);
    await page.evaluate('document.activeElement?.blur(); window.scrollTo(0, 0)');
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-results', 'console.png') });
    if (process.env.UPDATE_SCREENSHOT === '1') {
      mkdirSync(join(ROOT, 'docs'), { recursive: true });
      await page.screenshot({ path: join(ROOT, 'docs', 'console.png') });
    }

    // Drain and uncordon a cluster from the fleet view (after a confirmation).
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Drain edge4' }).click();
    await eventually(() => page.getByTestId('notice').textContent()).toMatch(/^Draining edge4: \d+ evictions planned$/);
    const edge4 = page.locator('tr[data-cluster="edge4"]');
    await eventually(() => edge4.textContent()).toContain('cluster.karmada.io/unschedulable:NoSchedule');
    await page.getByRole('button', { name: 'Uncordon edge4' }).click();
    await eventually(() => page.getByTestId('notice').textContent()).toMatch(/^Uncordoned edge4/);
    await eventually(() => edge4.textContent()).not.toContain('unschedulable');
  }, 60_000);
});
