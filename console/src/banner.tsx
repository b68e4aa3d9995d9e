import type { ComponentChildren } from 'preact';
import { get, HttpError, q } from './api';
import { AcknowledgeButton, ResumeButton, When } from './components';
import { mapLimited, naturalCompare, percent, plural, rate } from './format';
import { type LoadError, type Poll, setAuthMode } from './state';
import type { Cluster, ClusterQueue, Fleet, FleetEvent, Health, Policy, QueueSummary } from './types';

/**
 * The Fleet page's first word: a banner that names everything wrong (clusters unhealthy or never
 * reported, the tier, the switches and who paused, a blast-radius guard refusing taints, drains, the Karmada
 * API server), most severe first, or says that all is well, with what to do: the action itself (Resume,
 * Acknowledge, each confirmed) or the next step. Also each cluster's trouble, for the cluster list.
 */

export type Severity = 'bad' | 'warn' | 'info';
const RANK: Record<Severity | 'ok', number> = { bad: 0, warn: 1, info: 2, ok: 3 };

/**
 * GET /api/healthz: its 503 (Karmada degraded) is an answer too. Its `auth` (AUTH_MODE) tells every action
 * button whether the admin token is needed.
 */
export async function loadHealth(): Promise<Health> {
  let health: Health;
  try {
    health = await get<Health>('healthz');
  } catch (e) {
    const body = e instanceof HttpError ? (e.body as Partial<Health> | undefined) : undefined;
    if (!(e instanceof HttpError && e.status === 503 && body?.status)) throw e;
    health = { status: body.status, mode: body.mode ?? 'karmada', reason: body.reason, since: body.since, auth: body.auth };
  }
  setAuthMode(health.auth === 'none' || health.auth === 'required' ? health.auth : undefined);
  return health;
}

/** Who paused evictions and when: the latest `Paused` switch event, unless a `Resumed` came after it. */
export interface PauseRecord {
  time: string;
  /** `details.actor` ("the admin token via cluster-failover-cli"), or read from the message. */
  actor?: string;
}

/** How many of the switch's events (tier changes share them) are read to find the pause. */
export const PAUSE_EVENT_LIMIT = 500;

/** The pause in effect, from GET /api/events?kind=Failover&name=evictions; null when none is recorded there. */
export async function loadPause(): Promise<PauseRecord | null> {
  const { items } = await get<{ items: FleetEvent[] }>(`events?kind=Failover&name=evictions&limit=${PAUSE_EVENT_LIMIT}`);
  const last = [...items].reverse().find((e) => e.reason === 'Paused' || e.reason === 'Resumed');
  if (last?.reason !== 'Paused') return null;
  const actor = typeof last.details?.actor === 'string' ? last.details.actor : /\bpaused by (.+)$/.exec(last.message)?.[1];
  return { time: last.time, ...(actor ? { actor } : {}) };
}

/** The policies whose blast-radius guard holds taints back now (BlastRadiusExceeded=True). The listing has no status: each is read. */
export async function loadRefusingPolicies(): Promise<Policy[]> {
  const list = await get<{ items: Policy[] }>('clustertaintpolicies');
  const policies = await mapLimited(list.items, 6, async (p) => {
    try {
      return await get<Policy>(`clustertaintpolicies/${q(p.metadata.name)}`);
    } catch (e) {
      if (e instanceof HttpError && e.status === 404) return p;
      throw e;
    }
  });
  return policies.filter((p) => p.status?.conditions?.some((c) => c.type === 'BlastRadiusExceeded' && c.status === 'True'));
}

/** The eviction queue per faulty or draining cluster, by name; empty when the server has no summary (404). */
export async function loadQueues(): Promise<Map<string, ClusterQueue>> {
  try {
    return new Map((await get<QueueSummary>('evictions/summary')).clusters.map((c) => [c.cluster, c]));
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) return new Map();
    throw e;
  }
}

export const CORDON_KEY = 'cluster.karmada.io/unschedulable';
const FAULTY_EFFECTS = ['NoExecute', 'PreferNoExecute'];

