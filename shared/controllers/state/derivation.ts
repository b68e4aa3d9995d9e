import type { BindingSpec } from '../../api/resources';
import { inherit, PropagationCandidate, selectPolicy } from '../../failover/propagation';
import { keep, Mutation, write } from '../../store/optimistic';
import type { BindingRecord, StoredMetadata } from '../records';

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
