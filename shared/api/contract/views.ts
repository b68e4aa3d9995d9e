import { z } from 'zod';
import {
  bindingSpecSchema,
  clusterAffinitySchema,
  clusterSpecSchema,
  CONDITION_STATUSES,
  failoverBudgetSpecSchema,
  matchConditionSchema,
  POLICY_MODES,
  policyTaintSchema,
  propagationSpecSchema,
  TAINT_EFFECTS,
  taintToAddSchema,
} from '../resources';

/**
 * What the HTTP API answers, as zod schemas: the one description of each response shape. The view
 * builders (shared/controllers/views.ts and the use-cases) take their return types from these, the
 * OpenAPI document (shared/api/openapi.ts) is generated from them, and the clients' types from the
 * document. Objects are strict, so a field a view adds without adding it here fails the contract test.
 */

const time = z.string().describe('an RFC 3339 time');
const strings = z.array(z.string());
const stringMap = z.record(z.string(), z.string());

export const EVICTION_STATES = ['pending', 'scheduled', 'done', 'abandoned', 'blocked', 'failed'] as const;
export const RATE_TIERS = ['primary', 'secondary', 'halted'] as const;
const tier = z.enum(RATE_TIERS);
const mode = z.enum(['standalone', 'karmada']);
const heldBy = z.enum(['gate', 'paused', 'halted']).nullable().describe('why nothing leaves now, or null');

