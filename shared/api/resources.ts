import { z } from 'zod';
import { jsonPathProblem, MAX_PRESERVED_VALUE } from '../failover/statePreservation';
import { strictObject } from './errors';

/**
 * Zod schemas of the Karmada-shaped resources accepted at the edge. Unknown fields are rejected with the
 * closest known name. Read-only metadata (uid, resourceVersion, ...) is accepted and ignored so that the
 * output of GET can be applied again, as with kubectl.
 */

/**
 * Taint effects. `PreferNoSchedule` (Kubernetes' soft NoSchedule) only steers new placements away; it never
 * evicts and does not make a cluster faulty. A toleration with effect PreferNoSchedule or no effect tolerates it.
 */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'PreferNoExecute', 'NoExecute'] as const;
export type TaintEffect = (typeof TAINT_EFFECTS)[number];
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const CONDITION_TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export const clusterName = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'must be at most 63 characters')
  .regex(DNS_LABEL, 'must be a DNS label: lower-case letters, digits and "-", starting and ending with a letter or digit');

export const objectName = z
  .string()
  .min(1, 'must not be empty')
  .max(253, 'must be at most 253 characters')
  .regex(DNS_SUBDOMAIN, 'must be a DNS subdomain: lower-case letters, digits, "-" and ".", starting and ending with a letter or digit');

export const qualifiedName = z
  .string()
  .min(1, 'must not be empty')
  .max(316, 'must be at most 316 characters')
  .regex(QUALIFIED_NAME, 'must be a qualified name such as "example.com/name" or "name"')
  // Kubernetes' limits on the two parts: a name of at most 63 characters, a DNS prefix of at most 253.
  .refine((key) => key.slice(key.lastIndexOf('/') + 1).length <= 63, 'its name part (after any "/") must be at most 63 characters')
  .refine((key) => !key.includes('/') || key.slice(0, key.lastIndexOf('/')).length <= 253, 'its prefix (before "/") must be at most 253 characters');

export const labelValue = z.string().max(63, 'must be at most 63 characters').regex(LABEL_VALUE, 'must be a valid label value');

export const conditionType = z
  .string()
  .min(1, 'must not be empty')
  .max(316, 'must be at most 316 characters')
  .regex(CONDITION_TYPE, 'must be a condition type such as "Ready" or "example.com/DiskPressure"');

/**
 * Reports each item whose identity repeats an earlier one, at `path(index)`, naming where the first one is.
 */
function flagDuplicates<T>(
  items: readonly T[] | undefined,
  identity: (item: T) => string,
  ctx: z.RefinementCtx,
  path: (index: number) => PropertyKey[],
  message: (id: string, firstIndex: number) => string,
): void {
  const seen = new Map<string, number>();
  items?.forEach((item, index) => {
    const id = identity(item);
    const first = seen.get(id);
    if (first !== undefined) ctx.addIssue({ code: 'custom', path: path(index), message: message(id, first) });
    else seen.set(id, index);
  });
}

const timestamp = z.iso.datetime({ offset: true, message: 'must be an RFC 3339 time such as 2025-01-17T02:36:26Z' });

const labels = z.record(qualifiedName, labelValue);
const annotations = z.record(qualifiedName, z.string().max(4096, 'must be at most 4096 characters'));

const metadataFields = (name: z.ZodType<string>) => ({
  name,
  labels: labels.optional(),
  annotations: annotations.optional(),
  // Read-only fields, accepted and ignored (they appear in GET output).
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  creationTimestamp: z.string().optional(),
});

/** Metadata of a cluster-scoped object. */
export const metadataSchema = (name: z.ZodType<string>) => strictObject(metadataFields(name));

/**
 * The Karmada envelope: apiVersion, kind, metadata, spec. Status is accepted and ignored, like the
 * Kubernetes status subresource (health comes from reports), so GET output can be applied again.
 */
function resourceSchema<A extends string, K extends string, M extends z.ZodType, S extends z.ZodType>(apiVersion: A, kind: K, metadata: M, spec: S) {
  return strictObject({ apiVersion: z.literal(apiVersion), kind: z.literal(kind), metadata, spec, status: z.unknown().optional() });
}

export const taintSchema = strictObject({
  key: qualifiedName,
  value: labelValue.optional(),
  effect: z.enum(TAINT_EFFECTS),
  timeAdded: timestamp.optional(),
});

const requirementOperators = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
const labelSelectorRequirement = strictObject({
  key: qualifiedName,
  operator: z.enum(requirementOperators),
  values: z.array(labelValue).max(256).optional(),
}).superRefine((req, ctx) => {
  const count = req.values?.length ?? 0;
  if ((req.operator === 'In' || req.operator === 'NotIn') && count === 0) {
    ctx.addIssue({ code: 'custom', path: ['values'], message: `must not be empty when operator is ${req.operator}` });
  }
  if ((req.operator === 'Exists' || req.operator === 'DoesNotExist') && count > 0) {
    ctx.addIssue({ code: 'custom', path: ['values'], message: `must be empty when operator is ${req.operator}` });
  }
});

export const labelSelectorSchema = strictObject({
  matchLabels: labels.optional(),
  matchExpressions: z.array(labelSelectorRequirement).max(64).optional(),
});
export type LabelSelector = z.infer<typeof labelSelectorSchema>;

const fieldSelectorRequirement = strictObject({
  key: z.enum(['provider', 'region', 'zone']),
  operator: z.enum(['In', 'NotIn']),
  values: z.array(z.string().max(253)).min(1, 'must not be empty').max(256),
});

