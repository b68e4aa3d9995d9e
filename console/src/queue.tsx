import { get, HttpError } from './api';
import { Badge, Empty, heldText, Pending, Section, TierBadge, When } from './components';
import { PauseResume } from './fleet';
import { bindingHref, bindingName, naturalCompare, rate } from './format';
import { usePoll } from './state';
import type { ClusterQueue, EvictionState, LedgerRow, QueueSummary } from './types';

const STATES: EvictionState[] = ['pending', 'scheduled', 'blocked', 'done', 'abandoned', 'failed'];
const ROW_LIMIT = 200;

interface QueueData {
  summary: QueueSummary;
  rows: LedgerRow[];
  /** false when the summary endpoint is missing and the counts were computed here from the ledger */
  fromApi: boolean;
}

async function loadQueue(): Promise<QueueData> {
  const rowsPromise = get<{ items: LedgerRow[] }>('evictions');
  let summary: QueueSummary | undefined;
  try {
    summary = await get<QueueSummary>('evictions/summary');
  } catch (e) {
    if (!(e instanceof HttpError) || (e.status !== 404 && e.status !== 400)) throw e;
  }
  const rows = (await rowsPromise).items;
  return summary ? { summary, rows, fromApi: true } : { summary: await summarize(rows), rows, fromApi: false };
}

/** The summary from the ledger and /api/fleet, for an API without /api/evictions/summary. */
async function summarize(rows: LedgerRow[]): Promise<QueueSummary> {
  const fleet = await get<{ tier: QueueSummary['tier']; rate: number; paused: boolean; failoverEnabled: boolean; faultyClusters: string[] }>('fleet');
  const byCluster = new Map<string, ClusterQueue>();
  const entry = (cluster: string) => {
    let e = byCluster.get(cluster);
    if (!e) {
      e = {
        cluster,
        faulty: fleet.faultyClusters.includes(cluster),
        draining: false,
        since: null,
        pending: 0,
        scheduled: 0,
        blocked: 0,
        done: 0,
        abandoned: 0,
        failed: 0,
        blockedReasons: [],
        lastEta: null,
      };
      byCluster.set(cluster, e);
    }
    return e;
  };
  fleet.faultyClusters.forEach(entry);
  for (const row of rows) {
    const e = entry(row.cluster);
    e[row.state]++;
    if (row.reason === 'Drain') e.draining = true;
    if (row.state === 'blocked') {
      const reason = row.message ?? row.why ?? 'blocked';
      const found = e.blockedReasons.find((r) => r.reason === reason);
      if (found) found.count++;
      else e.blockedReasons.push({ reason, count: 1 });
    }
  }
  const heldBy = !fleet.failoverEnabled ? 'gate' : fleet.paused ? 'paused' : fleet.tier === 'halted' ? 'halted' : null;
  return {
    generatedAt: new Date().toISOString(),
    tier: fleet.tier,
    rate: fleet.rate,
    paused: fleet.paused,
    failoverEnabled: fleet.failoverEnabled,
    heldBy,
    clusters: [...byCluster.values()],
  };
}

export function QueueView() {
  const queue = usePoll('queue', loadQueue, 2000);
  const data = queue.data;
  if (!data) return <Pending poll={queue} what="the eviction queue" />;
  const { summary } = data;
  const clusters = [...summary.clusters].sort(
    (a, b) => Number(b.faulty) - Number(a.faulty) || Number(b.draining) - Number(a.draining) || naturalCompare(a.cluster, b.cluster),
  );
  return (
    <>
      <Section title="Pacing" id="queue-pacing">
        <p data-testid="queue-state">
          Tier <TierBadge tier={summary.tier} />, rate {rate(summary.rate)}, evictions{' '}
          {summary.heldBy ? <Badge tone="warn">{heldText(summary.heldBy)}</Badge> : <Badge tone="ok">running</Badge>}. Updated{' '}
          <When iso={summary.generatedAt} rel={false} />
          {data.fromApi ? '' : ' (counted from the ledger)'}.
        </p>
        <PauseResume paused={summary.paused} waiting={summary.clusters.reduce((n, c) => n + c.pending + c.scheduled, 0)} onChange={queue.refresh} />
      </Section>
      <Section title="Per cluster" id="queue-clusters">
        {clusters.length ? <SummaryTable clusters={clusters} /> : <Empty>No cluster is faulty or draining, and the ledger is empty.</Empty>}
      </Section>
      {clusters.map((c) => (
        <ClusterRows key={c.cluster} queue={c} rows={data.rows.filter((r) => r.cluster === c.cluster)} />
      ))}
    </>
  );
}

