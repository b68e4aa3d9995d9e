/** The shapes of the API answers the CLI reads (only the fields it uses; the server may send more). */

export interface Metadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
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
}

export interface Policy {
  metadata: Metadata;
  spec: { taintsToAdd?: Taint[]; [key: string]: unknown };
  status?: { shape?: string };
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
  fleet: { total: number; faulty: number; failureRatio: number; tier: string; rate: number };
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