/** Karmada ClusterAffinity: names, exclusions, labels and the provider/region/zone field selector. */
export const clusterAffinitySchema = strictObject({
  clusterNames: z.array(clusterName).max(10000).optional(),
  exclude: z.array(clusterName).max(10000).optional(),
  labelSelector: labelSelectorSchema.optional(),
  fieldSelector: strictObject({ matchExpressions: z.array(fieldSelectorRequirement).max(16) }).optional(),
});
export type ClusterAffinity = z.infer<typeof clusterAffinitySchema>;

// ---------------------------------------------------------------------------------------------
// Cluster (cluster.karmada.io/v1alpha1)

export const clusterSpecSchema = strictObject({
  id: z.string().max(253).optional(),
  syncMode: z.enum(['Push', 'Pull']).optional(),
  apiEndpoint: z.string().max(2048).optional(),
  secretRef: strictObject({ namespace: z.string().max(253), name: z.string().max(253) }).optional(),
  impersonatorSecretRef: strictObject({ namespace: z.string().max(253), name: z.string().max(253) }).optional(),
  insecureSkipTLSVerification: z.boolean().optional(),
  proxyURL: z.string().max(2048).optional(),
  provider: z.string().max(253).optional(),
  region: z.string().max(253).optional(),
  zone: z.string().max(253).optional(),
  zones: z.array(z.string().max(253)).max(64).optional(),
  taints: z.array(taintSchema).max(64).optional(),
});
export type ClusterSpecInput = z.infer<typeof clusterSpecSchema>;

export const clusterSchema = resourceSchema('cluster.karmada.io/v1alpha1', 'Cluster', metadataSchema(clusterName), clusterSpecSchema.optional()).superRefine(
  (cluster, ctx) =>
    flagDuplicates(
      cluster.spec?.taints,
      (t) => `${t.key}:${t.effect}`,
      ctx,
      (i) => ['spec', 'taints', i],
      (id, first) => `duplicate taint ${id} (also at spec.taints[${first}]); taints are unique by key and effect`,
    ),
);
export type ClusterInput = z.infer<typeof clusterSchema>;

// ---------------------------------------------------------------------------------------------
// ClusterTaintPolicy (policy.karmada.io/v1alpha1)
//
// Two shapes under one kind: the windowed shape, `'seed'` in code (targetCluster, matchConditions, taintsToAdd
// with time windows), and Karmada's shape as shipped since v1.14 (targetClusters, addOnConditions,
// removeOnConditions, taints; no windows). One policy uses one shape; a mix is refused naming the fields of both.

const seconds = (fallback: number) =>
  z.number().int('must be a whole number of seconds').min(1, 'must be at least 1').max(2_147_483_647, 'must fit in 32 bits').default(fallback);

export const matchConditionSchema = strictObject({
  conditionType,
  operator: z.enum(['In', 'NotIn']),
  statusValues: z.array(z.enum(CONDITION_STATUSES)).min(1, 'must list at least one status').max(3),
});
export type MatchCondition = z.infer<typeof matchConditionSchema>;

/**
 * Karmada's MatchCondition. As upstream, `NotIn` with no status values means "the cluster reports this
 * condition"; `In` with none could never match, so it is refused.
 */
export const karmadaMatchConditionSchema = strictObject({
  conditionType,
  operator: z.enum(['In', 'NotIn']),
  statusValues: z.array(z.enum(CONDITION_STATUSES)).max(3),
}).superRefine((condition, ctx) => {
  if (condition.operator === 'In' && condition.statusValues.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['statusValues'], message: 'must list at least one status when operator is In (In with none never matches)' });
  }
});

export const taintToAddSchema = strictObject({
  key: qualifiedName,
  effect: z.enum(TAINT_EFFECTS),
  value: labelValue.optional(),
  addOnMatchSeconds: seconds(300),
  removeOnMismatchSeconds: seconds(180),
});
export type TaintToAdd = z.infer<typeof taintToAddSchema>;

/** A taint of Karmada's shape: identified by key and effect, no windows. */
export const policyTaintSchema = strictObject({
  key: qualifiedName,
  effect: z.enum(TAINT_EFFECTS),
  value: labelValue.optional(),
});
export type PolicyTaint = z.infer<typeof policyTaintSchema>;

/** The fields of each shape, and what the other shape calls the same thing. */
const SEED_FIELDS = ['targetCluster', 'matchConditions', 'taintsToAdd'] as const;
const KARMADA_FIELDS = ['targetClusters', 'addOnConditions', 'removeOnConditions', 'taints'] as const;
const COUNTERPART: Record<string, string> = {
  targetCluster: 'targetClusters',
  targetClusters: 'targetCluster',
  matchConditions: 'addOnConditions',
  addOnConditions: 'matchConditions',
  taintsToAdd: 'taints',
  taints: 'taintsToAdd',
};

/**
 * One policy, one shape. A mix is reported on each field of the shape with fewer fields present (on a
 * tie, on the Karmada-shape fields), each message naming the other shape's fields. A missing taint list
 * is reported for the shape in use (the seed shape when neither is recognisable). Runs even when fields
 * are invalid, so a mix is reported together with the field errors.
 */
