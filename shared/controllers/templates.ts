import { randomUUID } from 'node:crypto';
import type { TemplateView } from '../api/contract/views';
import type { TemplateInput } from '../api/templates';
import { RecentCache } from '../cache';
import { distinctBatches, mapConcurrent } from '../concurrency';
import { bindingKey } from '../failover/bindingModel';
import { POLICY_LABELS, policyDisplay, policyKey, PolicyRef, PropagationCandidate, rankPolicies } from '../failover/propagation';
import {
  derivedBindingRef,
  isPriorityClass,
  priorityClassOf,
  priorityClassValue,
  templateKey,
  templateNamespace,
  TemplateRef,
  templateReplicas,
} from '../failover/templates';
import { keep, mutate, write } from '../store/optimistic';
import { type BatchDocumentStore, canWriteMany, type DocumentStore, type EventRecord, listByPrefix, type Versioned } from '../store/ports';
import type { BindingRecord, TemplateRecord } from '../store/records';
import { appendEvents, applyDerivedBindings, STORED_SHARE_TO_READ } from './bindingBatch';
import { applyDerivedBinding, deleteBinding, DerivedBindingInput } from './bindings';
import type { ControlPlane } from './ports';
import type { ApplyAction } from './state/derivation';
import { templateEvent } from './state/events';
import { loadPropagationPolicies } from './state/reads';
import { templateView } from './views';

/**
 * Resource templates and the detector (Karmada's `ResourceDetector`): a template is claimed by the
 * PropagationPolicy of its namespace, else a ClusterPropagationPolicy, that ranks first (explicit priority,
 * then name match over label match over kind match, then name), is labelled with it, and derives the
 * binding Karmada would create. Every template, policy or priority change derives again.
 */

const CLAIM_LABELS: readonly string[] = Object.values(POLICY_LABELS);
/** The template's own labels, without the claim the detector writes. */
const userLabels = (labels: Record<string, string>) => Object.fromEntries(Object.entries(labels).filter(([key]) => !CLAIM_LABELS.includes(key)));
const claimLabels = (claim: PolicyRef | undefined): Record<string, string> =>
  !claim
    ? {}
    : claim.kind === 'PropagationPolicy'
      ? { [POLICY_LABELS.name]: claim.name, [POLICY_LABELS.namespace]: claim.namespace ?? 'default' }
      : { [POLICY_LABELS.clusterName]: claim.name };

const refOf = (record: Pick<TemplateRecord, 'apiVersion' | 'kind' | 'namespace' | 'name'>): TemplateRef => ({
  apiVersion: record.apiVersion,
  kind: record.kind,
  ...(record.namespace !== undefined ? { namespace: record.namespace } : {}),
  name: record.name,
});
const display = (ref: TemplateRef) => (ref.namespace !== undefined ? `${ref.namespace}/${ref.name}` : ref.name);

/** Read-only metadata is the server's: dropped from what is stored, as the API server does on apply. */
function manifestOf(input: TemplateInput, namespace: string | undefined): Record<string, unknown> {
  const {
    uid: _uid,
    resourceVersion: _rv,
    generation: _generation,
    creationTimestamp: _created,
    managedFields: _managed,
    ...metadata
  } = input.metadata as Record<string, unknown>;
  const { status: _status, ...rest } = input as Record<string, unknown>;
  return { ...rest, metadata: { ...metadata, ...(namespace !== undefined ? { namespace } : {}) } };
}

const userView = (record: TemplateRecord) =>
  JSON.stringify({
    labels: userLabels(record.labels),
    manifest: { ...record.manifest, metadata: { ...(record.manifest.metadata as object), labels: undefined } },
  });

