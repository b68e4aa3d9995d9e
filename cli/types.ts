/**
 * The shapes of the API answers the CLI reads: aliases of the types generated from the OpenAPI document
 * (api.gen.ts, written by `npm run openapi`), so they are the server's own. The CLI may not import shared/.
 */
import type { components } from './api.gen';

type Schemas = components['schemas'];

export type Metadata = Schemas['Metadata'];
export type Condition = Schemas['Condition'];
export type Cluster = Schemas['Cluster'];
export type Taint = Cluster['spec']['taints'][number];
export type TargetCluster = NonNullable<Schemas['BindingSpec']['clusters']>[number];
export type EvictionTask = Schemas['GracefulEvictionTask'];
export type Binding = Schemas['Binding'];
export type BindingRef = Schemas['BindingRef'];
export type Eviction = Schemas['Eviction'];
export type BlastRadius = Schemas['BlastRadius'];
export type PolicyAction = Schemas['TaintPolicyAction'];
/** A ClusterTaintPolicy: the list has `status.shape` only; one policy (GET .../{name}) adds the rest. */
export type Policy = Omit<Schemas['TaintPolicy'], 'status'> & { status: Schemas['TaintPolicyListItem']['status'] & Partial<Schemas['TaintPolicy']['status']> };
export type Budget = Schemas['Budget'];

/** The taints a policy adds, of either shape (windowed `taintsToAdd`, Karmada's `taints`). */
export const policyTaints = (policy: Pick<Policy, 'spec'>): Array<{ key: string; value?: string; effect: string }> =>
  'taintsToAdd' in policy.spec ? policy.spec.taintsToAdd : policy.spec.taints;
export type FailbackState = Schemas['FailbackItem']['state'];
/** One binding of GET /api/failback: waiting to go back to its home cluster (or gone back within the hour). */
export type Failback = Schemas['FailbackItem'];
export type FailbackAnswer = Schemas['FailbackAnswer'];
export type Template = Schemas['Template'];
export type Event = Schemas['Event'];
export type ApplyAnswer = Schemas['ApplyAnswer'];
/** A large apply going on in the background (POST /api/apply answered 202). */
export type ApplyOperation = Schemas['ApplyOperation'];
export type SwitchAnswer = Schemas['SwitchAnswer'];
export type DrainAnswer = Schemas['DrainAnswer'];
export type AcknowledgeAnswer = Schemas['AcknowledgeAnswer'];
export type UncordonAnswer = Schemas['UncordonAnswer'];
export type WhyAnswer = Schemas['WhyAnswer'];
export type WhatIfAnswer = Schemas['WhatIfAnswer'];

/** Any of the API's lists (`items`), for the commands that print one kind generically. */
export interface ItemList<T> {
  kind?: string;
  apiVersion?: string;
  items: T[];
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