function checkTaintPolicyShape(spec: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const seed = SEED_FIELDS.filter((f) => spec[f] !== undefined);
  const karmada = KARMADA_FIELDS.filter((f) => spec[f] !== undefined);
  if (seed.length > 0 && karmada.length > 0) {
    const karmadaMinority = karmada.length <= seed.length;
    const [fields, others] = karmadaMinority ? [karmada, seed] : [seed, karmada];
    const [shape, otherShape] = karmadaMinority ? ['Karmada-shape', 'windowed-shape'] : ['windowed-shape', 'Karmada-shape'];
    const named = others.map((f) => `"${f}"`).join(', ');
    for (const field of fields) {
      const counterpart = COUNTERPART[field];
      const hint =
        counterpart && !others.includes(counterpart as never) ? ` (the ${karmadaMinority ? 'windowed' : 'Karmada'} shape spells it "${counterpart}")` : '';
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: `${shape} field "${field}" cannot be mixed with ${otherShape} field${others.length > 1 ? 's' : ''} ${named}; a policy uses one shape${hint}`,
      });
    }
    return;
  }
  const required = karmada.length > 0 ? 'taints' : 'taintsToAdd';
  if (spec[required] !== undefined) return;
  const hint = seed.length === 0 && karmada.length === 0 ? `; Karmada's shape lists "taints" instead` : '';
  ctx.addIssue({ code: 'custom', path: [required], message: `required field is missing (expected array)${hint}` });
}

/** The windowed shape: time windows per taint. */
export interface SeedTaintPolicySpec {
  targetCluster?: ClusterAffinity;
  matchConditions?: MatchCondition[];
  taintsToAdd: TaintToAdd[];
}

/** Karmada's shape (v1.14+): added when all addOnConditions match, removed when all removeOnConditions match. */
export interface KarmadaTaintPolicySpec {
  targetClusters?: ClusterAffinity;
  addOnConditions?: MatchCondition[];
  removeOnConditions?: MatchCondition[];
  taints: PolicyTaint[];
}

export type ClusterTaintPolicySpec = SeedTaintPolicySpec | KarmadaTaintPolicySpec;
export type TaintPolicyShape = 'seed' | 'karmada';

export const taintPolicyShape = (spec: ClusterTaintPolicySpec): TaintPolicyShape => ('taints' in spec && spec.taints !== undefined ? 'karmada' : 'seed');
export const isKarmadaTaintPolicySpec = (spec: ClusterTaintPolicySpec): spec is KarmadaTaintPolicySpec => taintPolicyShape(spec) === 'karmada';

export const clusterTaintPolicySpecSchema = strictObject({
  // the windowed shape
  targetCluster: clusterAffinitySchema.optional(),
  matchConditions: z.array(matchConditionSchema).max(32).optional(),
  taintsToAdd: z.array(taintToAddSchema).min(1, 'must list at least one taint').max(32).optional(),
  // Karmada v1.14+
  targetClusters: clusterAffinitySchema.optional(),
  addOnConditions: z.array(karmadaMatchConditionSchema).max(32).optional(),
  removeOnConditions: z.array(karmadaMatchConditionSchema).max(32).optional(),
  taints: z.array(policyTaintSchema).min(1, 'must list at least one taint').max(32).optional(),
})
  .check(
    z.superRefine((spec, ctx) => checkTaintPolicyShape(spec, ctx), {
      when: (payload) => typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value),
    }),
  )
  .superRefine((spec, ctx) => {
    flagDuplicates(
      spec.taintsToAdd,
      (t) => `${t.key}:${t.effect}`,
      ctx,
      (i) => ['taintsToAdd', i],
      (id, first) => `duplicate taint ${id} (also at spec.taintsToAdd[${first}]); a policy lists each key and effect once`,
    );
    // Karmada's webhook rule: taints are unique by key and effect (the value is ignored).
    flagDuplicates(
      spec.taints,
      (t) => `${t.key}:${t.effect}`,
      ctx,
      (i) => ['taints', i],
      (id, first) => `duplicate taint ${id} (also at spec.taints[${first}]); taints are unique by key and effect`,
    );
  })
  .transform((spec): ClusterTaintPolicySpec => spec as ClusterTaintPolicySpec);

/** Shadow mode (shared/failover/shadow.ts): `shadow` computes and records, writes no taint; `enforce` (or no annotation) acts. */
export const POLICY_MODE_ANNOTATION = 'failover.io/mode';
export const POLICY_MODES = ['shadow', 'enforce'] as const;

export const clusterTaintPolicySchema = resourceSchema(
  'policy.karmada.io/v1alpha1',
  'ClusterTaintPolicy',
  metadataSchema(objectName),
  clusterTaintPolicySpecSchema,
).superRefine((policy, ctx) => {
  const mode = policy.metadata.annotations?.[POLICY_MODE_ANNOTATION];
  if (mode !== undefined && !(POLICY_MODES as readonly string[]).includes(mode)) {
    // One path segment, so the error names the annotation as Kubernetes does: metadata.annotations["failover.io/mode"].
    ctx.addIssue({ code: 'custom', path: ['metadata', `annotations["${POLICY_MODE_ANNOTATION}"]`], message: `must be shadow or enforce, got "${mode}"` });
  }
});
export type ClusterTaintPolicyInput = z.infer<typeof clusterTaintPolicySchema>;

// ---------------------------------------------------------------------------------------------
// Health report: POST /api/clusters/{name}/status

export const reportedConditionSchema = strictObject({
  type: conditionType,
  status: z.enum(CONDITION_STATUSES),
  reason: z.string().max(1024, 'must be at most 1024 characters').optional(),
  message: z.string().max(4096, 'must be at most 4096 characters').optional(),
});

export const statusReportSchema = strictObject({
  conditions: z.array(reportedConditionSchema).min(1, 'must report at least one condition').max(32, 'must report at most 32 conditions'),
  observedAt: timestamp.optional(),
}).superRefine((report, ctx) =>
  flagDuplicates(
    report.conditions,
    (c) => c.type,
    ctx,
    (i) => ['conditions', i, 'type'],
    (id, first) => `duplicate condition type "${id}" (also at conditions[${first}])`,
  ),
);
export type StatusReport = z.infer<typeof statusReportSchema>;