export interface ClusterTrouble {
  name: string;
  /** Ready's status; `missing` when the cluster has none. */
  ready: string;
  /** No report ever arrived (no heartbeat) and Ready is not True. */
  neverReported: boolean;
  /** Its NoExecute/PreferNoExecute taints' effects. */
  faulty: string[];
  /** Counted unhealthy by the fleet (Ready not True, or a faulty taint). */
  unhealthy: boolean;
  cordoned: boolean;
  draining: boolean;
  queue: ClusterQueue | undefined;
  /** 0: unhealthy or faulty, 1: draining or cordoned, 2: fine. */
  rank: number;
}

export function clusterTrouble(c: Cluster, unhealthyNames: string[] | undefined, queues: Map<string, ClusterQueue> | undefined): ClusterTrouble {
  const name = c.metadata.name;
  const ready = c.status?.conditions?.find((x) => x.type === 'Ready')?.status ?? 'missing';
  const taints = c.spec.taints ?? [];
  const faulty = [...new Set(taints.filter((t) => FAULTY_EFFECTS.includes(t.effect)).map((t) => t.effect))];
  const unhealthy = ready !== 'True' || faulty.length > 0 || (unhealthyNames?.includes(name) ?? false);
  const cordoned = taints.some((t) => t.key === CORDON_KEY);
  const queue = queues?.get(name);
  const draining = cordoned || (queue?.draining ?? false);
  return {
    name,
    ready,
    neverReported: ready !== 'True' && !c.status?.lastHeartbeatTime,
    faulty,
    unhealthy,
    cordoned,
    draining,
    queue,
    rank: unhealthy ? 0 : draining ? 1 : 2,
  };
}

/** Trouble first (unhealthy or faulty, then draining), then the rest; names in natural order. */
export const byTrouble = (a: ClusterTrouble, b: ClusterTrouble) => a.rank - b.rank || naturalCompare(a.name, b.name);

/** Rows of a cluster's current episode, in any state. */
export const queueSize = (q: ClusterQueue | undefined) => (q ? q.pending + q.scheduled + q.blocked + q.done + q.abandoned + q.failed : 0);

/** "3 evictions planned, 2 done" for a cluster's queue. */
export function queueText(queue: ClusterQueue | undefined): string {
  if (!queue) return 'no evictions recorded';
  const planned = queue.pending + queue.scheduled + queue.blocked;
  return `${plural(planned, 'eviction')} planned, ${queue.done} done${queue.blocked ? ` (${queue.blocked} blocked)` : ''}`;
}

/** Nothing reports its health: never reported, Ready=Unknown (its reports stopped), or no Ready condition. */
export const isSilent = (t: ClusterTrouble) => t.neverReported || t.ready === 'Unknown' || t.ready === 'missing';

export function whyUnhealthy(t: ClusterTrouble): string {
  if (t.neverReported) return t.ready === 'Unknown' ? 'Ready=Unknown: never reported' : 'never reported';
  if (t.ready === 'missing') return 'no Ready condition';
  if (t.ready !== 'True') return `Ready=${t.ready}`;
  return t.faulty.length ? `tainted ${t.faulty.join(', ')}` : 'unhealthy';
}

const ClusterLinks = ({ names, limit = 10 }: { names: string[]; limit?: number }) => (
  <>
    {names.slice(0, limit).map((n, i) => (
      <span key={n}>
        {i ? ', ' : ''}
        <a href={`#/cluster/${q(n)}`}>{n}</a>
      </span>
    ))}
    {names.length > limit ? ` and ${names.length - limit} more` : ''}
  </>
);

interface Problem {
  id: string;
  severity: Severity;
  body: ComponentChildren;
}

export interface BannerInput {
  fleet: Poll<Fleet>;
  clusters: Poll<{ items: Cluster[] }>;
  health: Poll<Health>;
  refusing: Poll<Policy[]>;
  queues: Poll<Map<string, ClusterQueue>>;
  /** Who paused, while evictions are paused (null: no pause recorded in the events read). */
  pause: Poll<PauseRecord | null>;
  /** After an action of the banner (Resume, Acknowledge): what to read again. */
  onResumed: () => void;
  onAcknowledged: () => void;
}

