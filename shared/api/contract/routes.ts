import { z } from 'zod';
import { alertmanagerPayloadSchema, azureMonitorPayloadSchema } from '../alerts';
import {
  bindingSpecSchema,
  bindingStatusReportSchema,
  clusterAffinitySchema,
  clusterName,
  clusterPropagationPolicySchema,
  clusterResourceBindingSchema,
  clusterSchema,
  clusterTaintPolicySchema,
  failoverBudgetSchema,
  failoverSchema,
  gracefulEvictionTaskSchema,
  labelSelectorSchema,
  namespaceName,
  objectName,
  placementSchema,
  propagationPolicySchema,
  resourceBindingSchema,
  statusReportSchema,
  whatIfRequestSchema,
} from '../resources';
import { templateSchema } from '../templates';
import { eventQuerySchema, evictionQuerySchema, fleetHistoryQuerySchema, templateDeleteQuerySchema, templateQuerySchema } from './queries';
import * as v from './views';

/**
 * Every HTTP route under /api, as data: its path, method, parameters, body, answers and who may call it.
 * The OpenAPI document (shared/api/openapi.ts) is built from this list; the functions in functions/ serve
 * the same routes (test/e2e/contract.test.ts calls them and checks each answer against the document).
 */

/** Who may call a route (shared/http/auth.ts); none of it is checked with AUTH_MODE=none. */
export type Security = 'admin' | 'clusterSignature' | 'alertmanager' | 'azureMonitor';

export interface Route {
  method: 'get' | 'post' | 'delete';
  /** OpenAPI path under /api, with {param} segments. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  security?: Security;
  /** Path parameter rules by name (each {param} of the path must be here). */
  params?: Record<string, z.ZodType>;
  query?: z.ZodObject;
  /** The request body: a component name in REQUEST_SCHEMAS. */
  body?: keyof typeof REQUEST_SCHEMAS;
  /** The 200 answer: a component name in RESPONSE_SCHEMAS (several: any of them), or a non-JSON content. */
  ok: ResponseName | ResponseName[] | { contentTypes: string[] };
  /** Statuses whose body is not the Error body (healthz's 503 is the health itself). */
  otherBodies?: Record<number, ResponseName>;
  /** Error statuses beyond those implied (400 with parameters or a body, 401 with security, 413/415 with a body). */
  errors?: number[];
  description?: string;
}

/** A single object of POST /api/apply: one of this app's kinds, or any other Kubernetes object (a resource template). */
const applyObject = z.union([
  clusterSchema,
  clusterTaintPolicySchema,
  resourceBindingSchema,
  clusterResourceBindingSchema,
  propagationPolicySchema,
  clusterPropagationPolicySchema,
  failoverBudgetSchema,
  templateSchema,
]);

/** Request bodies, by component name. */
export const REQUEST_SCHEMAS = {
  ClusterObject: clusterSchema,
  ClusterTaintPolicyObject: clusterTaintPolicySchema,
  ResourceBindingObject: resourceBindingSchema,
  ClusterResourceBindingObject: clusterResourceBindingSchema,
  PropagationPolicyObject: propagationPolicySchema,
  ClusterPropagationPolicyObject: clusterPropagationPolicySchema,
  FailoverBudgetObject: failoverBudgetSchema,
  TemplateObject: templateSchema,
  ApplyObject: applyObject,
  ApplyRequest: z.union([applyObject, z.array(applyObject).min(1), z.looseObject({ kind: z.literal('List'), items: z.array(applyObject).min(1) })]),
  StatusReport: statusReportSchema,
  BindingStatusReport: bindingStatusReportSchema,
  WhatIfRequest: whatIfRequestSchema,
  AlertmanagerPayload: alertmanagerPayloadSchema,
  AzureMonitorPayload: azureMonitorPayloadSchema,
};

