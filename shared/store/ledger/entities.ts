import { bindingKey, EvictionRecord, parseBindingKey, PlacementFacts } from '../../failover/bindingModel';
import { clusterOfPartition, clusterPartition, EVICTION, PLACEMENT } from './keys';

/** A row of the ledger table as the Table SDK writes it. */
export type LedgerEntity = { partitionKey: string; rowKey: string } & Record<string, unknown>;

// ----------------------------------------------------------------------------------- placement rows

export function placementEntity(row: PlacementFacts): LedgerEntity {
  const key = bindingKey(row);
  return {
    partitionKey: clusterPartition(row.cluster, key),
    rowKey: PLACEMENT + key,
    cluster: row.cluster,
    kind: row.kind,
    namespace: row.namespace ?? '',
    name: row.name,
    resourceKind: row.resourceKind,
    replicas: row.replicas,
    tolerations: JSON.stringify(row.tolerations),
    failoverCluster: row.failoverCluster ? JSON.stringify(row.failoverCluster) : '',
    rev: row.rev,
  };
}

export function placementFromEntity(e: Record<string, unknown>): PlacementFacts {
  return {
    cluster: String(e.cluster),
    kind: e.kind as PlacementFacts['kind'],
    ...(e.namespace ? { namespace: String(e.namespace) } : {}),
    name: String(e.name),
    resourceKind: String(e.resourceKind),
    replicas: Number(e.replicas),
    tolerations: JSON.parse(String(e.tolerations || '[]')) as PlacementFacts['tolerations'],
    ...(e.failoverCluster ? { failoverCluster: JSON.parse(String(e.failoverCluster)) as NonNullable<PlacementFacts['failoverCluster']> } : {}),
    rev: Number(e.rev),
  };
}

// ----------------------------------------------------------------------------------- ledger rows

/**
 * Columns the service filters on stay properties (state, dueAt, cluster); the frozen decision travels as
 * one JSON property, which keeps rows small and cheap to write in bulk.
 */
const COLUMNS = ['state', 'dueAt', 'scheduledFor', 'executedAt', 'attempts', 'message', 'updatedAt'] as const;
// Derived from the keys (cluster from the partition, the binding from the row key), so not stored again.
const DERIVED = ['cluster', 'bindingKey', 'kind', 'namespace', 'name'];

export function evictionEntity(record: EvictionRecord): LedgerEntity {
  const decision: Record<string, unknown> = {};
  const entity: Record<string, unknown> = { partitionKey: clusterPartition(record.cluster, record.bindingKey), rowKey: EVICTION + record.bindingKey };
  for (const [key, value] of Object.entries(record)) {
    if ((COLUMNS as readonly string[]).includes(key)) entity[key] = value;
    else if (!DERIVED.includes(key)) decision[key] = value;
  }
  entity.decision = JSON.stringify(decision);
  return entity as LedgerEntity;
}

export function evictionFromEntity(e: Record<string, unknown>): EvictionRecord {
  const key = String(e.rowKey).slice(EVICTION.length);
  const record: Record<string, unknown> = {
    ...(JSON.parse(String(e.decision ?? '{}')) as Record<string, unknown>),
    cluster: clusterOfPartition(String(e.partitionKey)),
    bindingKey: key,
    ...parseBindingKey(key),
  };
  for (const column of COLUMNS) {
    const value = e[column];
    if (value === undefined || value === null || value === '') continue;
    record[column] = column === 'attempts' ? Number(value) : String(value);
  }
  record.attempts = Number(record.attempts ?? 0);
  return record as unknown as EvictionRecord;
}