/** The error body of every 4xx and 5xx answer. */
export const errorBodySchema = z.strictObject({
  error: z.string(),
  errors: z
    .array(
      z.strictObject({
        path: z.string().describe('the field, dotted with [index]; "" for the whole body'),
        message: z.string(),
        document: z.number().int().min(0).optional().describe('which document of a multi-document body'),
      }),
    )
    .optional(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

export const bindingRefSchema = z.strictObject({
  kind: z.enum(['ResourceBinding', 'ClusterResourceBinding']),
  namespace: z.string().optional(),
  name: z.string(),
});
export type BindingRefView = z.infer<typeof bindingRefSchema>;

export const conditionSchema = z.strictObject({
  type: z.string(),
  status: z.enum(CONDITION_STATUSES),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: time,
});
export type ConditionView = z.infer<typeof conditionSchema>;

/** Kubernetes metadata as the API shows it (stored fields, never secrets). */
export const metadataViewSchema = z.strictObject({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string(),
  creationTimestamp: time,
  generation: z.number().int(),
  resourceVersion: z.string().optional().describe('the ETag of the stored object'),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});
export type MetadataView = z.infer<typeof metadataViewSchema>;

// ---------------------------------------------------------------------------------------------
// Clusters

export const clusterTaintViewSchema = z.strictObject({ key: z.string(), value: z.string().optional(), effect: z.enum(TAINT_EFFECTS), timeAdded: time });

export const clusterViewSchema = z.strictObject({
  apiVersion: z.literal('cluster.karmada.io/v1alpha1'),
  kind: z.literal('Cluster'),
  metadata: metadataViewSchema,
  spec: clusterSpecSchema.omit({ taints: true }).extend({ taints: z.array(clusterTaintViewSchema) }),
  status: z.strictObject({
    conditions: z.array(conditionSchema),
    lastHeartbeatTime: time.optional(),
    taintHolders: z.array(
      z.strictObject({ key: z.string(), effect: z.enum(TAINT_EFFECTS), policies: strings.describe('the policies holding it'), manual: z.boolean() }),
    ),
    policyWindows: z.array(z.strictObject({ policy: z.string(), matched: z.boolean(), since: time })),
  }),
});
export type ClusterView = z.infer<typeof clusterViewSchema>;

// ---------------------------------------------------------------------------------------------
// ClusterTaintPolicies

const seedPolicySpec = z.strictObject({
  targetCluster: clusterAffinitySchema.optional(),
  matchConditions: z.array(matchConditionSchema).optional(),
  taintsToAdd: z.array(taintToAddSchema),
});
const karmadaPolicySpec = z.strictObject({
  targetClusters: clusterAffinitySchema.optional(),
  addOnConditions: z.array(matchConditionSchema).optional(),
  removeOnConditions: z.array(matchConditionSchema).optional(),
  taints: z.array(policyTaintSchema),
});
/** Either shape, never both: the windowed (`seed`) shape or Karmada's. */
export const taintPolicySpecViewSchema = z.union([seedPolicySpec, karmadaPolicySpec]);

const taintPolicyShape = z.enum(['seed', 'karmada']);

export const blastRadiusSchema = z.strictObject({
  maxShare: z.number(),
  fleet: z.number().int(),
  limit: z.number().int(),
  held: z.number().int(),
  clusters: strings,
  exceededSince: time.optional(),
  refused: strings.optional(),
  acknowledgedAt: time.optional(),
});

export const taintPolicyActionSchema = z.strictObject({
  time,
  cluster: z.string(),
  action: z.enum(['added', 'removed']),
  taint: z.strictObject({ key: z.string(), value: z.string().optional(), effect: z.string() }),
  shape: taintPolicyShape,
  rule: z.string(),
  reason: z.string(),
});

const taintPolicyEnvelope = {
  apiVersion: z.literal('policy.karmada.io/v1alpha1'),
  kind: z.literal('ClusterTaintPolicy'),
  metadata: metadataViewSchema,
  spec: taintPolicySpecViewSchema,
};

/** A policy in the list: its shape only. */
export const taintPolicyListItemSchema = z.strictObject({ ...taintPolicyEnvelope, status: z.strictObject({ shape: taintPolicyShape }) });
export type TaintPolicyListItem = z.infer<typeof taintPolicyListItemSchema>;

/** One policy: its shape, what it does, its latest actions, its conditions and blast radius. */
export const taintPolicyViewSchema = z.strictObject({
  ...taintPolicyEnvelope,
  status: z.strictObject({
    shape: taintPolicyShape,
    mode: z.enum(POLICY_MODES),
    rules: z.string(),
    recentActions: z.array(taintPolicyActionSchema),
    conditions: z.array(conditionSchema),
    blastRadius: blastRadiusSchema,
  }),
});
export type TaintPolicyView = z.infer<typeof taintPolicyViewSchema>;

export const acknowledgeAnswerSchema = z.strictObject({
  kind: z.literal('ClusterTaintPolicy'),
  name: z.string(),
  acknowledged: z.boolean().describe('an acknowledgement is in force'),
  changed: z.boolean().describe('this call changed something'),
  reevaluated: strings.describe('clusters the guard had refused, evaluated again'),
  message: z.string(),
  conditions: z.array(conditionSchema),
});
export type AcknowledgeAnswer = z.infer<typeof acknowledgeAnswerSchema>;

// ---------------------------------------------------------------------------------------------
// Bindings

export const workloadStatusItemSchema = z.strictObject({
  clusterName: z.string(),
  applied: z.boolean().optional(),
  health: z.enum(['Healthy', 'Unhealthy', 'Unknown']).optional(),
  creationTimestamp: time.optional(),
  settled: z.boolean().optional(),
  unhealthySince: time.optional(),
  failoverHeld: z.string().optional(),
  status: z.record(z.string(), z.unknown()).optional(),
});

const policyRef = {
  kind: z.enum(['PropagationPolicy', 'ClusterPropagationPolicy']),
  namespace: z.string().optional(),
  name: z.string(),
};

export const bindingViewSchema = z.strictObject({
  apiVersion: z.literal('work.karmada.io/v1alpha2'),
  kind: z.enum(['ResourceBinding', 'ClusterResourceBinding']),
  metadata: metadataViewSchema,
  spec: bindingSpecSchema,
  status: z.strictObject({
    schedulerObservedGeneration: z.number().int().optional(),
    conditions: z
      .array(z.strictObject({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional(), lastTransitionTime: time }))
      .optional(),
    aggregatedStatus: z.array(workloadStatusItemSchema).optional(),
    applicationFailoverCheckAt: time.optional(),
    propagationPolicy: z
      .strictObject({ ...policyRef, fields: z.array(z.enum(['placement', 'failover'])) })
      .optional()
      .describe('the propagation policy the binding took placement and/or failover from'),
  }),
});
export type BindingView = z.infer<typeof bindingViewSchema>;

/** POST .../status: the binding, and what the report caused. */
export const bindingStatusAnswerSchema = bindingViewSchema.extend({
  evictedClusters: strings.describe('clusters application failover evicted the workload from'),
  clearedTasks: z.array(z.strictObject({ fromCluster: z.string(), why: z.string() })),
});
export type BindingStatusAnswer = z.infer<typeof bindingStatusAnswerSchema>;

// ---------------------------------------------------------------------------------------------
// Propagation policies, budgets, templates

export const propagationPolicyViewSchema = z.strictObject({
  apiVersion: z.literal('policy.karmada.io/v1alpha1'),
  kind: z.enum(['PropagationPolicy', 'ClusterPropagationPolicy']),
  metadata: metadataViewSchema,
  spec: propagationSpecSchema,
});
export type PropagationPolicyView = z.infer<typeof propagationPolicyViewSchema>;

export const budgetViewSchema = z.strictObject({
  apiVersion: z.literal('failover.io/v1alpha1'),
  kind: z.literal('FailoverBudget'),
  metadata: metadataViewSchema.extend({ namespace: z.string() }),
  spec: failoverBudgetSpecSchema,
  status: z.strictObject({
    maxInFlight: z.number().int().optional().describe('the limit resolved (a percentage once the matching bindings were counted)'),
    matchingBindings: z.number().int().optional(),
    inFlight: z.number().int(),
    evictions: z.array(
      z.strictObject({ binding: z.string().describe('the binding key: rb:<namespace>:<name> or crb:<name>'), cluster: z.string(), since: time }),
    ),
  }),
});
export type BudgetView = z.infer<typeof budgetViewSchema>;

/** A resource template: the manifest as applied (a Secret's values redacted), with its server metadata. */
export const templateViewSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string(),
    resourceVersion: z.string(),
    generation: z.number().int(),
    creationTimestamp: time,
    labels: stringMap.optional(),
  }),
});
export type TemplateView = z.infer<typeof templateViewSchema>;

