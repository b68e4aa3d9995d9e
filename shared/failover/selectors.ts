import type { LabelSelector } from '../api/resources';
import type { ClusterAffinity } from './model';

/** Kubernetes label selector semantics: matchLabels and matchExpressions are ANDed; empty matches all. */
export function matchesLabelSelector(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const requirement of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, requirement.key);
    const values = requirement.values ?? [];
    switch (requirement.operator) {
      case 'In':
        if (!has || !values.includes(labels[requirement.key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[requirement.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

export interface AffinityTarget {
  name: string;
  labels: Record<string, string>;
  provider?: string;
  region?: string;
  zone?: string;
}

/**
 * Karmada ClusterAffinity: `exclude` wins; then clusterNames (if any), labelSelector and fieldSelector
 * must all hold. An absent affinity selects every cluster.
 */
export function matchesClusterAffinity(affinity: ClusterAffinity | undefined, cluster: AffinityTarget): boolean {
  if (!affinity) return true;
  if (affinity.exclude?.includes(cluster.name)) return false;
  if (affinity.clusterNames && affinity.clusterNames.length > 0 && !affinity.clusterNames.includes(cluster.name)) return false;
  if (!matchesLabelSelector(affinity.labelSelector, cluster.labels)) return false;
  for (const requirement of affinity.fieldSelector?.matchExpressions ?? []) {
    const value = cluster[requirement.key];
    const listed = value !== undefined && requirement.values.includes(value);
    if (requirement.operator === 'In' && !listed) return false;
    if (requirement.operator === 'NotIn' && listed) return false;
  }
  return true;
}