/** The policy that claims a template now (Karmada's ranking), and the claim to record. */
function claimOf(template: Pick<TemplateRecord, 'apiVersion' | 'kind' | 'namespace' | 'name' | 'labels'>, candidates: readonly PropagationCandidate[]) {
  const ref = refOf(template);
  const resource = { apiVersion: ref.apiVersion, kind: ref.kind, ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}), name: ref.name };
  const policy = rankPolicies({ namespace: ref.namespace, labels: userLabels(template.labels), resource }, candidates)[0];
  const claim: PolicyRef | undefined = policy
    ? { kind: policy.kind, ...(policy.namespace ? { namespace: policy.namespace } : {}), name: policy.name }
    : undefined;
  return { ref, resource, policy, claim };
}

const sameClaim = (a: PolicyRef | undefined, b: PolicyRef | undefined) => (a ? policyKey(a) : '') === (b ? policyKey(b) : '');

/**
 * A new template's one event: a first claim is not a change of claim, so the Created event names it (no
 * Claimed event beside it: an event less for each template of a bulk import). Claimed and Unclaimed say
 * that a stored template's claim changed.
 */
function createdEvent(record: TemplateRecord, now: Date): EventRecord {
  const ref = refOf(record);
  const message = `${ref.kind} created${record.claimedBy ? `, ${claimMessage(record.claimedBy, undefined)}` : ''}`;
  return templateEvent(ref.kind, display(ref), now, 'Created', message);
}

function claimMessage(claim: PolicyRef | undefined, before: PolicyRef | undefined): string {
  return claim
    ? `claimed by ${policyDisplay(claim)}${before ? ` (was ${policyDisplay(before)})` : ''}`
    : `no propagation policy matches any more (was ${policyDisplay(before!)}); its binding keeps its placement`;
}

/** PriorityClass values by name, as this process read them in the last second (a re-derivation of many templates reads each once). */
const priorityClasses = new RecentCache<number | null>('priorityClasses', 1000);

/**
 * The derived binding's `spec.schedulePriority`, as Karmada's detector sets it: the `value` of the
 * PriorityClass the claiming policy names with `priorityClassSource: KubePriorityClass` (applied through
 * /api/apply, stored as a template). None when the policy names none, or the class is not there (a warning
 * says so; applying the class derives the policy's templates again).
 */
async function schedulePriorityOf(plane: ControlPlane, claim: PolicyRef, candidates: PropagationCandidate[]): Promise<{ priority: number } | undefined> {
  const policy = candidates.find((c) => policyKey(c) === policyKey(claim));
  const ref = priorityClassOf(policy?.spec.schedulePriority);
  if (!ref) return undefined;
  const value = await priorityClasses.get(
    plane,
    async () => {
      const entry = await plane.templates.get(templateKey(ref));
      return (entry && priorityClassValue(entry.value.manifest)) ?? null;
    },
    { key: ref.name },
  );
  if (value === null) {
    plane.log.warn('PriorityClass not found: the binding gets no schedulePriority', { policy: policyDisplay(claim), priorityClass: ref.name });
    return undefined;
  }
  return { priority: value };
}

/** After a PriorityClass changed: the templates claimed by the policies that name it are derived again. */
async function priorityClassChanged(plane: ControlPlane, name: string): Promise<void> {
  priorityClasses.forget(plane, name);
  const candidates = await loadPropagationPolicies(plane);
  const naming = new Set(candidates.filter((c) => priorityClassOf(c.spec.schedulePriority)?.name === name).map((c) => policyKey(c)));
  if (naming.size === 0) return;
  const claimed = (await plane.templates.list()).filter((t) => t.value.claimedBy !== undefined && naming.has(policyKey(t.value.claimedBy)));
  await mapConcurrent(claimed, 16, (entry) => deriveStored(plane, entry, entry.id, candidates));
}