// ---------------------------------------------------------------------------------------------
// ResourceBinding / ClusterResourceBinding (work.karmada.io/v1alpha2)

export const namespaceName = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'must be at most 63 characters')
  .regex(DNS_LABEL, 'must be a DNS label: lower-case letters, digits and "-"');

/** Metadata of a namespaced object (namespace `default` when not given). */
export const namespacedMetadataSchema = strictObject({ ...metadataFields(objectName), namespace: namespaceName.default('default') });

/** Purge modes: cluster failover's spellings and application failover's are the same two modes, plus Never. */
export const PURGE_MODES = ['Directly', 'Gracefully', 'Never'] as const;
export type PurgeMode = (typeof PURGE_MODES)[number];
const PURGE_ALIASES: Record<string, PurgeMode> = {
  Directly: 'Directly',
  Immediately: 'Directly',
  Gracefully: 'Gracefully',
  Graciously: 'Gracefully',
  Never: 'Never',
};
export const purgeModeSchema = <M extends PurgeMode>(allowed: readonly M[]) =>
  z.string().transform((value, ctx): M => {
    const mode = PURGE_ALIASES[value] as M | undefined;
    if (!mode || !allowed.includes(mode)) {
      const spellings = Object.keys(PURGE_ALIASES).filter((k) => (allowed as readonly PurgeMode[]).includes(PURGE_ALIASES[k]));
      ctx.addIssue({ code: 'custom', message: `must be one of ${spellings.map((s) => JSON.stringify(s)).join(', ')}` });
      return z.NEVER;
    }
    return mode;
  });

/**
 * Exists or Equal. Karmada's webhook rejects the comparison operators Lt and Gt in clusterTolerations
 * (`validateClusterTolerations`; its toleration matching has them disabled), and so do we, saying so.
 */
const tolerationOperator = z.string().transform((operator, ctx): 'Exists' | 'Equal' => {
  if (operator === 'Exists' || operator === 'Equal') return operator;
  ctx.addIssue({
    code: 'custom',
    message:
      operator === 'Lt' || operator === 'Gt'
        ? `${operator} is not supported in clusterTolerations: Karmada rejects the comparison operators Lt and Gt; use "Exists" or "Equal"`
        : 'must be one of "Exists", "Equal"',
  });
  return z.NEVER;
});

export const tolerationSchema = strictObject({
  key: z.union([z.literal(''), qualifiedName]).optional(),
  operator: tolerationOperator.optional(),
  value: labelValue.optional(),
  effect: z.union([z.literal(''), z.enum(TAINT_EFFECTS)]).optional(),
  tolerationSeconds: z.number().int('must be a whole number of seconds').optional(),
}).superRefine((toleration, ctx) => {
  if (toleration.operator === 'Exists' && toleration.value) {
    ctx.addIssue({ code: 'custom', path: ['value'], message: 'must be empty when operator is Exists' });
  }
  if (!toleration.key && toleration.operator !== 'Exists') {
    ctx.addIssue({ code: 'custom', path: ['operator'], message: 'must be Exists when key is empty' });
  }
});
export type Toleration = z.infer<typeof tolerationSchema>;

export const spreadConstraintSchema = strictObject({
  spreadByField: z.enum(['cluster', 'region', 'zone', 'provider']).optional(),
  spreadByLabel: qualifiedName.optional(),
  maxGroups: z.number().int().min(0).optional(),
  minGroups: z.number().int().min(0).optional(),
}).superRefine((constraint, ctx) => {
  if (constraint.spreadByField && constraint.spreadByLabel) {
    ctx.addIssue({ code: 'custom', path: ['spreadByLabel'], message: 'set either spreadByField or spreadByLabel, not both' });
  }
  if (constraint.maxGroups && constraint.minGroups && constraint.minGroups > constraint.maxGroups) {
    ctx.addIssue({ code: 'custom', path: ['minGroups'], message: 'must not be greater than maxGroups' });
  }
});

export const replicaSchedulingSchema = strictObject({
  replicaSchedulingType: z.enum(['Duplicated', 'Divided']).default('Duplicated'),
  replicaDivisionPreference: z.enum(['Aggregated', 'Weighted']).optional(),
  weightPreference: strictObject({
    staticWeightList: z
      .array(strictObject({ targetCluster: clusterAffinitySchema, weight: z.number().int().min(1, 'must be at least 1') }))
      .max(1000)
      .optional(),
    dynamicWeight: z.enum(['AvailableReplicas']).optional(),
  }).optional(),
});

export const placementSchema = strictObject({
  clusterAffinity: clusterAffinitySchema.optional(),
  clusterTolerations: z.array(tolerationSchema).max(64).optional(),
  spreadConstraints: z.array(spreadConstraintSchema).max(8).optional(),
  replicaScheduling: replicaSchedulingSchema.optional(),
});
export type Placement = z.infer<typeof placementSchema>;

/**
 * A Kubernetes label key: an optional DNS-subdomain prefix (at most 253 characters) and "/", then a name of
 * at most 63 characters (letters, digits, "-", "_", "."; starting and ending with a letter or digit).
 */
const labelKey = qualifiedName.superRefine((key, ctx) => {
  const slash = key.indexOf('/');
  const name = key.slice(slash + 1);
  if (name.length > 63) ctx.addIssue({ code: 'custom', message: `the name part "${name.slice(0, 20)}…" must be at most 63 characters (a label key)` });
  if (slash > 253) ctx.addIssue({ code: 'custom', message: 'the prefix before "/" must be at most 253 characters (a label key)' });
});