/** The Kubernetes-style list every collection GET answers. */
const list = <K extends string, A extends string, T extends z.ZodType>(apiVersion: A, kind: K, item: T) =>
  z.strictObject({ apiVersion: z.literal(apiVersion), kind: z.literal(kind), items: z.array(item) });

export const clusterListSchema = list('cluster.karmada.io/v1alpha1', 'ClusterList', clusterViewSchema);
export const taintPolicyListSchema = list('policy.karmada.io/v1alpha1', 'ClusterTaintPolicyList', taintPolicyListItemSchema);
export const resourceBindingListSchema = list('work.karmada.io/v1alpha2', 'ResourceBindingList', bindingViewSchema);
export const clusterResourceBindingListSchema = list('work.karmada.io/v1alpha2', 'ClusterResourceBindingList', bindingViewSchema);
export const propagationPolicyListSchema = list('policy.karmada.io/v1alpha1', 'PropagationPolicyList', propagationPolicyViewSchema);
export const clusterPropagationPolicyListSchema = list('policy.karmada.io/v1alpha1', 'ClusterPropagationPolicyList', propagationPolicyViewSchema);
export const budgetListSchema = list('failover.io/v1alpha1', 'FailoverBudgetList', budgetViewSchema);
export const templateListSchema = list('v1', 'List', templateViewSchema);

/** What a DELETE answers. */
export const deleteAnswerSchema = z.strictObject({
  kind: z.string(),
  name: z.string().describe('namespace/name for a namespaced object'),
  action: z.literal('deleted'),
});
export type DeleteAnswer = z.infer<typeof deleteAnswerSchema>;

export const applyAnswerSchema = z.strictObject({
  results: z.array(z.strictObject({ kind: z.string(), name: z.string(), action: z.enum(['created', 'configured', 'unchanged']) })),
});
export type ApplyAnswer = z.infer<typeof applyAnswerSchema>;

/** A large apply going on in the background (202 of POST /api/apply; GET /api/apply/operations/{id}). */
export const applyOperationSchema = z.strictObject({
  id: z.string(),
  state: z.enum(['Running', 'Succeeded', 'Failed']),
  createdAt: time,
  updatedAt: time,
  finishedAt: time.optional(),
  total: z.number().int().min(0).describe('objects in the request'),
  applied: z.number().int().min(0).describe('objects applied so far'),
  counts: z.strictObject({ created: z.number().int(), configured: z.number().int(), unchanged: z.number().int() }),
  error: errorBodySchema
    .extend({ status: z.number().int() })
    .optional()
    .describe(
      'why it stopped (state Failed); the first `applied` objects were applied, the chunk it stopped in up to the object the error names, none after it',
    ),
  results: applyAnswerSchema.shape.results.optional().describe('once finished: every object applied, in the order given'),
});
export type ApplyOperationView = z.infer<typeof applyOperationSchema>;

// ---------------------------------------------------------------------------------------------
// Events and the ledger

