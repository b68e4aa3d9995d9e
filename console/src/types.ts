/** The shapes the console reads (see the HTTP API); only the fields it shows. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}
export interface TaintHolder {
  key: string;
  effect: string;
  policies: string[];
  manual: boolean;
}
export interface Cluster {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { taints?: Taint[] };
  status?: {
    conditions?: Condition[];
    lastHeartbeatTime?: string;
    taintHolders?: TaintHolder[];
    policyWindows?: Array<{ policy: string; matched: boolean; since: string }>;
  };
}
export type Tier = 'primary' | 'secondary' | 'halted';
export interface Fleet {
  total: number;
  /** Ready not True, or a NoExecute/PreferNoExecute taint: what the tier counts. */
  unhealthy: number;
  /** Holding a NoExecute/PreferNoExecute taint. */
  faulty: number;
  failureRatio: number;
  tier: Tier;
  rate: number;
  failoverEnabled: boolean;
  paused: boolean;
  pending: number;
  scheduled: number;
  faultyClusters: string[];
  unhealthyClusters: string[];
  /** The Karmada API server's use (serviceHealth): `degraded` when it cannot be used. */
  status: string;
  mode: string;
  reason?: string;
  since?: string;
}
/** GET /api/healthz (200, or 503 when the Karmada API server cannot be used). */
export interface Health {
  status: 'ok' | 'degraded';
  mode: 'standalone' | 'karmada';
  reason?: string;
  since?: string;
  /** Whether the admin API needs the admin token (AUTH_MODE); absent from an older server. */
  auth?: 'none' | 'required';
}
export interface BindingRef {
  kind: string;
  namespace?: string;
  name: string;
}
export type EvictionState = 'pending' | 'scheduled' | 'done' | 'abandoned' | 'blocked' | 'failed';
export interface LedgerRow {
  cluster: string;
  binding: BindingRef;
  resourceKind?: string;
  state: EvictionState;
  reason?: string;
  why?: string;
  purgeMode?: string;
  decidedAt?: string;
  dueAt?: string;
  scheduledFor?: string | null;
  executedAt?: string | null;
  attempts?: number;
  message?: string | null;
  /** `BudgetExceeded` while a FailoverBudget (`waitingFor`, `namespace/name`) holds the due row back. */
  stateReason?: string | null;
  waitingFor?: string | null;
  priority?: number;
}
export type HeldBy = null | 'paused' | 'gate' | 'halted';
export interface ClusterQueue {
  cluster: string;
  faulty: boolean;
  draining: boolean;
  /** since when it is faulty or draining (when the API says) */
  since?: string | null;
  pending: number;
  scheduled: number;
  blocked: number;
  done: number;
  abandoned: number;
  failed: number;
  blockedReasons: Array<{ reason: string; count: number }>;
  lastEta: string | null;
}
export interface QueueSummary {
  generatedAt: string;
  tier: Tier;
  rate: number;
  paused: boolean;
  failoverEnabled: boolean;
  heldBy: HeldBy;
  clusters: ClusterQueue[];
}
export interface History {
  from: string;
  to: string;
  bucketSeconds: number;
  points: Array<{ at: string; evictionsPerSecond: number; tier: Tier }>;
}
export interface FleetEvent {
  time: string;
  kind: string;
  name: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  details?: Record<string, unknown>;
}
export interface GracefulEvictionTask {
  fromCluster: string;
  purgeMode?: string;
  reason?: string;
  producer?: string;
  message?: string;
  replicas?: number;
  creationTimestamp?: string;
  suppressDeletion?: boolean;
}
export interface Binding {
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number };
  spec: {
    resource?: { apiVersion: string; kind: string; name: string; namespace?: string };
    replicas?: number;
    clusters?: Array<{ name: string; replicas?: number }>;
    placement?: unknown;
    failover?: unknown;
    gracefulEvictionTasks?: GracefulEvictionTask[];
    activeEvictionHistory?: Array<{ clusterName: string; creationTimestamp: string }>;
  };
  status?: {
    conditions?: Condition[];
    aggregatedStatus?: Array<{ clusterName: string; health?: string; applied?: boolean }>;
  };
}
export interface Why {
  binding: BindingRef;
  placedOn: Array<{ name: string; replicas?: number }>;
  gracefulEvictionTasks: GracefulEvictionTask[];
  evictions: LedgerRow[];
  events: FleetEvent[];
  explanation: string[];
}
export interface WhatIf {
  at: string;
  condition: { type: string; status: string };
  taints: Array<{ cluster: string; key: string; value?: string; effect: string; at: string; policy: string }>;
  untainted: Array<{ cluster: string; why: string }>;
  fleet: { total: number; unhealthy: number; failureRatio: number; tier: Tier; rate: number };
  evictions: Array<{
    binding: BindingRef;
    cluster: string;
    dueAt: string;
    slot: string | null;
    why: string;
    purgeMode?: string;
    targets: Array<{ name: string; replicas?: number }>;
  }>;
  blocked: Array<{ binding: BindingRef; cluster: string; dueAt?: string; reason: string }>;
  tolerated: Array<{ binding: BindingRef; cluster: string; why: string }>;
  alreadyDecided: Array<{ binding: BindingRef; cluster: string; state: string }>;
  eta: string | null;
  heldBy: HeldBy;
  counts: { evictions: number; blocked: number; tolerated: number; alreadyDecided: number };
}
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
export interface Policy {
  metadata: { name: string; annotations?: Record<string, string>; creationTimestamp?: string };
  spec: { taintsToAdd?: Taint[] };
  /** The list has `shape` only; one policy adds the rest. */
  status?: {
    shape?: string;
    mode?: 'shadow' | 'enforce';
    rules?: string;
    conditions?: Condition[];
    blastRadius?: BlastRadius;
    recentActions?: Array<{ time: string; cluster: string; action: string; taint: Taint; rule?: string; reason?: string }>;
  };
}
export interface Budget {
  metadata: { name: string; namespace: string };
  spec: {
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> };
    maxInFlight: number | string;
  };
  status?: {
    maxInFlight?: number;
    matchingBindings?: number;
    inFlight?: number;
    /** `binding` is a binding key: `rb:<namespace>:<name>` or `crb:<name>`. */
    evictions?: Array<{ binding: string; cluster: string; since: string }>;
  };
}
export type FailbackState = 'waiting-for-home' | 'counting' | 'queued' | 'scheduled' | 'done';
export interface Failback {
  binding: BindingRef;
  home: string;
  replacedBy: string[];
  windowSeconds: number;
  healthySince?: string | null;
  dueAt?: string | null;
  state: FailbackState;
}