/** The binding a claimed template derives (its resource, replicas, the policy's labels and priority). */
async function derivedInputOf(
  plane: ControlPlane,
  template: TemplateRecord,
  claim: PolicyRef,
  candidates: PropagationCandidate[],
): Promise<DerivedBindingInput> {
  const ref = refOf(template);
  const replicas = templateReplicas(ref.apiVersion, ref.kind, template.manifest);
  const schedulePriority = await schedulePriorityOf(plane, claim, candidates);
  return {
    ref: derivedBindingRef(ref),
    labels: claimLabels(claim),
    resource: {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}),
      name: ref.name,
      uid: template.uid,
      resourceVersion: template.resourceVersion,
    },
    ...(replicas !== undefined ? { replicas } : {}),
    ...(schedulePriority ? { schedulePriority } : {}),
  };
}

/** Creates or updates the binding a claimed template derives. */
async function deriveBinding(plane: ControlPlane, template: TemplateRecord, claim: PolicyRef, candidates: PropagationCandidate[]): Promise<void> {
  await applyDerivedBinding(plane, await derivedInputOf(plane, template, claim, candidates), candidates);
}

/**
 * A template as first stored, before any policy claims it (the claim adds a label or two). Also what
 * apply measures to refuse a template too large to store before anything is written.
 */
export function newTemplateRecord(input: TemplateInput, now: Date): TemplateRecord {
  const namespace = templateNamespace(input.kind, input.metadata.namespace);
  const ref: TemplateRef = { apiVersion: input.apiVersion, kind: input.kind, ...(namespace !== undefined ? { namespace } : {}), name: input.metadata.name };
  return {
    ...ref,
    uid: randomUUID(),
    createdAt: now.toISOString(),
    generation: 1,
    labels: input.metadata.labels ?? {},
    annotations: input.metadata.annotations ?? {},
    manifest: manifestOf(input, namespace),
    resourceVersion: '1',
  };
}

/**
 * Applies a template: stored with the claim of the policy that ranks first (one write), one event, then
 * its binding derived.
 */
export async function applyTemplate(plane: ControlPlane, input: TemplateInput): Promise<ApplyAction> {
  const namespace = templateNamespace(input.kind, input.metadata.namespace);
  const ref: TemplateRef = { apiVersion: input.apiVersion, kind: input.kind, ...(namespace !== undefined ? { namespace } : {}), name: input.metadata.name };
  const key = templateKey(ref);
  const manifest = manifestOf(input, namespace);
  const candidates = await loadPropagationPolicies(plane);
  let before: PolicyRef | undefined;
  const { result: written } = await mutate<TemplateRecord, { action: ApplyAction; record?: TemplateRecord }>(plane.templates, key, (current) => {
    before = current?.value.claimedBy;
    const next: TemplateRecord = current ? { ...current.value } : newTemplateRecord(input, plane.clock.now());
    next.labels = input.metadata.labels ?? {};
    next.annotations = input.metadata.annotations ?? {};
    next.manifest = manifest;
    const { claim } = claimOf(next, candidates);
    next.labels = { ...next.labels, ...claimLabels(claim) };
    if (claim) next.claimedBy = claim;
    else delete next.claimedBy;
    if (!current) return write(next, { action: 'created', record: next });
    const changed = userView(current.value) !== userView(next);
    if (!changed && sameClaim(current.value.claimedBy, claim)) return keep({ action: 'unchanged' });
    if (changed) {
      next.generation += 1;
      next.resourceVersion = String(Number(current.value.resourceVersion) + 1);
    }
    return write(next, { action: changed ? 'configured' : 'unchanged', record: next });
  });
  const { action: result, record } = written;
  if (!record) return result;
  const now = plane.clock.now();
  // A Secret's data never reaches an event or a log: only its kind and name.
  if (result === 'created') {
    await plane.events.append([createdEvent(record, now)]);
  } else {
    const events = result === 'configured' ? [templateEvent(ref.kind, display(ref), now, 'Configured', `${ref.kind} configured`)] : [];
    if (!sameClaim(before, record.claimedBy) && (record.claimedBy || before))
      events.push(templateEvent(ref.kind, display(ref), now, record.claimedBy ? 'Claimed' : 'Unclaimed', claimMessage(record.claimedBy, before)));
    if (events.length > 0) await plane.events.append(events);
  }
  if (record.claimedBy) await deriveBinding(plane, record, record.claimedBy, candidates);
  if (result !== 'unchanged' && isPriorityClass(ref)) await priorityClassChanged(plane, ref.name);
  return result;
}