export const eventViewSchema = z.strictObject({
  time,
  kind: z.string(),
  name: z.string(),
  type: z.enum(['Normal', 'Warning']),
  reason: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type EventView = z.infer<typeof eventViewSchema>;
export const eventListSchema = z.strictObject({ items: z.array(eventViewSchema) });

/** One ledger row as GET /api/evictions shows it. */
export const evictionViewSchema = z.strictObject({
  cluster: z.string(),
  binding: bindingRefSchema,
  resourceKind: z.string(),
  state: z.enum(EVICTION_STATES),
  reason: z.string(),
  why: z.string(),
  purgeMode: z.enum(['Directly', 'Gracefully']),
  decidedAt: time,
  dueAt: time,
  scheduledFor: time.nullable(),
  executedAt: time.nullable(),
  attempts: z.number().int(),
  message: z.string().nullable(),
  stateReason: z.literal('BudgetExceeded').nullable().describe('why a due row waits'),
  waitingFor: z.string().nullable().describe('the FailoverBudget holding it, namespace/name'),
  priority: z.number().int(),
  home: z.string().optional().describe('a Failback row: the home it goes back to'),
});
export type EvictionView = z.infer<typeof evictionViewSchema>;
export const evictionListSchema = z.strictObject({ items: z.array(evictionViewSchema) });

export const queueSummaryEntrySchema = z.strictObject({
  cluster: z.string(),
  faulty: z.boolean(),
  draining: z.boolean(),
  since: time.nullable().describe('since when the cluster has been faulty or drained'),
  pending: z.number().int(),
  scheduled: z.number().int(),
  blocked: z.number().int(),
  done: z.number().int(),
  abandoned: z.number().int(),
  failed: z.number().int(),
  blockedReasons: z.array(z.strictObject({ reason: z.string(), count: z.number().int() })),
  lastEta: time.nullable().describe('when its last waiting eviction would run at the current rate'),
});
export type QueueSummaryEntry = z.infer<typeof queueSummaryEntrySchema>;

export const queueSummarySchema = z.strictObject({
  generatedAt: time,
  tier,
  rate: z.number(),
  paused: z.boolean(),
  failoverEnabled: z.boolean(),
  heldBy,
  clusters: z.array(queueSummaryEntrySchema),
});
export type QueueSummary = z.infer<typeof queueSummarySchema>;

// ---------------------------------------------------------------------------------------------
// Fleet, health, switches, operator actions

export const serviceHealthSchema = z.strictObject({
  status: z.enum(['ok', 'degraded']),
  mode,
  reason: z.string().optional(),
  since: time.optional(),
});
export type ServiceHealth = z.infer<typeof serviceHealthSchema>;

export const healthzAnswerSchema = serviceHealthSchema.extend({
  auth: z.enum(['none', 'required']).describe('whether the admin API needs the admin token'),
});
export type HealthzAnswer = z.infer<typeof healthzAnswerSchema>;

/** GET /api/fleet without the service health it is answered with. */
export const fleetViewSchema = z.strictObject({
  total: z.number().int(),
  unhealthy: z.number().int().describe('Ready not True, or a NoExecute/PreferNoExecute taint: what the tier counts'),
  faulty: z.number().int().describe('holding a NoExecute/PreferNoExecute taint'),
  failureRatio: z.number(),
  tier,
  rate: z.number().describe('evictions per second'),
  failoverEnabled: z.boolean(),
  paused: z.boolean(),
  pending: z.number().int(),
  scheduled: z.number().int(),
  unhealthyClusters: strings,
  faultyClusters: strings,
});
export type FleetView = z.infer<typeof fleetViewSchema>;

export const fleetAnswerSchema = z.strictObject({ ...fleetViewSchema.shape, ...serviceHealthSchema.shape });
export type FleetAnswer = z.infer<typeof fleetAnswerSchema>;

export const fleetHistorySchema = z.strictObject({
  from: time,
  to: time,
  bucketSeconds: z.number().int(),
  points: z.array(z.strictObject({ at: time, evictionsPerSecond: z.number(), tier: z.string().describe('primary, secondary or halted') })),
});
export type FleetHistory = z.infer<typeof fleetHistorySchema>;

export const switchAnswerSchema = z.strictObject({ paused: z.boolean(), failoverEnabled: z.boolean() });
export type SwitchAnswer = z.infer<typeof switchAnswerSchema>;

export const drainAnswerSchema = z.strictObject({
  cluster: z.string(),
  cordoned: z.boolean().describe('this call put the cordon taint on'),
  planned: z.number().int(),
  alreadyDecided: z.number().int(),
});
export type DrainAnswer = z.infer<typeof drainAnswerSchema>;

export const uncordonAnswerSchema = z.strictObject({
  cluster: z.string(),
  uncordoned: z.boolean().describe('this call removed the cordon taint'),
  abandoned: z.number().int(),
  abandonedAtSlot: z.number().int(),
});
export type UncordonAnswer = z.infer<typeof uncordonAnswerSchema>;

export const alertAnswerSchema = z.strictObject({
  applied: z.array(z.strictObject({ cluster: z.string(), conditions: strings, transitioned: strings })),
  unknownClusters: strings,
  unmatched: z.array(z.strictObject({ alert: z.string(), why: z.string() })),
});
export type AlertAnswer = z.infer<typeof alertAnswerSchema>;

// ---------------------------------------------------------------------------------------------
// What-if, why, failback

const targetCluster = z.strictObject({ name: z.string(), replicas: z.number().int().optional() });

export const whatIfAnswerSchema = z.strictObject({
  at: time,
  condition: z.strictObject({ type: z.string(), status: z.enum(CONDITION_STATUSES), reason: z.string().optional(), message: z.string().optional() }),
  taints: z.array(
    z.strictObject({ cluster: z.string(), key: z.string(), value: z.string().optional(), effect: z.enum(TAINT_EFFECTS), at: time, policy: z.string() }),
  ),
  untainted: z.array(z.strictObject({ cluster: z.string(), why: z.string() })),
  fleet: z.strictObject({ total: z.number().int(), unhealthy: z.number().int(), failureRatio: z.number(), tier, rate: z.number() }),
  evictions: z.array(
    z.strictObject({
      binding: bindingRefSchema,
      cluster: z.string(),
      dueAt: time,
      slot: time.nullable(),
      why: z.string(),
      purgeMode: z.string(),
      targets: z.array(targetCluster),
      noFit: z.string().optional(),
    }),
  ),
  blocked: z.array(z.strictObject({ binding: bindingRefSchema, cluster: z.string(), dueAt: time, slot: time.nullable(), reason: z.string() })),
  tolerated: z.array(z.strictObject({ binding: bindingRefSchema, cluster: z.string(), why: z.string() })),
  alreadyDecided: z.array(z.strictObject({ binding: bindingRefSchema, cluster: z.string(), state: z.enum(EVICTION_STATES), dueAt: time })),
  eta: time.nullable(),
  heldBy,
  counts: z.strictObject({ evictions: z.number().int(), blocked: z.number().int(), tolerated: z.number().int(), alreadyDecided: z.number().int() }),
  mode,
});
export type WhatIfAnswer = z.infer<typeof whatIfAnswerSchema>;

export const FAILBACK_STATES = ['waiting-for-home', 'counting', 'queued', 'scheduled', 'done'] as const;

const failbackFields = {
  home: z.string(),
  replacedBy: strings,
  windowSeconds: z.number().int().describe("the window of the binding's policy now"),
  healthySince: time.optional(),
  dueAt: time.optional(),
  state: z.enum(FAILBACK_STATES),
  why: z.string().describe('in words: what it waits for, or when it goes (or went) home'),
  evictedAt: time,
  doneAt: time.optional(),
  row: evictionViewSchema.optional().describe('its Failback ledger row'),
};

/** One failback of a binding as GET /api/failback shows it. */
export const failbackItemSchema = z.strictObject({ binding: bindingRefSchema, ...failbackFields });
export type FailbackItem = z.infer<typeof failbackItemSchema>;
export const failbackAnswerSchema = z.strictObject({ bindings: z.array(failbackItemSchema) });
export type FailbackAnswer = z.infer<typeof failbackAnswerSchema>;

export const whyAnswerSchema = z.strictObject({
  binding: bindingRefSchema,
  placedOn: z.array(z.strictObject({ name: z.string(), replicas: z.number().int() })),
  gracefulEvictionTasks: bindingSpecSchema.shape.gracefulEvictionTasks.unwrap(),
  evictions: z.array(evictionViewSchema),
  failback: z.array(z.strictObject(failbackFields)),
  events: z.array(eventViewSchema),
  explanation: strings.describe('one sentence per decision, newest last'),
});
export type WhyAnswer = z.infer<typeof whyAnswerSchema>;