/** A Kubernetes JSONPath template evaluated from the workload's status, e.g. `{.jobId}` (see failover/statePreservation.ts). */
const jsonPathTemplate = z
  .string()
  .min(1, 'must not be empty')
  .max(512, 'must be at most 512 characters')
  .superRefine((template, ctx) => {
    const problem = jsonPathProblem(template);
    if (problem) ctx.addIssue({ code: 'custom', message: `invalid JSONPath: ${problem}` });
  });

/**
 * Karmada's StatePreservation (v1.12+ application failover, v1.15+ cluster failover): on an eviction, each
 * rule's JSONPath is evaluated against the status collected from the evicted cluster, and the value is kept
 * in the graceful-eviction task's `preservedLabelState` under `aliasLabelName`. At most 16 rules of at most
 * 512 characters: failover.cluster also travels in every placement-index row (one Table string property).
 */
export const statePreservationSchema = strictObject({
  rules: z.array(strictObject({ aliasLabelName: labelKey, jsonPath: jsonPathTemplate })).max(16, 'must list at most 16 rules'),
}).superRefine((preservation, ctx) =>
  flagDuplicates(
    preservation.rules,
    (rule) => rule.aliasLabelName,
    ctx,
    (i) => ['rules', i, 'aliasLabelName'],
    (id, first) => `aliasLabelName "${id}" is used twice (also at rules[${first}]); each rule names its own label`,
  ),
);
export type StatePreservation = z.infer<typeof statePreservationSchema>;

export const clusterFailoverSchema = strictObject({
  purgeMode: purgeModeSchema(['Directly', 'Gracefully'] as const).default('Gracefully'),
  tolerationSeconds: z.number().int('must be a whole number of seconds').min(0, 'must not be negative').max(2_147_483_647).default(300),
  // With purge mode Gracefully, the old copy goes at the latest this long after the eviction.
  gracePeriodSeconds: z.number().int('must be a whole number of seconds').min(1, 'must be at least 1').max(2_147_483_647).optional(),
  statePreservation: statePreservationSchema.optional(),
}).superRefine((failover, ctx) => {
  if (failover.gracePeriodSeconds !== undefined && failover.purgeMode !== 'Gracefully') {
    ctx.addIssue({
      code: 'custom',
      path: ['gracePeriodSeconds'],
      message: `only applies with purgeMode Gracefully (Graciously); purgeMode is ${failover.purgeMode}`,
    });
  }
});
export type ClusterFailover = z.infer<typeof clusterFailoverSchema>;

const wholeSeconds = z.number().int('must be a whole number of seconds').max(2_147_483_647, 'must fit in 32 bits');

/**
 * Application failover's settings (ApplicationFailoverBehavior). Defaults: tolerationSeconds 10, purgeMode
 * Graciously (stored as Gracefully) with gracePeriodSeconds 600, blockPredecessorSeconds 600 (0 = never
 * again).
 */
export const applicationFailoverSchema = strictObject({
  decisionConditions: strictObject({
    tolerationSeconds: wholeSeconds.min(0, 'must not be negative').default(10),
    // `healthyState: [Unhealthy]` names the state that triggers failover. Unhealthy is the only one that
    // does, so it is accepted and means the default.
    healthyState: z.array(z.literal('Unhealthy')).max(1).optional(),
  }).default({ tolerationSeconds: 10 }),
  preConditions: strictObject({
    delaySeconds: wholeSeconds.min(0, 'must not be negative').optional(),
    healthyState: z.literal('Healthy').optional(),
  }).optional(),
  purgeMode: purgeModeSchema(PURGE_MODES).default('Gracefully'),
  gracePeriodSeconds: wholeSeconds.min(1, 'must be greater than 0').optional(),
  blockPredecessorSeconds: wholeSeconds.min(0, 'must not be negative (0 blocks the cluster for ever)').default(600),
  statePreservation: statePreservationSchema.optional(),
}).transform((behavior, ctx) => {
  if (behavior.gracePeriodSeconds !== undefined && behavior.purgeMode !== 'Gracefully') {
    ctx.addIssue({
      code: 'custom',
      path: ['gracePeriodSeconds'],
      message: `only applies with purgeMode Graciously (Gracefully); purgeMode is ${behavior.purgeMode === 'Directly' ? 'Immediately' : 'Never'}`,
    });
    return z.NEVER;
  }
  return behavior.purgeMode === 'Gracefully' ? { ...behavior, gracePeriodSeconds: behavior.gracePeriodSeconds ?? 600 } : behavior;
});
export type ApplicationFailover = z.infer<typeof applicationFailoverSchema>;

export const failoverSchema = strictObject({
  cluster: clusterFailoverSchema.optional(),
  application: applicationFailoverSchema.optional(),
});

const taskReason = z
  .string()
  .min(1)
  .max(32)
  .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/, 'must be a CamelCase reason');
export const gracefulEvictionTaskSchema = strictObject({
  fromCluster: clusterName,
  purgeMode: purgeModeSchema(PURGE_MODES).optional(),
  replicas: z.number().int().min(0).optional(),
  reason: taskReason,
  message: z.string().max(1024).optional(),
  producer: z.string().min(1).max(253),
  gracePeriodSeconds: z.number().int().min(1).optional(),
  suppressDeletion: z.boolean().optional(),
  // statePreservation: the values found in the evicted cluster's status, and the placement before the eviction.
  preservedLabelState: z.record(labelKey, z.string().max(MAX_PRESERVED_VALUE, `must be at most ${MAX_PRESERVED_VALUE} characters`)).optional(),
  clustersBeforeFailover: z.array(clusterName).max(1000).optional(),
  creationTimestamp: timestamp.optional(),
});
export type GracefulEvictionTask = z.infer<typeof gracefulEvictionTaskSchema>;

