import type {
  BindingView,
  BudgetView,
  ClusterView,
  EvictionView,
  FailbackItem,
  FleetView,
  MetadataView,
  PropagationPolicyView,
  TaintPolicyListItem,
  TemplateView,
} from '../api/contract/views';
import type { FailoverBudgetSpec } from '../api/resources';
import type { EvictionRecord } from '../failover/bindingModel';
import type { FleetHealth } from '../failover/fleetHealth';
import type { BindingRecord, ClusterRecord, PolicyRecord, PropagationPolicyRecord, StoredMetadata, TemplateRecord } from '../store/records';

/**
 * What the HTTP API returns, built from what is stored: the Karmada-shaped objects (plus what explains
 * them), ledger rows and the fleet. One module, so every endpoint shows the same shape; each shape is the
 * contract's (shared/api/contract/views.ts), so the OpenAPI document and these builders cannot drift apart.
 */

export type { FailbackItem, TemplateView } from '../api/contract/views';

const CLUSTER_API_VERSION = 'cluster.karmada.io/v1alpha1';
const POLICY_API_VERSION = 'policy.karmada.io/v1alpha1';

const metadataView = (record: StoredMetadata, etag?: string): MetadataView => ({
  name: record.name,
  uid: record.uid,
  creationTimestamp: record.createdAt,
  generation: record.generation,
  ...(etag ? { resourceVersion: etag } : {}),
  ...(Object.keys(record.labels).length > 0 ? { labels: record.labels } : {}),
  ...(Object.keys(record.annotations).length > 0 ? { annotations: record.annotations } : {}),
});

/** The Karmada-shaped Cluster the API returns, plus what explains its taints. */
export function clusterResource(record: ClusterRecord, etag?: string): ClusterView {
  return {
    apiVersion: CLUSTER_API_VERSION,
    kind: 'Cluster',
    metadata: metadataView(record, etag),
    spec: {
      ...record.spec,
      taints: record.taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect, timeAdded: t.timeAdded })),
    },
    status: {
      conditions: record.conditions,
      ...(record.lastReportAt ? { lastHeartbeatTime: record.lastReportAt } : {}),
      taintHolders: record.taints.map((t) => ({ key: t.key, effect: t.effect, policies: t.owners, manual: t.manual })),
      policyWindows: Object.entries(record.policyWindows)
        .map(([policy, w]) => ({ policy, matched: w.matched, since: w.since }))
        .sort((a, b) => a.policy.localeCompare(b.policy)),
    },
  };
}

export function policyResource(record: PolicyRecord, etag?: string): Omit<TaintPolicyListItem, 'status'> {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: 'ClusterTaintPolicy',
    metadata: metadataView(record, etag),
    spec: record.spec,
  };
}

export function propagationPolicyResource(record: PropagationPolicyRecord, etag?: string): PropagationPolicyView {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: record.kind,
    metadata: { ...metadataView(record, etag), ...(record.namespace ? { namespace: record.namespace } : {}) },
    spec: record.spec,
  };
}

export function bindingResource(record: BindingRecord, etag?: string): BindingView {
  return {
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: record.kind,
    metadata: { ...metadataView(record, etag), ...(record.namespace ? { namespace: record.namespace } : {}) },
    spec: record.spec,
    status: { ...record.status, ...(record.inheritedFrom ? { propagationPolicy: record.inheritedFrom } : {}) },
  };
}

/** One ledger row as GET /api/evictions shows it. */
export function evictionView(record: EvictionRecord): EvictionView {
  return {
    cluster: record.cluster,
    binding: { kind: record.kind, ...(record.namespace ? { namespace: record.namespace } : {}), name: record.name },
    resourceKind: record.resourceKind,
    state: record.state,
    reason: record.reason,
    why: record.why,
    purgeMode: record.purgeMode,
    decidedAt: record.decidedAt,
    dueAt: record.dueAt,
    scheduledFor: record.scheduledFor ?? null,
    executedAt: record.executedAt ?? null,
    attempts: record.attempts,
    message: record.message ?? null,
    // Why a due row waits (`BudgetExceeded`: the FailoverBudget `waitingFor` has no room), and its priority.
    stateReason: record.stateReason ?? null,
    waitingFor: record.waitingFor ?? null,
    priority: record.priority ?? 0,
    // A Failback row: the home it goes back to.
    ...(record.home ? { home: record.home } : {}),
  };
}