/**
 * A request's resource templates, applied as `applyTemplate` applies each (same records, claims, events and
 * bindings), in a few requests per hundred templates: a batch is created in table transactions without a
 * read, its events appended together and its bindings derived together (`applyDerivedBindings`). A
 * template found stored is applied alone, from a read; once a batch finds many stored, the rest are. A
 * PriorityClass is applied alone (it derives again what its policies claim). Results in the order given.
 */
export async function applyTemplates(plane: ControlPlane, inputs: TemplateInput[]): Promise<ApplyAction[]> {
  const actions = new Array<ApplyAction>(inputs.length);
  const alone = (indexes: number[]) =>
    mapConcurrent(indexes, TEMPLATE_CONCURRENCY, async (i) => {
      actions[i] = await applyTemplate(plane, inputs[i]);
    });
  const store = plane.templates;
  if (!canWriteMany(store)) {
    await alone(inputs.map((_, i) => i));
    return actions;
  }
  let creating = true;
  const keyOf = (i: number) =>
    templateKey(refOf({ ...inputs[i], namespace: templateNamespace(inputs[i].kind, inputs[i].metadata.namespace), name: inputs[i].metadata.name }));
  for (const batch of distinctBatches(
    inputs.map((_, i) => i),
    TEMPLATE_BATCH_SIZE,
    keyOf,
  )) {
    if (!creating) {
      await alone(batch);
      continue;
    }
    const candidates = await loadPropagationPolicies(plane);
    const now = plane.clock.now();
    const fresh = batch.filter((i) => !isPriorityClass(inputs[i]));
    const records = fresh.map((i) => {
      const record = newTemplateRecord(inputs[i], now);
      const { claim } = claimOf(record, candidates);
      record.labels = { ...record.labels, ...claimLabels(claim) };
      if (claim) record.claimedBy = claim;
      return record;
    });
    const etags = await store.writeMany(records.map((record) => ({ id: templateKey(refOf(record)), value: record })));
    const created = records.filter((_, k) => etags[k] !== undefined);
    fresh.forEach((i, k) => etags[k] !== undefined && (actions[i] = 'created'));
    await appendEvents(
      plane,
      created.map((record) => createdEvent(record, now)),
    );
    const claimed = created.filter((record) => record.claimedBy);
    const derived = await Promise.all(claimed.map((record) => derivedInputOf(plane, record, record.claimedBy!, candidates)));
    await applyDerivedBindings(plane, derived, candidates);
    const left = batch.filter((i) => actions[i] === undefined);
    await alone(left);
    if (left.length > batch.length * STORED_SHARE_TO_READ) creating = false;
  }
  return actions;
}

/** Templates applied together at most this many at a time (what a batch holds in memory). */
const TEMPLATE_BATCH_SIZE = 500;
/** Templates applied alone at once. */
const TEMPLATE_CONCURRENCY = 16;

/**
 * The detector for one stored template: claims it for the policy that ranks first (labels it), and creates
 * or updates its binding. Without a matching policy the template is unclaimed and its binding, if any, is
 * left as it is (it keeps running where it runs; an event says so).
 */
