import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { axeViolations, launchBrowser } from '../helpers/browser';
import { binding, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess } from '../helpers/hostProcess';

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

const policy = (name: string, clusters: string[], key: string, effect: string, annotations?: Record<string, string>) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: {
    targetCluster: { clusterNames: clusters },
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key, effect, addOnMatchSeconds: 1 }],
  },
});

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
      // One NoExecute/PreferNoExecute cluster per policy in this fleet of four: the guard test crosses it.
      MAX_FLEET_SHARE_TAINTED_BY_POLICY: '0.25',
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
    // The same match in shadow mode: it records what it would do and writes nothing.
    policy('edge-trial', ['edge1'], 'edge/trial', 'NoExecute', { 'failover.io/mode': 'shadow' }),
    // Room for every eviction of the walk-through (they stay in flight: no old copy is confirmed gone).
    {
      apiVersion: 'failover.io/v1alpha1',
      kind: 'FailoverBudget',
      metadata: { name: 'shop-budget', namespace: 'default' },
      spec: { selector: {}, maxInFlight: 20 },
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
    await eventually(() => page.evaluate<string>('document.activeElement?.tagName')).toBe('H2');
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

  it('shows budgets, the priority in the queue, policies with shadow findings and the guard, and failback', async () => {
    // Budgets: what is in flight under each and the rows it holds.
    await page.getByRole('link', { name: 'Budgets', exact: true }).click();
    await eventually(() => heading().textContent()).toBe('Disruption budgets');
    const budget = page.locator('tr[data-budget="default/shop-budget"]');
    const inFlight = (await api(host.url, 'GET', 'failoverbudgets/default/shop-budget')).body.status.inFlight;
    expect(inFlight).toBeGreaterThanOrEqual(BINDINGS);
    await eventually(() => budget.locator('[data-col="in-flight"]').textContent()).toMatch(/^\d+\/20$/);
    expect(await budget.textContent()).toContain('all bindings of the namespace');
    await eventually(() => page.locator('table[data-flight-of="default/shop-budget"]').textContent()).toContain('default/shop0');
    await expectAccessible('budgets');

    // The queue's rows carry their priority.
    await page.getByRole('link', { name: 'Eviction queue' }).click();
    const rows = page.locator('table[data-rows-of="edge1"]');
    await eventually(() => rows.locator('thead').textContent()).toContain('Priority');
    expect(await rows.locator('td[data-col="priority"]').first().textContent()).toBe('0');

    // Policies, by keyboard: the nav link, then the first policy of the table after the view's heading.
    await page.getByRole('link', { name: 'Policies', exact: true }).focus();
    await page.keyboard.press('Enter');
    await eventually(() => heading().textContent()).toBe('Taint policies');
    await eventually(() => page.evaluate<string>('document.activeElement?.tagName')).toBe('H2');
    const trial = page.locator('tr[data-policy="edge-trial"]');
    await eventually(() => trial.textContent()).toContain('shadow');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('edge-not-ready');
    const enforcing = await page.locator('tr[data-policy="edge-not-ready"]').textContent();
    expect(enforcing).toContain('enforce');
    expect(enforcing).toContain('BlastRadiusExceeded=False');
    expect(await page.locator('tr[data-policy="edge-not-ready"] [data-col="blast-radius"]').textContent()).toBe('1/1');
    // The shadow policy's finding on edge1 (reported Ready=False in the walk-through), newest first.
    const finding = page.locator('[data-testid="findings"] tr[data-finding="WouldTaint"]');
    await eventually(() => finding.first().textContent()).toContain('edge/trial:NoExecute');
    expect(await finding.first().textContent()).toContain('edge1');
    await expectAccessible('policies');

    // The guard: a second policy may hold its NoExecute taint on one cluster of four; edge3 is refused until acknowledged.
    await apply([policy('edge-wide', ['edge2', 'edge3'], 'edge/wide', 'PreferNoExecute')]);
    await Promise.all([reportReady('edge2', 'False'), reportReady('edge3', 'False')]);
    const wide = page.locator('tr[data-policy="edge-wide"]');
    await eventually(() => wide.textContent(), 15_000).toContain('BlastRadiusExceeded=True');
    expect(await wide.textContent()).toMatch(/1\/1 exceededrefused: edge[23]/);
    const acknowledge = page.getByRole('button', { name: 'Acknowledge edge-wide' });
    await acknowledge.waitFor();
    await expectAccessible('policies with the guard exceeded');
    page.once('dialog', (dialog) => void dialog.accept());
    await acknowledge.click();
    await eventually(() => page.getByTestId('notice').textContent()).toMatch(/^Acknowledged edge-wide: acknowledged/);
    await eventually(() => wide.textContent(), 15_000).toContain('BlastRadiusExceeded=False');
    await eventually(() => wide.locator('[data-col="blast-radius"]').textContent(), 15_000).toBe('2/1');
    expect(await wide.textContent()).toContain('acknowledged');

    // One policy: its status and its findings.
    await trial.getByRole('link', { name: 'edge-trial' }).click();
    await eventually(() => heading().textContent()).toBe('Policy edge-trial');
    await eventually(() => page.locator('[data-testid="findings"]').textContent()).toContain('WouldTaint');
    expect(await page.locator('[data-testid="blast-radius"]').textContent()).toContain('1 of 4 clusters');
    await expectAccessible('policy');

    // Failback: what the host serves, if it serves it.
    const served = await api(host.url, 'GET', 'failback');
    await page.getByRole('link', { name: 'Failback', exact: true }).click();
    await eventually(() => heading().textContent()).toBe('Failback');
    if (served.status === 404) {
      // No GET /api/failback on this host yet (another change adds it): the view says there is no failback data.
      await eventually(() => page.locator('main').textContent()).toContain('No failback data');
    } else {
      expect(served.status).toBe(200);
      await eventually(() => page.locator('main').textContent()).toMatch(served.body.bindings.length ? /Going home.*Workload/ : /No workload is waiting/);
    }
    await expectAccessible('failback');

    // The rendering of the documented answer, stubbed in the browser: the countdown runs every second.
    const dueAt = new Date(Date.now() + 45_000).toISOString();
    await page.route('**/api/failback', (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({
          bindings: [
            {
              binding: { kind: 'ResourceBinding', namespace: 'default', name: 'shop0' },
              home: 'edge1',
              replacedBy: ['edge2'],
              windowSeconds: 60,
              healthySince: new Date().toISOString(),
              dueAt,
              state: 'counting',
            },
            {
              binding: { kind: 'ResourceBinding', namespace: 'default', name: 'shop1' },
              home: 'edge1',
              replacedBy: ['edge3'],
              windowSeconds: 60,
              state: 'done',
            },
          ],
        }),
      }),
    );
    try {
      await page.getByRole('link', { name: 'Fleet', exact: true }).click();
      await page.getByRole('link', { name: 'Failback', exact: true }).click();
      const row = page.locator('tr[data-failback="default/shop0"]');
      await eventually(() => row.textContent()).toContain('counting');
      const countdown = row.locator('time').last();
      const first = await countdown.textContent();
      expect(first).toMatch(/^in \d+ s$/);
      await eventually(() => countdown.textContent(), 5_000).not.toBe(first);
      expect(await page.getByTestId('failback').locator('caption').textContent()).toContain('1 waiting, 1 back home');
      await expectAccessible('failback with bindings');
    } finally {
      await page.unroute('**/api/failback');
    }
  }, 60_000);
});
