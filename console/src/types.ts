/**
 * The shapes the console reads: aliases of the types generated from the OpenAPI document (api.gen.ts,
 * written by `npm run openapi`), so they are the server's own.
 */
import type { components } from './api.gen';

type Schemas = components['schemas'];

export type Condition = Schemas['Condition'];
export type Cluster = Schemas['Cluster'];
export type Taint = Cluster['spec']['taints'][number];
export type TaintHolder = Cluster['status']['taintHolders'][number];
export type Fleet = Schemas['Fleet'];
export type Tier = Fleet['tier'];
/** GET /api/healthz (200, or 503 when the Karmada API server cannot be used); `auth` is absent from an older server. */
export type Health = Omit<Schemas['Health'], 'auth'> & Partial<Pick<Schemas['Health'], 'auth'>>;
export type BindingRef = Schemas['BindingRef'];
export type LedgerRow = Schemas['Eviction'];
export type EvictionState = LedgerRow['state'];
export type QueueSummary = Schemas['QueueSummary'];
export type HeldBy = QueueSummary['heldBy'];
export type ClusterQueue = Schemas['QueueSummaryEntry'];
export type History = Schemas['FleetHistory'];
export type FleetEvent = Schemas['Event'];
export type GracefulEvictionTask = Schemas['GracefulEvictionTask'];
export type Binding = Schemas['Binding'];
export type Why = Schemas['WhyAnswer'];
export type WhatIf = Schemas['WhatIfAnswer'];
export type BlastRadius = Schemas['BlastRadius'];
/** A ClusterTaintPolicy: the list has `status.shape` only; one policy (GET .../{name}) adds the rest. */
export type Policy = Omit<Schemas['TaintPolicy'], 'status'> & { status: Schemas['TaintPolicyListItem']['status'] & Partial<Schemas['TaintPolicy']['status']> };
export type Budget = Schemas['Budget'];

/** The taints a policy adds, of either shape (windowed `taintsToAdd`, Karmada's `taints`). */
export const policyTaints = (policy: Pick<Policy, 'spec'>): Array<{ key: string; value?: string; effect: string }> =>
  'taintsToAdd' in policy.spec ? policy.spec.taintsToAdd : policy.spec.taints;
export type FailbackState = Schemas['FailbackItem']['state'];
export type Failback = Schemas['FailbackItem'];
