import { bindingKey, EvictionRecord, parseBindingKey, PlacementFacts } from '../../failover/bindingModel';
import { clampPriority, MAX_PRIORITY } from '../../failover/priority';
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
    // Only when set: rows of bindings without a priority stay as they were.
    ...(row.priority ? { priority: row.priority } : {}),
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
    ...(e.priority ? { priority: Number(e.priority) } : {}),
    rev: Number(e.rev),
  };
}

// ----------------------------------------------------------------------------------- due keys

/**
 * Where a pending row waits in line, as the `dueAt` column and its due group's row key start with it:
 *
 * - priority 0 (or none): the due time itself, `<dueAt>`, as rows always were (rows and due groups written
 *   before priorities existed are read as they are);
 * - another priority: `p<band>|<dueAt>`, band = 2147483647 − priority in 10 digits, so a higher priority
 *   sorts first and each priority is one key range of the due partition;
 * - held by a FailoverBudget: `w|<namespace>:<name>|<band>|<dueAt>`: out of the pacer's due ranges (it does
 *   not read the row again every tick, and the rows behind it go), in one key range per budget that the
 *   pacer reads when the budget has room.
 *
 * The pacer's `pendingDue` filters `dueAt eq <key>`, so each key selects exactly its rows; the record's
 * dueAt is always the time (the key's last part).
 */
export const PRIORITY_KEY = 'p';
export const PARKED_KEY = 'w|';

/** 2147483647 − priority, as 10 digits: higher priorities sort first. */
export const priorityBand = (priority: number): string => String(MAX_PRIORITY - clampPriority(priority)).padStart(10, '0');
/** A budget's `<namespace>/<name>` as a key part (`/` may not appear in a row key). */
export const budgetKeyPart = (budget: string): string => budget.replace('/', ':');

export interface DueKeyParts {
  dueAt: string;
  priority?: number;
  parkedFor?: string;
}

export function dueKey(parts: DueKeyParts): string {
  if (parts.parkedFor) return `${PARKED_KEY}${budgetKeyPart(parts.parkedFor)}|${priorityBand(parts.priority ?? 0)}|${parts.dueAt}`;
  if (parts.priority) return `${PRIORITY_KEY}${priorityBand(parts.priority)}|${parts.dueAt}`;
  return parts.dueAt;
}

/** The due key of a ledger row (its `dueAt` column). */
export const dueKeyOf = (record: Pick<EvictionRecord, 'dueAt' | 'priority' | 'waitingFor'>): string =>
  dueKey({ dueAt: record.dueAt, priority: record.priority, parkedFor: record.waitingFor });

/** The due time of a due key (its last part). */
export const dueAtOfKey = (key: string): string => key.slice(key.lastIndexOf('|') + 1);

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
  // Where it waits in line (the due time itself unless it has a priority or a budget holds it).
  entity.dueAt = dueKeyOf(record);
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
    record[column] = column === 'attempts' ? Number(value) : column === 'dueAt' ? dueAtOfKey(String(value)) : String(value);
  }
  record.attempts = Number(record.attempts ?? 0);
  return record as unknown as EvictionRecord;
}