/** Response bodies, by component name (the names the clients' generated types use). */
export const RESPONSE_SCHEMAS = {
  Error: v.errorBodySchema,
  BindingRef: v.bindingRefSchema,
  Condition: v.conditionSchema,
  Metadata: v.metadataViewSchema,
  Cluster: v.clusterViewSchema,
  ClusterList: v.clusterListSchema,
  TaintPolicyListItem: v.taintPolicyListItemSchema,
  TaintPolicyList: v.taintPolicyListSchema,
  TaintPolicy: v.taintPolicyViewSchema,
  BlastRadius: v.blastRadiusSchema,
  TaintPolicyAction: v.taintPolicyActionSchema,
  AcknowledgeAnswer: v.acknowledgeAnswerSchema,
  BindingSpec: bindingSpecSchema,
  GracefulEvictionTask: gracefulEvictionTaskSchema,
  Placement: placementSchema,
  Failover: failoverSchema,
  ClusterAffinity: clusterAffinitySchema,
  LabelSelector: labelSelectorSchema,
  TaintPolicySpec: v.taintPolicySpecViewSchema,
  WorkloadStatusItem: v.workloadStatusItemSchema,
  Binding: v.bindingViewSchema,
  ResourceBindingList: v.resourceBindingListSchema,
  ClusterResourceBindingList: v.clusterResourceBindingListSchema,
  BindingStatusAnswer: v.bindingStatusAnswerSchema,
  PropagationPolicy: v.propagationPolicyViewSchema,
  PropagationPolicyList: v.propagationPolicyListSchema,
  ClusterPropagationPolicyList: v.clusterPropagationPolicyListSchema,
  Budget: v.budgetViewSchema,
  BudgetList: v.budgetListSchema,
  Template: v.templateViewSchema,
  TemplateList: v.templateListSchema,
  DeleteAnswer: v.deleteAnswerSchema,
  ApplyAnswer: v.applyAnswerSchema,
  ApplyOperation: v.applyOperationSchema,
  Event: v.eventViewSchema,
  EventList: v.eventListSchema,
  Eviction: v.evictionViewSchema,
  EvictionList: v.evictionListSchema,
  QueueSummaryEntry: v.queueSummaryEntrySchema,
  QueueSummary: v.queueSummarySchema,
  Health: v.healthzAnswerSchema,
  Fleet: v.fleetAnswerSchema,
  FleetHistory: v.fleetHistorySchema,
  SwitchAnswer: v.switchAnswerSchema,
  DrainAnswer: v.drainAnswerSchema,
  UncordonAnswer: v.uncordonAnswerSchema,
  AlertAnswer: v.alertAnswerSchema,
  WhatIfAnswer: v.whatIfAnswerSchema,
  FailbackItem: v.failbackItemSchema,
  FailbackAnswer: v.failbackAnswerSchema,
  WhyAnswer: v.whyAnswerSchema,
  OpenApiDocument: z.looseObject({ openapi: z.string() }),
};

export type ResponseName = keyof typeof RESPONSE_SCHEMAS;

const name = { name: objectName };
const namespaced = { namespace: namespaceName, name: objectName };

/** The GET, GET one and DELETE routes of a kind with `/{name}` (cluster-scoped) or `/{namespace}/{name}`. */
function collection(base: string, tag: string, kind: string, plural: string, list: ResponseName, one: ResponseName, scoped: 'cluster' | 'namespaced'): Route[] {
  if (scoped === 'cluster') {
    return [
      { method: 'get', path: `/${base}`, operationId: `list${plural}`, summary: `every ${kind}`, tag, ok: list },
      { method: 'get', path: `/${base}/{name}`, operationId: `get${kind}`, summary: `one ${kind}`, tag, params: name, ok: one },
      {
        method: 'delete',
        path: `/${base}/{name}`,
        operationId: `delete${kind}`,
        summary: `delete ${kind === 'Cluster' ? 'a' : 'one'} ${kind}`,
        tag,
        security: 'admin',
        params: name,
        ok: 'DeleteAnswer',
        errors: [409],
      },
    ];
  }
  return [
    { method: 'get', path: `/${base}`, operationId: `list${plural}`, summary: `every ${kind}`, tag, ok: list },
    {
      method: 'get',
      path: `/${base}/{namespace}`,
      operationId: `list${plural}InNamespace`,
      summary: `the ${plural} of a namespace`,
      tag,
      params: { namespace: namespaceName },
      ok: list,
    },
    { method: 'get', path: `/${base}/{namespace}/{name}`, operationId: `get${kind}`, summary: `one ${kind}`, tag, params: namespaced, ok: one },
    {
      method: 'delete',
      path: `/${base}/{namespace}/{name}`,
      operationId: `delete${kind}`,
      summary: `delete one ${kind}`,
      tag,
      security: 'admin',
      params: namespaced,
      ok: 'DeleteAnswer',
      errors: [409],
      ...(kind === 'FailoverBudget' ? { description: 'In Karmada mode budgets are custom resources of the Karmada API server: 409.' } : {}),
    },
  ];
}