/** Why evictions are paused: by whom and since when, or why that cannot be said. */
function PausedBy({ pause }: { pause: Poll<PauseRecord | null> }) {
  if (pause.data)
    return (
      <>
        {' '}
        by {pause.data.actor ?? 'someone (the event does not say who)'} since <When iso={pause.data.time} />
      </>
    );
  if (pause.data === null) return <> (who paused them is not among the last {PAUSE_EVENT_LIMIT} switch events)</>;
  if (pause.error) return <> (who paused them cannot be read: {pause.error.message})</>;
  return null;
}

function problems({ fleet: fleetPoll, clusters, health, refusing, queues, pause, onResumed, onAcknowledged }: BannerInput): Problem[] {
  const out: Problem[] = [];
  const fleet = fleetPoll.data;
  const h = health.data;
  if (h?.status === 'degraded' || (fleet && fleet.status === 'degraded' && !h)) {
    const { reason, since } = (h ?? fleet) as { reason?: string; since?: string };
    out.push({
      id: 'karmada',
      severity: 'bad',
      body: (
        <>
          The Karmada API server cannot be used{reason ? `: ${reason}` : ''}
          {since ? (
            <>
              {' '}
              (since <When iso={since} />)
            </>
          ) : null}
          ; failing safe: no taint removed, no eviction, until it answers again.
        </>
      ),
    });
  }
  const unreadable = (what: string, error: LoadError | undefined, severity: Severity = 'info') => {
    if (error) out.push({ id: `error-${what}`, severity, body: `${what} cannot be read: ${error.message}` });
  };
  unreadable('The fleet state', fleetPoll.error, 'bad');
  if (!fleet) return out;

  const troubles = (clusters.data?.items ?? []).map((c) => clusterTrouble(c, fleet.unhealthyClusters, queues.data));
  const byName = new Map(troubles.map((t) => [t.name, t]));
  if (fleet.total === 0) out.push({ id: 'empty', severity: 'info', body: 'No clusters are registered yet.' });
  if (fleet.unhealthy > 0) {
    const groups = new Map<string, string[]>();
    let silent = 0;
    for (const name of [...fleet.unhealthyClusters].sort(naturalCompare)) {
      const t = byName.get(name);
      const why = t ? whyUnhealthy(t) : 'unhealthy';
      if (t && isSilent(t)) silent++;
      groups.set(why, [...(groups.get(why) ?? []), name]);
    }
    out.push({
      id: 'unhealthy',
      severity: 'bad',
      body: (
        <>
          {fleet.unhealthy === fleet.total
            ? `All ${plural(fleet.total, 'cluster')} are`
            : `${fleet.unhealthy} of ${plural(fleet.total, 'cluster')} ${fleet.unhealthy === 1 ? 'is' : 'are'}`}{' '}
          unhealthy ({percent(fleet.failureRatio)}):
          <ul>
            {[...groups].map(([why, names]) => (
              <li key={why}>
                {why}: <ClusterLinks names={names} />
              </li>
            ))}
          </ul>
          {silent ? (
            <p data-testid="silent-hint">
              {silent === 1 ? '1 of them is' : `${silent} of them are`} silent or Unknown (no Ready=True report): start the cluster's reporter, or{' '}
              <code>npm start -- --simulate</code> locally.
            </p>
          ) : null}
        </>
      ),
    });
  }
  if (fleet.tier === 'halted')
    out.push({
      id: 'tier',
      severity: 'bad',
      body: `Evictions are halted (tier halted, rate 0): ${percent(fleet.failureRatio)} of the fleet is unhealthy, above the threshold, and a fleet this small stops evicting rather than move everything.`,
    });
  else if (fleet.tier === 'secondary')
    out.push({
      id: 'tier',
      severity: 'warn',
      body: `Evictions are slowed to the secondary rate (${rate(fleet.rate)}): ${percent(fleet.failureRatio)} of the fleet is unhealthy, above the threshold.`,
    });
  if (!fleet.failoverEnabled)
    out.push({
      id: 'gate',
      severity: fleet.faulty > 0 ? 'bad' : 'warn',
      body: (
        <>
          The Failover gate is off (FAILOVER_ENABLED=false): clusters are tainted but nothing is evicted
          {fleet.faulty > 0 ? (
            <>
              ; {fleet.faulty === 1 ? 'a cluster holds' : `${fleet.faulty} clusters hold`} NoExecute taints and{' '}
              {fleet.faulty === 1 ? 'keeps its' : 'keep their'} workloads (<ClusterLinks names={[...fleet.faultyClusters].sort(naturalCompare)} />)
            </>
          ) : null}
          . Drains still evict.
        </>
      ),
    });
  if (fleet.paused) {
    const waiting = fleet.pending + fleet.scheduled;
    out.push({
      id: 'paused',
      severity: 'warn',
      body: (
        <>
          Evictions are paused
          <PausedBy pause={pause} />: nothing is evicted, drains included, until someone resumes them
          {waiting ? ` (${plural(waiting, 'eviction')} waiting)` : ''}. <ResumeButton waiting={waiting} onDone={onResumed} />
        </>
      ),
    });
  }
  for (const p of refusing.data ?? []) {
    const b = p.status?.blastRadius;
    const name = p.metadata.name;
    out.push({
      id: `guard-${name}`,
      severity: 'bad',
      body: (
        <>
          Policy <a href={`#/policy/${q(name)}`}>{name}</a>: the blast-radius guard refuses to taint{' '}
          {b?.refused?.length ? <ClusterLinks names={b.refused} /> : 'more clusters'}
          {b ? ` (it holds taints on ${b.held} of ${plural(b.fleet, 'cluster')}, at most ${b.limit})` : ''}. They keep their workloads until an admin
          acknowledges, which lets the policy taint beyond the limit for this episode. <AcknowledgeButton policy={p} onDone={onAcknowledged} />
        </>
      ),
    });
  }
  const draining = troubles.filter((t) => t.draining).sort(byTrouble);
  if (draining.length)
    out.push({
      id: 'draining',
      severity: 'warn',
      body: (
        <>
          {draining.length === 1 ? 'A cluster is' : `${draining.length} clusters are`} draining:
          <ul>
            {draining.map((t) => (
              <li key={t.name}>
                <a href={`#/cluster/${q(t.name)}`}>{t.name}</a>: {t.cordoned ? 'cordoned' : 'no longer cordoned'}, {queueText(t.queue)}
              </li>
            ))}
          </ul>
        </>
      ),
    });
  unreadable('The clusters', clusters.error);
  unreadable('The Karmada connection (GET /api/healthz)', health.data ? undefined : health.error);
  unreadable("The policies' blast-radius guards", refusing.error);
  unreadable('The drains (GET /api/evictions/summary)', queues.error);
  return out.sort((a, b) => RANK[a.severity] - RANK[b.severity]);
}