export const evictionHistorySchema = strictObject({ clusterName, creationTimestamp: timestamp });
export type EvictionHistoryEntry = z.infer<typeof evictionHistorySchema>;

export const bindingSpecSchema = strictObject({
  resource: strictObject({
    apiVersion: z.string().min(1).max(253),
    kind: z.string().min(1).max(63),
    namespace: namespaceName.optional(),
    name: objectName,
    uid: z.string().max(64).optional(),
    resourceVersion: z.string().max(64).optional(),
  }),
  replicas: z.number().int().min(0).max(1_000_000).optional(),
  clusters: z
    .array(strictObject({ name: clusterName, replicas: z.number().int().min(0).optional() }))
    .max(1000)
    .optional(),
  placement: placementSchema.optional(),
  failover: failoverSchema.optional(),
  gracefulEvictionTasks: z.array(gracefulEvictionTaskSchema).max(1000).optional(),
  // Written by application failover; accepted so GET output applies again, but the stored one is kept.
  activeEvictionHistory: z.array(evictionHistorySchema).max(1000).optional(),
  // Karmada's field (set by its detector from the policy's PriorityClass): the order of the paced queue.
  schedulePriority: strictObject({
    priority: z.number().int('must be a whole number').min(-2_147_483_648).max(2_147_483_647).optional(),
    preemptionPolicy: z.enum(['Never', 'PreemptLowerPriority']).optional(),
  }).optional(),
}).superRefine((spec, ctx) =>
  flagDuplicates(
    spec.clusters,
    (c) => c.name,
    ctx,
    (i) => ['clusters', i, 'name'],
    (id, first) => `cluster "${id}" is listed twice (also at spec.clusters[${first}])`,
  ),
);
export type BindingSpec = z.infer<typeof bindingSpecSchema>;

export const resourceBindingSchema = resourceSchema('work.karmada.io/v1alpha2', 'ResourceBinding', namespacedMetadataSchema, bindingSpecSchema);
export const clusterResourceBindingSchema = resourceSchema('work.karmada.io/v1alpha2', 'ClusterResourceBinding', metadataSchema(objectName), bindingSpecSchema);
export type ResourceBindingInput = z.infer<typeof resourceBindingSchema>;
export type ClusterResourceBindingInput = z.infer<typeof clusterResourceBindingSchema>;

// ---------------------------------------------------------------------------------------------
// Workload health: POST /api/resourcebindings/{namespace}/{name}/status

/** The most a cluster's reported workload status may take, as JSON: it is stored with the binding, per cluster. */
export const MAX_WORKLOAD_STATUS_CHARS = 4096;