async function deriveStored(
  plane: ControlPlane,
  entry: { value: TemplateRecord; etag: string },
  key: string,
  candidates: PropagationCandidate[],
): Promise<'claimed' | 'unclaimed'> {
  const template = entry.value;
  const { ref, claim } = claimOf(template, candidates);
  let current = template;
  if (!sameClaim(claim, template.claimedBy)) {
    const { result: stored } = await mutate<TemplateRecord, TemplateRecord | undefined>(
      plane.templates,
      key,
      (latest) => {
        if (!latest) return keep(undefined);
        const next = withClaim(latest.value, claim);
        return write(next, next);
      },
      entry,
    );
    if (!stored) return 'unclaimed';
    current = stored;
    await plane.events.append([
      templateEvent(ref.kind, display(ref), plane.clock.now(), claim ? 'Claimed' : 'Unclaimed', claimMessage(claim, template.claimedBy)),
    ]);
  }
  if (!claim) return 'unclaimed';
  await deriveBinding(plane, current, claim, candidates);
  return 'claimed';
}

/**
 * After a policy is applied, changed or deleted: the templates under `prefixes` (what the policy's versions
 * can select: derivationScope), or every template, derived again under the new policies. Answers how many of
 * them each policy (by policyKey) now claims.
 */
export async function rederiveTemplates(plane: ControlPlane, prefixes?: readonly string[]): Promise<Map<string, number>> {
  const policies = await loadPropagationPolicies(plane, 0);
  const templates = prefixes ? await listByPrefixes(plane.templates, prefixes) : await plane.templates.list();
  const claims = templates.map((entry) => claimOf(entry.value, policies).claim);
  const store = plane.templates;
  if (canWriteMany(store)) {
    const listed = await bindingsListedFor(plane, templates);
    for (let start = 0; start < templates.length; start += TEMPLATE_BATCH_SIZE)
      await rederiveBatch(
        plane,
        store,
        templates.slice(start, start + TEMPLATE_BATCH_SIZE),
        claims.slice(start, start + TEMPLATE_BATCH_SIZE),
        policies,
        listed,
      );
  } else await mapConcurrent(templates, TEMPLATE_CONCURRENCY, (entry) => deriveStored(plane, entry, entry.id, policies));
  const counts = new Map<string, number>();
  for (const claim of claims) if (claim) counts.set(policyKey(claim), (counts.get(policyKey(claim)) ?? 0) + 1);
  return counts;
}

/** Templates per namespace listed below which their bindings are read one by one instead (a listing is a query, paged). */
const TEMPLATES_PER_LISTING_QUERY = 8;

/**
 * The bindings of these templates' namespaces, listed, when that takes fewer requests than a point read each
 * (a few namespaces of many templates, as a policy over a large namespace has); otherwise none.
 */
async function bindingsListedFor(plane: ControlPlane, templates: ReadonlyArray<{ value: TemplateRecord }>) {
  const prefixes = [...new Set(templates.map(({ value }) => (value.namespace !== undefined ? `rb:${value.namespace}:` : 'crb:')))];
  if (!plane.bindings.listPrefix || templates.length < prefixes.length * TEMPLATES_PER_LISTING_QUERY) return undefined;
  const listed = await listByPrefixes(plane.bindings, prefixes);
  return new Map(listed.map((entry) => [entry.id, entry]));
}

/** A template's record with `claim` (its labels and claimedBy), or unclaimed. */
function withClaim(record: TemplateRecord, claim: PolicyRef | undefined): TemplateRecord {
  const next = { ...record, labels: { ...userLabels(record.labels), ...claimLabels(claim) } };
  if (claim) next.claimedBy = claim;
  else delete next.claimedBy;
  return next;
}

/**
 * Stored templates derived again together, as `deriveStored` derives each: the claims that changed are
 * written in table transactions with their ETags and their events appended together, then the bindings of
 * the claimed ones derived together from a read of each. A template changed since it was listed is
 * derived alone from a fresh read.
 */