const TITLE: Record<Severity | 'ok', string> = {
  bad: 'Trouble in the fleet',
  warn: 'Needs attention',
  info: 'Note',
  ok: 'All clear',
};

export function FleetBanner(input: BannerInput) {
  const list = problems(input);
  const ready = [input.fleet, input.clusters, input.health, input.refusing, input.queues].every((p) => p.data !== undefined);
  const fleet = input.fleet.data;
  if (!list.length && !ready) {
    return (
      <section class="banner banner-muted" aria-labelledby="fleet-banner-title" data-testid="fleet-banner" data-severity="checking">
        <h3 id="fleet-banner-title">Checking the fleet…</h3>
      </section>
    );
  }
  const severity = list[0]?.severity ?? 'ok';
  return (
    <section class={`banner banner-${severity}`} aria-labelledby="fleet-banner-title" data-testid="fleet-banner" data-severity={severity}>
      <h3 id="fleet-banner-title">
        {TITLE[severity]}
        {list.length > 1 ? `: ${plural(list.length, 'problem')}` : ''}
      </h3>
      {list.length ? (
        <ul>
          {list.map((p) => (
            <li key={p.id} data-problem={p.id} data-severity={p.severity}>
              {p.body}
            </li>
          ))}
        </ul>
      ) : fleet ? (
        <p>
          All {plural(fleet.total, 'cluster')} Ready, evictions running at the primary rate ({rate(fleet.rate)}), the Failover gate on, no policy held back by
          its blast-radius guard, nothing draining{input.health.data?.mode === 'karmada' ? ', the Karmada API server reachable' : ''}.
        </p>
      ) : null}
    </section>
  );
}