/** The workload's own status as collected from one cluster (Karmada's `aggregatedStatus[].status`), free-form. */
const workloadStatus = z.record(z.string(), z.unknown()).superRefine((status, ctx) => {
  const size = JSON.stringify(status).length;
  if (size > MAX_WORKLOAD_STATUS_CHARS) ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_WORKLOAD_STATUS_CHARS} characters as JSON (${size})` });
});

export const bindingStatusReportSchema = strictObject({
  aggregatedStatus: z
    .array(
      strictObject({
        clusterName,
        applied: z.boolean().optional(),
        health: z.enum(['Healthy', 'Unhealthy', 'Unknown']),
        status: workloadStatus.optional(),
      }),
    )
    .max(1000),
}).superRefine((report, ctx) =>
  flagDuplicates(
    report.aggregatedStatus,
    (s) => s.clusterName,
    ctx,
    (i) => ['aggregatedStatus', i, 'clusterName'],
    (id, first) => `cluster "${id}" is reported twice (also at aggregatedStatus[${first}])`,
  ),
);
export type BindingStatusReport = z.infer<typeof bindingStatusReportSchema>;

// ---------------------------------------------------------------------------------------------
// PropagationPolicy / ClusterPropagationPolicy (policy.karmada.io/v1alpha1)

export const resourceSelectorSchema = strictObject({
  apiVersion: z.string().min(1, 'must not be empty').max(253),
  kind: z.string().min(1, 'must not be empty').max(63),
  namespace: namespaceName.optional(),
  name: objectName.optional(),
  labelSelector: labelSelectorSchema.optional(),
}).superRefine((selector, ctx) => {
  if (selector.name && selector.labelSelector) ctx.addIssue({ code: 'custom', path: ['labelSelector'], message: 'set either name or labelSelector, not both' });
});
export type ResourceSelector = z.infer<typeof resourceSelectorSchema>;

/**
 * What bindings inherit: the placement and the failover behaviour (a binding's failover comes from the policy
 * that governs it, as in Karmada). Other Karmada fields are accepted where harmless (propagateDeps, priority,
 * schedulerName).
 */
export const propagationSpecSchema = strictObject({
  resourceSelectors: z.array(resourceSelectorSchema).min(1, 'must list at least one resource selector').max(100),
  placement: placementSchema.optional(),
  failover: failoverSchema.optional(),
  propagateDeps: z.boolean().optional(),
  priority: z.number().int('must be a whole number').min(-2_147_483_648).max(2_147_483_647).optional(),
  schedulerName: z.string().max(253).optional(),
  // Karmada's SchedulePriority: the detector gives derived bindings spec.schedulePriority.priority from the
  // named PriorityClass (scheduling.k8s.io/v1, applied as a template) when the source is KubePriorityClass.
  schedulePriority: strictObject({
    priorityClassSource: z.enum(['KubePriorityClass', 'PodPriorityClass', 'FederatedPriorityClass']),
    priorityClassName: objectName,
  }).optional(),
});
export type PropagationSpec = z.infer<typeof propagationSpecSchema>;

/** Failback (shared/failover/failback.ts): the bindings a policy governs go back home this many seconds after it is healthy again. */
export const FAILBACK_ANNOTATION = 'failover.io/failback-after-seconds';
/** The longest failback window: 30 days. */
export const MAX_FAILBACK_SECONDS = 30 * 24 * 3600;

/** Why a failback annotation value is refused (undefined when it is a whole number of seconds, at most 30 days). */
export function failbackWindowProblem(value: string): string | undefined {
  if (!/^\d{1,10}$/.test(value)) return `must be a whole number of seconds such as "600", got ${JSON.stringify(value)}`;
  if (Number(value) > MAX_FAILBACK_SECONDS) return `must be at most ${MAX_FAILBACK_SECONDS} (30 days), got "${value}"`;
  return undefined;
}

const checkFailbackAnnotation = (policy: { metadata: { annotations?: Record<string, string> } }, ctx: z.RefinementCtx) => {
  const value = policy.metadata.annotations?.[FAILBACK_ANNOTATION];
  const problem = value === undefined ? undefined : failbackWindowProblem(value);
  // One path segment, as for failover.io/mode: metadata.annotations["failover.io/failback-after-seconds"].
  if (problem) ctx.addIssue({ code: 'custom', path: ['metadata', `annotations["${FAILBACK_ANNOTATION}"]`], message: problem });
};

export const propagationPolicySchema = resourceSchema(
  'policy.karmada.io/v1alpha1',
  'PropagationPolicy',
  namespacedMetadataSchema,
  propagationSpecSchema,
).superRefine(checkFailbackAnnotation);
export const clusterPropagationPolicySchema = resourceSchema(
  'policy.karmada.io/v1alpha1',
  'ClusterPropagationPolicy',
  metadataSchema(objectName),
  propagationSpecSchema,
).superRefine(checkFailbackAnnotation);
export type PropagationPolicyInput = z.infer<typeof propagationPolicySchema>;
export type ClusterPropagationPolicyInput = z.infer<typeof clusterPropagationPolicySchema>;

// ---------------------------------------------------------------------------------------------
// Cluster failover settings that Karmada's PropagationPolicy schema cannot hold (Karmada mode)
//
// Karmada v1.18.2's `failover.cluster` declares only purgeMode (Directly, Gracefully) and statePreservation:
// its CRD refuses tolerationSeconds and gracePeriodSeconds. In Karmada mode these annotations on a
// PropagationPolicy or ClusterPropagationPolicy carry them, validated as the spec fields are, and take the
// place of the spec fields (which a real Karmada never holds). The purge mode stays in the spec.

/** failover.cluster.tolerationSeconds: how long a binding stays on a PreferNoExecute taint (whole seconds, 0 or more). */
export const CLUSTER_TOLERATION_SECONDS_ANNOTATION = 'failover.io/cluster-toleration-seconds';
/** failover.cluster.gracePeriodSeconds: with purge mode Gracefully, the old copy goes at the latest this long after the eviction (at least 1). */
export const CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION = 'failover.io/cluster-grace-period-seconds';
/**
 * Recognised so that a guess does not pass unnoticed, and refused: every cluster purge mode the app acts
 * on (Directly, Gracefully) is one Karmada's spec holds, and cluster failover has no `Never`.
 */
export const CLUSTER_PURGE_MODE_ANNOTATION = 'failover.io/cluster-purge-mode';

const MAX_INT32 = 2_147_483_647;

/** A whole number of seconds from an annotation, at least `min`; or why the value is refused. */
function annotationSeconds(value: string, min: number): { seconds: number } | { problem: string } {
  if (!/^\d{1,10}$/.test(value)) return { problem: `must be a whole number of seconds such as "300", got ${JSON.stringify(value)}` };
  const seconds = Number(value);
  if (seconds < min) return { problem: `must be at least ${min}, got "${value}"` };
  if (seconds > MAX_INT32) return { problem: `must fit in 32 bits (at most ${MAX_INT32}), got "${value}"` };
  return { seconds };
}

/** What the cluster-failover annotations of a policy set (only what is valid; see clusterFailoverAnnotationProblems). */
export interface ClusterFailoverAnnotations {
  tolerationSeconds?: number;
  gracePeriodSeconds?: number;
}

export function clusterFailoverAnnotations(annotations: Readonly<Record<string, string>> | undefined): ClusterFailoverAnnotations {
  const read = (key: string, min: number) => {
    const value = annotations?.[key];
    const parsed = value === undefined ? undefined : annotationSeconds(value, min);
    return parsed && 'seconds' in parsed ? parsed.seconds : undefined;
  };
  const tolerationSeconds = read(CLUSTER_TOLERATION_SECONDS_ANNOTATION, 0);
  const gracePeriodSeconds = read(CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION, 1);
  return { ...(tolerationSeconds !== undefined ? { tolerationSeconds } : {}), ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}) };
}

/**
 * Why a policy's cluster-failover annotations are refused, by annotation (empty: none is). They apply to
 * `spec.failover.cluster`, so it must be set; the grace period, as the spec field, only with purge mode
 * Gracefully. `purgeMode` is the spec's, as our schema reads it (aliases resolved).
 */
export function clusterFailoverAnnotationProblems(
  annotations: Readonly<Record<string, string>> | undefined,
  cluster: { purgeMode: string } | undefined,
): Array<{ annotation: string; message: string }> {
  const problems: Array<{ annotation: string; message: string }> = [];
  const check = (annotation: string, min: number, extra?: () => string | undefined) => {
    const value = annotations?.[annotation];
    if (value === undefined) return;
    const parsed = annotationSeconds(value, min);
    const message =
      'problem' in parsed
        ? parsed.problem
        : !cluster
          ? 'applies to spec.failover.cluster, which is not set (set it, e.g. "failover: {cluster: {}}"; Karmada defaults its purgeMode to Gracefully)'
          : extra?.();
    if (message) problems.push({ annotation, message });
  };
  check(CLUSTER_TOLERATION_SECONDS_ANNOTATION, 0);
  check(CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION, 1, () =>
    cluster && cluster.purgeMode !== 'Gracefully' ? `only applies with purgeMode Gracefully (Graciously); purgeMode is ${cluster.purgeMode}` : undefined,
  );
  const purgeMode = annotations?.[CLUSTER_PURGE_MODE_ANNOTATION];
  if (purgeMode !== undefined) {
    const mode = PURGE_ALIASES[purgeMode];
    problems.push({
      annotation: CLUSTER_PURGE_MODE_ANNOTATION,
      message:
        mode === 'Directly' || mode === 'Gracefully'
          ? `Karmada's schema holds this purge mode: set spec.failover.cluster.purgeMode to "${mode}" instead`
          : `cluster failover has no purge mode ${JSON.stringify(purgeMode)} (it takes "Directly" or "Gracefully", set in spec.failover.cluster.purgeMode)`,
    });
  }
  return problems;
}

