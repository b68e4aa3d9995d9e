import { randomUUID } from 'node:crypto';
import type { TemplateInput } from '../api/templates';
import { bindingKey } from '../failover/bindingModel';
import { POLICY_LABELS, policyDisplay, PolicyRef, policyKey, PropagationCandidate, rankPolicies } from '../failover/propagation';
import { derivedBindingRef, TemplateRef, templateKey, templateNamespace, templateReplicas } from '../failover/templates';
import { keep, mutate, write } from '../store/optimistic';
import { applyDerivedBinding, deleteBinding } from './bindings';
import type { ControlPlane } from './ports';
import type { TemplateRecord } from './records';
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

export async function applyTemplate(plane: ControlPlane, input: TemplateInput): Promise<ApplyAction> {
  const namespace = templateNamespace(input.kind, input.metadata.namespace);
  const ref: TemplateRef = { apiVersion: input.apiVersion, kind: input.kind, ...(namespace !== undefined ? { namespace } : {}), name: input.metadata.name };
  const key = templateKey(ref);
  const manifest = manifestOf(input, namespace);
  const { result } = await mutate<TemplateRecord, ApplyAction>(plane.templates, key, (current) => {
    const now = plane.clock.now().toISOString();
    const claim = current?.value.claimedBy;
    const next: TemplateRecord = current
      ? { ...current.value }
      : { ...ref, uid: randomUUID(), createdAt: now, generation: 1, labels: {}, annotations: {}, manifest, resourceVersion: '1' };
    next.labels = { ...(input.metadata.labels ?? {}), ...claimLabels(claim) };
    next.annotations = input.metadata.annotations ?? {};
    next.manifest = manifest;
    if (!current) return write(next, 'created');
    if (userView(current.value) === userView(next)) return keep('unchanged');
    next.generation += 1;
    next.resourceVersion = String(Number(current.value.resourceVersion) + 1);
    return write(next, 'configured');
  });
  if (result !== 'unchanged') {
    // A Secret's data never reaches an event or a log: only its kind and name.
    await plane.events.append([
      templateEvent(ref.kind, display(ref), plane.clock.now(), result === 'created' ? 'Created' : 'Configured', `${ref.kind} ${result}`),
    ]);
    await deriveTemplate(plane, key);
  }
  return result;
}

/**
 * The detector for one template: claims it for the policy that ranks first (labels it), and creates or
 * updates its binding. Without a matching policy the template is unclaimed and its binding, if any, is
 * left as it is (it keeps running where it runs; an event says so).
 */
export async function deriveTemplate(plane: ControlPlane, key: string, policies?: PropagationCandidate[]): Promise<'claimed' | 'unclaimed' | 'absent'> {
  const candidates = policies ?? (await loadPropagationPolicies(plane));
  const entry = await plane.templates.get(key);
  if (!entry) return 'absent';
  const template = entry.value;
  const ref = refOf(template);
  const resource = { apiVersion: ref.apiVersion, kind: ref.kind, ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}), name: ref.name };
  const policy = rankPolicies({ namespace: ref.namespace, labels: userLabels(template.labels), resource }, candidates)[0];
  const claim: PolicyRef | undefined = policy
    ? { kind: policy.kind, ...(policy.namespace ? { namespace: policy.namespace } : {}), name: policy.name }
    : undefined;
  if ((claim ? policyKey(claim) : '') !== (template.claimedBy ? policyKey(template.claimedBy) : '')) {
    const { result: stored } = await mutate<TemplateRecord, boolean>(
      plane.templates,
      key,
      (current) => {
        if (!current) return keep(false);
        const next = { ...current.value, labels: { ...userLabels(current.value.labels), ...claimLabels(claim) } };
        if (claim) next.claimedBy = claim;
        else delete next.claimedBy;
        return write(next, true);
      },
      entry,
    );
    if (stored) {
      const message = claim
        ? `claimed by ${policyDisplay(claim)}${template.claimedBy ? ` (was ${policyDisplay(template.claimedBy)})` : ''}`
        : `no propagation policy matches any more (was ${policyDisplay(template.claimedBy!)}); its binding keeps its placement`;
      await plane.events.append([templateEvent(ref.kind, display(ref), plane.clock.now(), claim ? 'Claimed' : 'Unclaimed', message)]);
    }
  }
  if (!policy || !claim) return 'unclaimed';
  await applyDerivedBinding(
    plane,
    {
      ref: derivedBindingRef(ref),
      labels: claimLabels(claim),
      resource: { ...resource, uid: template.uid, resourceVersion: template.resourceVersion },
      ...(templateReplicas(ref.apiVersion, ref.kind, template.manifest) !== undefined
        ? { replicas: templateReplicas(ref.apiVersion, ref.kind, template.manifest) }
        : {}),
    },
    candidates,
  );
  return 'claimed';
}

/** After a policy is applied, changed or deleted: every template is derived again under the new policies. */
export async function rederiveTemplates(plane: ControlPlane): Promise<number> {
  const policies = await loadPropagationPolicies(plane, 0);
  let derived = 0;
  for (const { id } of await plane.templates.list()) if ((await deriveTemplate(plane, id, policies)) === 'claimed') derived++;
  return derived;
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

export async function listTemplates(plane: ControlPlane, filter: { apiVersion?: string; kind?: string; namespace?: string } = {}) {
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

export async function getTemplate(plane: ControlPlane, ref: TemplateRef) {
  const namespace = templateNamespace(ref.kind, ref.namespace);
  const entry = await plane.templates.get(templateKey({ ...ref, ...(namespace !== undefined ? { namespace } : { namespace: undefined }) }));
  return entry ? templateView(entry.value) : undefined;
}