async function rederiveBatch(
  plane: ControlPlane,
  store: BatchDocumentStore<TemplateRecord>,
  entries: Array<Versioned<TemplateRecord> & { id: string }>,
  claims: Array<PolicyRef | undefined>,
  policies: PropagationCandidate[],
  listed: ReadonlyMap<string, Versioned<BindingRecord>> | undefined,
): Promise<void> {
  const changed = entries.flatMap((entry, k) => (sameClaim(claims[k], entry.value.claimedBy) ? [] : [k]));
  const etags = await store.writeMany(changed.map((k) => ({ id: entries[k].id, value: withClaim(entries[k].value, claims[k]), etag: entries[k].etag })));
  const lost = new Set(changed.filter((_, n) => etags[n] === undefined));
  const now = plane.clock.now();
  const events = changed
    .filter((k) => !lost.has(k))
    .map((k) => {
      const ref = refOf(entries[k].value);
      return templateEvent(ref.kind, display(ref), now, claims[k] ? 'Claimed' : 'Unclaimed', claimMessage(claims[k], entries[k].value.claimedBy));
    });
  await appendEvents(plane, events);
  const claimed = entries.flatMap((entry, k) => (claims[k] && !lost.has(k) ? [{ record: entry.value, claim: claims[k] }] : []));
  const derived = await Promise.all(claimed.map(({ record, claim }) => derivedInputOf(plane, record, claim, policies)));
  await applyDerivedBindings(plane, derived, policies, { stored: true, listed });
  await mapConcurrent([...lost], TEMPLATE_CONCURRENCY, async (k) => {
    const fresh = await store.get(entries[k].id);
    if (fresh) await deriveStored(plane, fresh, entries[k].id, policies);
  });
}

/** The documents under any of `prefixes` (which cover none of each other), each once. */
export async function listByPrefixes<T>(store: DocumentStore<T>, prefixes: readonly string[], where?: (value: T) => boolean) {
  return (await Promise.all(prefixes.map((prefix) => listByPrefix(store, prefix, where)))).flat();
}

/** Deletes a template and the binding it derived (its waiting evictions end abandoned, with the reason). */
export async function deleteTemplate(plane: ControlPlane, ref: TemplateRef): Promise<boolean> {
  const namespace = templateNamespace(ref.kind, ref.namespace);
  const full: TemplateRef = { ...ref, ...(namespace !== undefined ? { namespace } : {}) };
  if (namespace === undefined) delete full.namespace;
  const deleted = await plane.templates.delete(templateKey(full));
  if (!deleted) return false;
  await plane.events.append([templateEvent(full.kind, display(full), plane.clock.now(), 'Deleted', `${full.kind} deleted; its binding is deleted with it`)]);
  const bindingRef = derivedBindingRef(full);
  const binding = await plane.bindings.get(bindingKey(bindingRef));
  const resource = binding?.value.spec.resource;
  // Only the binding derived from this template (a hand-written binding of the same name stays).
  if (
    resource &&
    resource.apiVersion === full.apiVersion &&
    resource.kind === full.kind &&
    resource.name === full.name &&
    (resource.namespace ?? undefined) === full.namespace
  ) {
    await deleteBinding(plane, bindingRef, `its resource template ${full.kind} ${display(full)} was deleted`);
  }
  return true;
}

export async function listTemplates(plane: ControlPlane, filter: { apiVersion?: string; kind?: string; namespace?: string } = {}): Promise<TemplateView[]> {
  return (await plane.templates.list())
    .map((entry) => entry.value)
    .filter(
      (t) =>
        (!filter.apiVersion || t.apiVersion === filter.apiVersion) &&
        (!filter.kind || t.kind === filter.kind) &&
        (!filter.namespace || t.namespace === filter.namespace),
    )
    .map(templateView);
}

export async function getTemplate(plane: ControlPlane, ref: TemplateRef): Promise<TemplateView | undefined> {
  const namespace = templateNamespace(ref.kind, ref.namespace);
  const entry = await plane.templates.get(templateKey({ ...ref, ...(namespace !== undefined ? { namespace } : { namespace: undefined }) }));
  return entry ? templateView(entry.value) : undefined;
}