function SummaryTable({ clusters }: { clusters: ClusterQueue[] }) {
  return (
    <div class="scroll">
      <table>
        <caption>Evictions per cluster: waiting, blocked, finished, and when the last one would run at the current rate</caption>
        <thead>
          <tr>
            <th scope="col">Cluster</th>
            <th scope="col">State</th>
            <th scope="col">Pending</th>
            <th scope="col">Scheduled</th>
            <th scope="col">Blocked</th>
            <th scope="col">Done</th>
            <th scope="col">Abandoned</th>
            <th scope="col">Failed</th>
            <th scope="col">Progress</th>
            <th scope="col">Last eviction ETA</th>
          </tr>
        </thead>
        <tbody>
          {clusters.map((c) => {
            const total = c.pending + c.scheduled + c.blocked + c.done + c.abandoned + c.failed;
            const finished = c.done + c.abandoned + c.failed;
            return (
              <tr key={c.cluster} data-queue-cluster={c.cluster}>
                <th scope="row">
                  <a
                    href={`#/queue`}
                    onClick={(e) => {
                      e.preventDefault();
                      const heading = document.getElementById(`queue-${c.cluster}`);
                      heading?.scrollIntoView();
                      heading?.focus();
                    }}
                  >
                    {c.cluster}
                  </a>
                </th>
                <td>
                  {c.faulty ? <Badge tone="bad">faulty</Badge> : null} {c.draining ? <Badge tone="warn">draining</Badge> : null}
                  {!c.faulty && !c.draining ? 'healthy' : null}
                  {c.since && (c.faulty || c.draining) ? (
                    <small>
                      {' '}
                      since <When iso={c.since} />
                    </small>
                  ) : null}
                </td>
                <td data-col="pending">{c.pending}</td>
                <td data-col="scheduled">{c.scheduled}</td>
                <td data-col="blocked">
                  {c.blocked}
                  {c.blockedReasons.length ? (
                    <ul class="plain small">
                      {c.blockedReasons.map((r) => (
                        <li key={r.reason}>
                          {r.count}: {r.reason}
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </td>
                <td data-col="done">{c.done}</td>
                <td data-col="abandoned">{c.abandoned}</td>
                <td data-col="failed">{c.failed}</td>
                <td>
                  <progress max={Math.max(total, 1)} value={finished} aria-label={`${c.cluster}: ${finished} of ${total} finished`} />{' '}
                  <span data-col="progress">
                    {finished}/{total}
                  </span>
                </td>
                <td>{c.pending + c.scheduled === 0 ? 'nothing waiting' : c.lastEta ? <When iso={c.lastEta} /> : 'held'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function ClusterRows({ queue, rows }: { queue: ClusterQueue; rows: LedgerRow[] }) {
  const order = (r: LedgerRow) => STATES.indexOf(r.state);
  // As the pacer takes them: by state, then higher priority first, then the earlier due time.
  const sorted = [...rows].sort((a, b) => order(a) - order(b) || (b.priority ?? 0) - (a.priority ?? 0) || String(a.dueAt).localeCompare(String(b.dueAt)));
  const shown = sorted.slice(0, ROW_LIMIT);
  const id = `queue-${queue.cluster}`;
  return (
    <section aria-labelledby={id}>
      <h3 id={id} tabIndex={-1}>
        Evictions from {queue.cluster}
      </h3>
      {shown.length ? (
        <div class="scroll">
          <table data-rows-of={queue.cluster}>
            <caption>
              Ledger rows of {queue.cluster}
              {sorted.length > shown.length ? ` (first ${shown.length} of ${sorted.length})` : ''}, waiting first, higher priority first
            </caption>
            <thead>
              <tr>
                <th scope="col">Workload</th>
                <th scope="col">State</th>
                <th scope="col">Priority</th>
                <th scope="col">Why</th>
                <th scope="col">Due</th>
                <th scope="col">Scheduled for</th>
                <th scope="col">Executed</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r) => (
                <tr key={`${bindingName(r.binding)}-${r.decidedAt ?? ''}`} data-state={r.state}>
                  <th scope="row">
                    <a href={bindingHref(r.binding)}>{bindingName(r.binding)}</a>
                  </th>
                  <td>
                    <StateBadge state={r.state} />
                    {r.stateReason ? (
                      <>
                        {' '}
                        <Badge tone="warn">{r.stateReason}</Badge>
                        {r.waitingFor ? (
                          <small>
                            {' '}
                            waiting for <a href="#/budgets">{r.waitingFor}</a>
                          </small>
                        ) : null}
                      </>
                    ) : null}
                  </td>
                  <td data-col="priority">{r.priority ?? 0}</td>
                  <td>{[r.reason, r.why].filter(Boolean).join(': ')}</td>
                  <td>
                    <When iso={r.dueAt} />
                  </td>
                  <td>
                    <When iso={r.scheduledFor} />
                  </td>
                  <td>
                    <When iso={r.executedAt} />
                  </td>
                  <td>{r.message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>No ledger rows for {queue.cluster}.</Empty>
      )}
    </section>
  );
}

export function StateBadge({ state }: { state: string }) {
  const tone = state === 'done' ? 'ok' : state === 'blocked' || state === 'failed' ? 'bad' : state === 'abandoned' ? 'muted' : 'info';
  return <Badge tone={tone}>{state}</Badge>;
}
