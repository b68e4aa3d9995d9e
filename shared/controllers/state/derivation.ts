import type { BindingSpec } from '../../api/resources';
import { inherit, PropagationCandidate, selectPolicy } from '../../failover/propagation';
import { keep, Mutation, write } from '../../store/optimistic';
import type { BindingRecord, StoredMetadata } from '../../store/records';
import type { ControlPlane } from '../ports';
import { closeIntents, openIntents } from './bindingWrites';

export type ApplyAction = 'created' | 'configured' | 'unchanged';

/**
 * The apply step of a policy-like object (metadata plus spec): created, configured (generation + 1) or
 * unchanged, from what the user gave.
 */
export function appliedPolicy<R extends StoredMetadata & { spec: unknown }>(
  current: R | undefined,
  created: () => R,
  input: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: R['spec'] },
): Mutation<R, ApplyAction> {
  const record: R = current ? { ...current } : created();
  record.labels = input.metadata.labels ?? {};
  record.annotations = input.metadata.annotations ?? {};
  record.spec = input.spec;
  if (!current) return write(record, 'created');
  const view = (r: R) => JSON.stringify({ labels: r.labels, annotations: r.annotations, spec: r.spec });
  if (view(current) === view(record)) return keep('unchanged');
  record.generation += 1;
  return write(record, 'configured');
}

/** The binding's own spec: what it has minus what it inherited. */
export function ownSpec(record: Pick<BindingRecord, 'spec' | 'inheritedFrom'>): BindingSpec {
  const spec = { ...record.spec };
  for (const field of record.inheritedFrom?.fields ?? []) delete spec[field];
  return spec;
}

/** The effective spec and inheritance of a binding under the current propagation policies. */
export function governedSpec(
  subject: { namespace?: string; labels: Record<string, string> },
  own: BindingSpec,
  policies: readonly PropagationCandidate[],
): Pick<BindingRecord, 'spec' | 'inheritedFrom'> {
  const policy = selectPolicy({ ...subject, resource: own.resource }, policies);
  const { spec, fields } = inherit(own, policy);
  return {
    spec,
    inheritedFrom:
      policy && fields.length > 0 ? { kind: policy.kind, ...(policy.namespace ? { namespace: policy.namespace } : {}), name: policy.name, fields } : undefined,
  };
}

/**
 * Runs a propagation-policy change (`work`: the policy's write and the derivation it starts) under a
 * `derive` intent of the write journal, opened before the policy is written and closed once every template
 * and binding is derived under it. A host killed (or a write failed) in between leaves the intent open, and
 * the repair derives everything again from the stored policies (`repairInterruptedWrites`), as Karmada's
 * detector resyncs. A repair that took the intent over meanwhile derives too: deriving is idempotent.
 */
export async function underDerivationIntent<R>(plane: ControlPlane, work: () => Promise<R>): Promise<R> {
  const held = await openIntents(plane, [{ derive: true }]);
  const result = await work();
  await closeIntents(plane, held);
  return result;
}
