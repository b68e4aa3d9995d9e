/** The shapes of the API answers the CLI reads (only the fields it uses; the server may send more). */

export interface Metadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Cluster {
  metadata: Metadata;
  spec: { taints?: Taint[]; [key: string]: unknown };
  status?: {
    conditions?: Condition[];
    lastHeartbeatTime?: string;
    taintHolders?: Array<{ key: string; effect: string; policies: string[]; manual: boolean }>;
    policyWindows?: Array<{ policy: string; matched: boolean; since: string }>;
  };
}

export interface TargetCluster {
  name: string;
  replicas?: number;
}

export interface EvictionTask {
  fromCluster: string;
  purgeMode?: string;
  reason?: string;
  producer?: string;
  message?: string;
  creationTimestamp?: string;
  replicas?: number;
}

export interface Binding {
  kind?: string;
  metadata: Metadata;
  spec: {
    resource: { apiVersion: string; kind: string; name: string; namespace?: string };
    replicas?: number;
    clusters?: TargetCluster[];
    placement?: unknown;
    failover?: unknown;
    gracefulEvictionTasks?: EvictionTask[];
  };
  status?: { conditions?: Condition[]; aggregatedStatus?: Array<{ clusterName: string; health?: string; applied?: boolean }> };
}

export interface BindingRef {
  kind: string;
  namespace?: string;
  name: string;
}

export interface Eviction {
  cluster: string;
  binding: BindingRef;
  resourceKind?: string;
  state: string;
  reason?: string;
  why?: string;
  purgeMode?: string;
  decidedAt?: string;
  dueAt?: string;
  scheduledFor?: string | null;
  executedAt?: string | null;
  attempts?: number;
  message?: string | null;
  /** `BudgetExceeded` while a FailoverBudget holds a due row back. */
  stateReason?: string | null;
  /** The budget holding it (`namespace/name`). */
  waitingFor?: string | null;
  priority?: number;
}

/** `status.blastRadius` of a ClusterTaintPolicy (GET /api/clustertaintpolicies/{name}). */
export interface BlastRadius {
  maxShare: number;
  fleet: number;
  limit: number;
  held: number;
  clusters: string[];
  exceededSince?: string;
  refused?: string[];
  acknowledgedAt?: string;
}

export interface PolicyAction {
  time: string;
  cluster: string;
  action: string;
  taint: { key: string; value?: string; effect: string };
  rule?: string;
  reason?: string;
}

export interface Policy {
  metadata: Metadata;
  spec: {
    taintsToAdd?: Array<Taint & { addOnMatchSeconds?: number; removeOnMismatchSeconds?: number }>;
    targetCluster?: unknown;
    matchConditions?: unknown;
    [key: string]: unknown;
  };
  /** The list has `shape` only; one policy adds the rest. */
  status?: {
    shape?: string;
    mode?: 'shadow' | 'enforce';
    rules?: string;
    recentActions?: PolicyAction[];
    conditions?: Condition[];
    blastRadius?: BlastRadius;
  };
}

/** A FailoverBudget (GET /api/failoverbudgets). */
export interface Budget {
  metadata: Metadata & { namespace: string };
  spec: { selector?: unknown; maxInFlight: number | string };
  status?: {
    /** The limit resolved (a percentage once the matching bindings were counted). */
    maxInFlight?: number;
    matchingBindings?: number;
    inFlight?: number;
    /** `binding` is the binding's key: `rb:<namespace>:<name>` or `crb:<name>`. */
    evictions?: Array<{ binding: string; cluster: string; since: string }>;
  };
}

export type FailbackState = 'waiting-for-home' | 'counting' | 'queued' | 'scheduled' | 'done';

/** One binding of GET /api/failback: waiting to go back to its home cluster. */
export interface Failback {
  binding: BindingRef;
  home: string;
  replacedBy: string[];
  windowSeconds: number;
  healthySince?: string | null;
  dueAt?: string | null;
  state: FailbackState;
  row?: unknown;
}

export interface FailbackAnswer {
  bindings: Failback[];
}

export interface Template {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
}

export interface Event {
  time: string;
  kind: string;
  name: string;
  type: string;
  reason: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface ItemList<T> {
  kind?: string;
  apiVersion?: string;
  items: T[];
}

export interface ApplyAnswer {
  results: Array<{ kind: string; name: string; action: string }>;
}

export interface SwitchAnswer {
  paused: boolean;
  failoverEnabled: boolean;
}

export interface DrainAnswer {
  cluster: string;
  cordoned: boolean;
  planned: number;
  alreadyDecided: number;
}

/** POST /api/clustertaintpolicies/{name}/acknowledge. */
export interface AcknowledgeAnswer {
  kind: 'ClusterTaintPolicy';
  name: string;
  acknowledged: boolean;
  changed: boolean;
  reevaluated: string[];
  message: string;
}

export interface UncordonAnswer {
  cluster: string;
  uncordoned: boolean;
  abandoned: number;
  abandonedAtSlot: number;
}

export interface WhyAnswer {
  binding: BindingRef;
  placedOn: TargetCluster[];
  gracefulEvictionTasks: EvictionTask[];
  evictions: Eviction[];
  events: Event[];
  explanation: string[];
}

export interface WhatIfAnswer {
  at: string;
  condition?: { type: string; status: string };
  taints: Array<{ cluster: string; key: string; value?: string; effect: string; at: string; policy: string }>;
  untainted: Array<{ cluster: string; why: string }>;
  fleet: { total: number; unhealthy: number; failureRatio: number; tier: string; rate: number };
  evictions: Array<{ binding: BindingRef; cluster: string; dueAt: string; slot: string | null; why: string; purgeMode: string; targets: TargetCluster[] }>;
  blocked: Array<{ binding: BindingRef; cluster: string; dueAt: string; reason: string }>;
  tolerated: Array<{ binding: BindingRef; cluster: string; why: string }>;
  alreadyDecided: Array<{ binding: BindingRef; cluster: string; state: string }>;
  eta: string | null;
  heldBy: null | 'paused' | 'gate' | 'halted';
  counts: { evictions: number; blocked: number; tolerated: number; alreadyDecided: number };
}

/** `ns/name` for a ResourceBinding, `name` for a ClusterResourceBinding. */
export const bindingName = (b: BindingRef): string => (b.namespace ? `${b.namespace}/${b.name}` : b.name);

/** A binding key as budgets record it (`rb:<namespace>:<name>`, `crb:<name>`) shown as `ns/name` or `name`. */
export function bindingKeyName(key: string): string {
  const rb = /^rb:([^:]*):(.+)$/.exec(key);
  if (rb) return `${rb[1]}/${rb[2]}`;
  const crb = /^crb:(.+)$/.exec(key);
  return crb ? crb[1] : key;
}