export const ROUTES: Route[] = [
  {
    method: 'post',
    path: '/apply',
    operationId: 'apply',
    summary: 'create or update objects and resource templates; all are validated first and nothing is stored if any is invalid',
    tag: 'objects',
    security: 'admin',
    body: 'ApplyRequest',
    ok: 'ApplyAnswer',
    otherBodies: { 202: 'ApplyOperation' },
    errors: [409],
    description:
      'A request of more than APPLY_INLINE_MAX_OBJECTS objects (or one sent with `Prefer: respond-async`) is validated, stored and answered 202 with the operation (Location: its status); its objects are applied in the background, in order, a chunk at a time.',
  },
  {
    method: 'get',
    path: '/apply/operations/{name}',
    operationId: 'getApplyOperation',
    summary: 'a background apply: its state, how many objects are applied, and once finished the results',
    tag: 'objects',
    params: name,
    ok: 'ApplyOperation',
    errors: [404],
  },
  ...collection('clusters', 'clusters', 'Cluster', 'Clusters', 'ClusterList', 'Cluster', 'cluster'),
  {
    method: 'post',
    path: '/clusters/{name}/status',
    operationId: 'reportClusterStatus',
    summary: 'a health report, signed by the cluster it is about; answers the Cluster',
    tag: 'clusters',
    security: 'clusterSignature',
    params: { name: clusterName },
    body: 'StatusReport',
    ok: 'Cluster',
    errors: [403, 404, 409],
    description: 'A report older than the newest one applied for that cluster, or the same one again, is 409; a reporter signing for another cluster is 403.',
  },
  {
    method: 'post',
    path: '/clusters/{name}/drain',
    operationId: 'drainCluster',
    summary: 'cordon a cluster and move every binding off it at the global rate',
    tag: 'clusters',
    security: 'admin',
    params: name,
    ok: 'DrainAnswer',
    errors: [404, 409],
  },
  {
    method: 'post',
    path: '/clusters/{name}/uncordon',
    operationId: 'uncordonCluster',
    summary: 'end a drain: remove its cordon and abandon its waiting evictions',
    tag: 'clusters',
    security: 'admin',
    params: name,
    ok: 'UncordonAnswer',
    errors: [404, 409],
  },
  ...collection('clustertaintpolicies', 'policies', 'ClusterTaintPolicy', 'ClusterTaintPolicies', 'TaintPolicyList', 'TaintPolicy', 'cluster'),
  {
    method: 'post',
    path: '/clustertaintpolicies/{name}/acknowledge',
    operationId: 'acknowledgeClusterTaintPolicy',
    summary: "accept the policy's exceeded blast radius (idempotent)",
    tag: 'policies',
    security: 'admin',
    params: name,
    ok: 'AcknowledgeAnswer',
    errors: [404, 409],
  },
  ...collection('resourcebindings', 'bindings', 'ResourceBinding', 'ResourceBindings', 'ResourceBindingList', 'Binding', 'namespaced'),
  ...collection('clusterresourcebindings', 'bindings', 'ClusterResourceBinding', 'ClusterResourceBindings', 'ClusterResourceBindingList', 'Binding', 'cluster'),
  ...(['ResourceBinding', 'ClusterResourceBinding'] as const).flatMap((kind): Route[] => {
    const base = kind === 'ResourceBinding' ? '/resourcebindings/{namespace}/{name}' : '/clusterresourcebindings/{name}';
    const params = kind === 'ResourceBinding' ? namespaced : name;
    return [
      {
        method: 'post',
        path: `${base}/status`,
        operationId: `report${kind}Status`,
        summary: 'workload health per cluster; clusters not in the report keep their entry',
        description: 'Each clusterName appears at most once in aggregatedStatus: a repeat is a 400 naming it.',
        tag: 'bindings',
        security: 'admin',
        params,
        body: 'BindingStatusReport',
        ok: 'BindingStatusAnswer',
        errors: [404, 409],
      },
      {
        method: 'delete',
        path: `${base}/evictiontasks/{cluster}`,
        operationId: `confirm${kind}EvictionTask`,
        summary: 'confirm the old copy on the cluster is dealt with: clears its graceful-eviction task; answers the binding',
        tag: 'bindings',
        security: 'admin',
        params: { ...params, cluster: clusterName },
        ok: 'Binding',
        errors: [404, 409],
      },
      {
        method: 'get',
        path: `${base}/why`,
        operationId: `why${kind}`,
        summary: 'why a binding is where it is: placement, tasks, its ledger rows, its events, one sentence per decision',
        tag: 'bindings',
        params,
        ok: 'WhyAnswer',
        errors: [404],
      },
    ];
  }),
  ...collection('propagationpolicies', 'policies', 'PropagationPolicy', 'PropagationPolicies', 'PropagationPolicyList', 'PropagationPolicy', 'namespaced'),
  ...collection(
    'clusterpropagationpolicies',
    'policies',
    'ClusterPropagationPolicy',
    'ClusterPropagationPolicies',
    'ClusterPropagationPolicyList',
    'PropagationPolicy',
    'cluster',
  ),
  ...collection('failoverbudgets', 'budgets', 'FailoverBudget', 'FailoverBudgets', 'BudgetList', 'Budget', 'namespaced'),
  {
    method: 'get',
    path: '/templates',
    operationId: 'listTemplates',
    summary: 'resource templates: all, filtered, or one (a Template, not a list) when apiVersion, kind and name are given',
    tag: 'objects',
    query: templateQuerySchema,
    ok: ['TemplateList', 'Template'],
    errors: [404],
    description: 'With apiVersion, kind and name the answer is the one template (the Template schema) or 404.',
  },
  {
    method: 'delete',
    path: '/templates',
    operationId: 'deleteTemplate',
    summary: 'delete a template (apiVersion, kind and name required) and the binding it derived',
    tag: 'objects',
    security: 'admin',
    query: templateDeleteQuerySchema,
    ok: 'DeleteAnswer',
    errors: [404, 409],
  },
  {
    method: 'get',
    path: '/events',
    operationId: 'listEvents',
    summary: 'recorded decisions, oldest first (the newest `limit`)',
    tag: 'fleet',
    query: eventQuerySchema,
    ok: 'EventList',
  },
  {
    method: 'get',
    path: '/fleet',
    operationId: 'getFleet',
    summary: 'fleet health, the eviction tier and rate, the switches, and the waiting ledger rows',
    tag: 'fleet',
    ok: 'Fleet',
  },
  {
    method: 'get',
    path: '/fleet/history',
    operationId: 'getFleetHistory',
    summary: 'evictions per second and the tier, in 10 s buckets',
    tag: 'fleet',
    query: fleetHistoryQuerySchema,
    ok: 'FleetHistory',
  },
  {
    method: 'get',
    path: '/evictions',
    operationId: 'listEvictions',
    summary: 'the eviction ledger',
    tag: 'fleet',
    query: evictionQuerySchema,
    ok: 'EvictionList',
  },
  {
    method: 'get',
    path: '/evictions/summary',
    operationId: 'getEvictionSummary',
    summary: 'the eviction queue per faulty or drained cluster, with ETAs',
    tag: 'fleet',
    ok: 'QueueSummary',
  },
  ...(['pause', 'resume'] as const).map((action): Route => ({
    method: 'post',
    path: `/failover/${action}`,
    operationId: `${action}Failover`,
    summary: action === 'pause' ? 'stop evictions within seconds, without a restart' : 'restart evictions',
    tag: 'fleet',
    security: 'admin',
    ok: 'SwitchAnswer',
    errors: [409],
  })),
  {
    method: 'post',
    path: '/whatif',
    operationId: 'whatIf',
    summary: 'what a failure of failClusters would do; writes nothing (no token: a read)',
    description: 'failClusters must name known clusters: an unknown one is a 400 naming it, and nothing is simulated.',
    tag: 'fleet',
    body: 'WhatIfRequest',
    ok: 'WhatIfAnswer',
  },
  {
    method: 'get',
    path: '/failback',
    operationId: 'listFailback',
    summary: 'bindings with a home to go back to (or that went back within the hour)',
    tag: 'fleet',
    ok: 'FailbackAnswer',
  },
  {
    method: 'post',
    path: '/webhooks/alertmanager',
    operationId: 'alertmanagerWebhook',
    summary: 'Prometheus Alertmanager webhook (payload version 4)',
    tag: 'webhooks',
    security: 'alertmanager',
    body: 'AlertmanagerPayload',
    ok: 'AlertAnswer',
    errors: [409],
  },
  {
    method: 'post',
    path: '/webhooks/azure-monitor',
    operationId: 'azureMonitorWebhook',
    summary: 'Azure Monitor action group webhook (common alert schema)',
    tag: 'webhooks',
    security: 'azureMonitor',
    body: 'AzureMonitorPayload',
    ok: 'AlertAnswer',
    errors: [409],
  },
  {
    method: 'get',
    path: '/healthz',
    operationId: 'healthz',
    summary: 'the app is up; in Karmada mode 503 (the same body, status degraded) while the Karmada API server cannot be used',
    tag: 'service',
    ok: 'Health',
    otherBodies: { 503: 'Health' },
  },
  { method: 'get', path: '/openapi.json', operationId: 'openapi', summary: 'this document', tag: 'service', ok: 'OpenApiDocument' },
  {
    method: 'get',
    path: '/console/',
    operationId: 'console',
    summary: 'the operator console',
    tag: 'service',
    ok: { contentTypes: ['text/html'] },
    errors: [404],
  },
  {
    method: 'get',
    path: '/console/{file}',
    operationId: 'consoleFile',
    summary: "a file of the console's bundle",
    tag: 'service',
    params: { file: z.string() },
    ok: { contentTypes: ['text/html', 'text/javascript', 'text/css'] },
    errors: [404],
  },
];