/**
 * `failover` with what the annotations set in place of failover.cluster's fields (pure). Nothing without
 * failover.cluster; the grace period only with purge mode Gracefully, as the spec field.
 */
export function withClusterFailoverAnnotations<F extends { cluster?: ClusterFailover }>(
  failover: F | undefined,
  settings: ClusterFailoverAnnotations,
): F | undefined {
  const cluster = failover?.cluster;
  if (!failover || !cluster) return failover;
  const grace = cluster.purgeMode === 'Gracefully' ? settings.gracePeriodSeconds : undefined;
  if (settings.tolerationSeconds === undefined && grace === undefined) return failover;
  return {
    ...failover,
    cluster: {
      ...cluster,
      ...(settings.tolerationSeconds !== undefined ? { tolerationSeconds: settings.tolerationSeconds } : {}),
      ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// FailoverBudget (failover.io/v1alpha1): at most maxInFlight of the selected bindings in flight at once

/** `"<n>%"` with 0 < n ≤ 100 (decimals allowed): n; anything else undefined. */
export function parsePercentage(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)%$/.exec(value);
  if (!match) return undefined;
  const percent = Number(match[1]);
  return percent > 0 && percent <= 100 ? percent : undefined;
}

/** Why a maxInFlight value is refused (undefined when it is valid): the message the API returns for the field. */
export function maxInFlightProblem(value: unknown): string | undefined {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return `must be a whole number or a percentage such as "10%" (got ${value})`;
    if (value < 1) return `must be at least 1 (got ${value})`;
    if (value > 2_147_483_647) return 'must fit in 32 bits';
    return undefined;
  }
  if (typeof value === 'string') {
    const match = /^(\d+(?:\.\d+)?)%$/.exec(value);
    if (!match) return `must be a whole number or a percentage such as "10%" (got ${JSON.stringify(value)})`;
    const percent = Number(match[1]);
    if (percent > 100) return `must not be more than 100% (got ${value})`;
    if (percent <= 0) return `must be more than 0% (got ${value})`;
    return undefined;
  }
  return 'must be a whole number or a percentage such as "10%"';
}

/** A whole number (at least 1) or a percentage of the selected bindings ("10%", at most 100%). */
const maxInFlightSchema = z.unknown().transform((value, ctx): number | string => {
  const problem = value === undefined ? 'required field is missing (expected a whole number or a percentage such as "10%")' : maxInFlightProblem(value);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  return value as number | string;
});

export const failoverBudgetSpecSchema = strictObject({
  selector: labelSelectorSchema,
  maxInFlight: maxInFlightSchema,
});
export type FailoverBudgetSpec = z.infer<typeof failoverBudgetSpecSchema>;

export const failoverBudgetSchema = resourceSchema('failover.io/v1alpha1', 'FailoverBudget', namespacedMetadataSchema, failoverBudgetSpecSchema);
export type FailoverBudgetInput = z.infer<typeof failoverBudgetSchema>;

/** The kinds POST /api/apply accepts, by kind name. */
export const APPLY_KINDS = {
  Cluster: clusterSchema,
  ClusterTaintPolicy: clusterTaintPolicySchema,
  ResourceBinding: resourceBindingSchema,
  ClusterResourceBinding: clusterResourceBindingSchema,
  PropagationPolicy: propagationPolicySchema,
  ClusterPropagationPolicy: clusterPropagationPolicySchema,
  FailoverBudget: failoverBudgetSchema,
} as const;
export type ApplyKind = keyof typeof APPLY_KINDS;

// ---------------------------------------------------------------------------------------------
// What-if: POST /api/whatif

export const whatIfRequestSchema = strictObject({
  failClusters: z.array(clusterName).min(1, 'must name at least one cluster').max(1000, 'must name at most 1000 clusters'),
  /** The condition the failing clusters would report; Ready=False when absent. */
  condition: reportedConditionSchema.optional(),
});
export type WhatIfRequest = z.infer<typeof whatIfRequestSchema>;