export type FailbackState = FailbackItem['state'];

export function failbackItemView(
  binding: Pick<BindingRecord, 'kind' | 'namespace' | 'name'>,
  entry: { home: string; evictedAt: string; doneAt?: string; windowSeconds?: number },
  facts: {
    state: FailbackState;
    windowSeconds: number | undefined;
    replacedBy: string[];
    why: string;
    healthySince?: string;
    dueAt?: string;
    row?: EvictionView;
  },
): FailbackItem {
  return {
    binding: { kind: binding.kind, ...(binding.namespace ? { namespace: binding.namespace } : {}), name: binding.name },
    home: entry.home,
    replacedBy: facts.replacedBy,
    windowSeconds: facts.windowSeconds ?? entry.windowSeconds ?? 0,
    ...(facts.healthySince ? { healthySince: facts.healthySince } : {}),
    ...(facts.dueAt ? { dueAt: facts.dueAt } : {}),
    state: facts.state,
    why: facts.why,
    evictedAt: entry.evictedAt,
    ...(entry.doneAt ? { doneAt: entry.doneAt } : {}),
    ...(facts.row ? { row: facts.row } : {}),
  };
}

/** A FailoverBudget as the API shows it, with what is in flight under it now (as last recorded). */
export function budgetResource(
  record: StoredMetadata & { namespace: string; spec: FailoverBudgetSpec },
  flight: { inFlight: Array<{ binding: string; cluster: string; since: string }>; limit?: number; matching?: number },
  etag?: string,
): BudgetView {
  return {
    apiVersion: 'failover.io/v1alpha1',
    kind: 'FailoverBudget',
    metadata: { ...metadataView(record, etag), namespace: record.namespace },
    spec: record.spec,
    status: {
      ...(flight.limit !== undefined ? { maxInFlight: flight.limit } : {}),
      ...(flight.matching !== undefined ? { matchingBindings: flight.matching } : {}),
      inFlight: new Set(flight.inFlight.map((e) => e.binding)).size,
      evictions: flight.inFlight.map((e) => ({ binding: e.binding, cluster: e.cluster, since: e.since })),
    },
  };
}

/** GET /api/fleet. */
export function fleetView(
  health: FleetHealth & { faulty: number; faultyClusters: string[]; unhealthyClusters: string[] },
  switches: { failoverEnabled: boolean; paused: boolean },
  waiting: { pending: number; scheduled: number },
): FleetView {
  return {
    total: health.total,
    unhealthy: health.unhealthy,
    faulty: health.faulty,
    failureRatio: health.failureRatio,
    tier: health.tier,
    rate: health.rate,
    failoverEnabled: switches.failoverEnabled,
    paused: switches.paused,
    pending: waiting.pending,
    scheduled: waiting.scheduled,
    unhealthyClusters: health.unhealthyClusters,
    faultyClusters: health.faultyClusters,
  };
}

/** A resource template as the API shows it: the manifest with its server metadata. A Secret's values are never shown. */
export function templateView(record: TemplateRecord): TemplateView {
  const manifest = { ...record.manifest };
  if (record.apiVersion === 'v1' && record.kind === 'Secret') {
    for (const field of ['data', 'stringData']) {
      const values = manifest[field];
      if (values && typeof values === 'object') manifest[field] = Object.fromEntries(Object.keys(values).map((key) => [key, '(redacted)']));
    }
  }
  return {
    ...manifest,
    // The manifest's own (equal) values: restated so the type says what every template has.
    apiVersion: record.apiVersion,
    kind: record.kind,
    metadata: {
      ...(record.manifest.metadata as Record<string, unknown>),
      name: record.name,
      uid: record.uid,
      resourceVersion: record.resourceVersion,
      generation: record.generation,
      creationTimestamp: record.createdAt,
      ...(Object.keys(record.labels).length > 0 ? { labels: record.labels } : {}),
    },
  };
}
