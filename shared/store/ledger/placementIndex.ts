import type { TableClient } from '@azure/data-tables';
import { Limiter } from '../../concurrency';
import type { PlacementFacts } from '../../failover/bindingModel';
import type { VersionedEviction } from '../ports';
import { evictionFromEntity, placementEntity, placementFromEntity } from './entities';
import type { VersionedPlacement } from './journal';
import { CLUSTER_ROWS, clusterPartition, clusterRange, EVICTION, PLACEMENT, PLACEMENT_ROWS, rowRange } from './keys';
import { queryAll, statusOf, submit, submitUnlessConflict } from './transactions';

/** Partitions written at once by `createPlacements`: a bulk apply across the fleet is mostly single rows of many partitions. */
const CREATE_CONCURRENCY = 32;

/**
 * Listings of a cluster's rows in flight at once per ledger (a process has one). Clusters failing together
 * are planned side by side, and each planner begins with such a listing; sent all at once they queue at the
 * storage service (Azurite answers them one after another, scanning the table for each), and every request
 * behind them (the first rows, the pacer's passes, the first evictions) waits for all of them. One at a time,
 * those requests go between them (two at a time left the clusters planned last waiting up to 3 s in a run at
 * 1,000 clusters / 100,000 bindings, against 1.5 s).
 */
const CLUSTER_LISTINGS_AT_ONCE = 1;

/** The placement index: one `b:<binding>` row per (cluster, binding) placed, in the binding's cluster shard. */
export class TablePlacementIndex {
  private readonly clusterListings = new Limiter(CLUSTER_LISTINGS_AT_ONCE);

  constructor(private readonly client: TableClient) {}

  /** Upserts placement rows, batched per cluster partition (a bulk import costs one request per 100). */
  async upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    await submit(
      this.client,
      rows.map((row) => ['upsert', placementEntity(row), 'Replace']),
    );
  }

  /** Creates absent placement rows, per cluster partition; a partition's batch that meets a stored row creates none (false). */
  async createPlacements(rows: PlacementFacts[]): Promise<boolean[]> {
    const results = await submitUnlessConflict(
      this.client,
      rows.map((row) => ['create', placementEntity(row)]),
      CREATE_CONCURRENCY,
    );
    return results.map((etag) => etag !== false);
  }

  /** Removes a placement row unless a newer binding revision wrote it since (ETag-checked). */
  async removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    try {
      const partition = clusterPartition(cluster, bindingKey);
      const entity = await this.client.getEntity<{ rev: number }>(partition, PLACEMENT + bindingKey);
      if (Number(entity.rev) > upToRev) return;
      await this.client.deleteEntity(partition, PLACEMENT + bindingKey, { etag: entity.etag });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 412) throw error;
    }
  }

  /** One placement row with its ETag (the journal's repair reads the rows an open intent names). */
  async getPlacement(cluster: string, bindingKey: string): Promise<VersionedPlacement | undefined> {
    try {
      const entity = await this.client.getEntity<Record<string, unknown>>(clusterPartition(cluster, bindingKey), PLACEMENT + bindingKey);
      return { row: placementFromEntity(entity), etag: String(entity.etag) };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** Replaces a placement row at its ETag; false when it changed or was removed since it was read. */
  async replacePlacement(row: PlacementFacts, etag: string): Promise<boolean> {
    try {
      await this.client.updateEntity(placementEntity(row), 'Replace', { etag });
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 404) return false;
      throw error;
    }
  }

  /** Removes a placement row at its ETag; false when it changed or was removed since it was read. */
  async deletePlacement(cluster: string, bindingKey: string, etag: string): Promise<boolean> {
    try {
      await this.client.deleteEntity(clusterPartition(cluster, bindingKey), PLACEMENT + bindingKey, { etag });
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 404) return false;
      throw error;
    }
  }

  /** A cluster's placement rows and ledger rows in one range query (the taint manager reads both). */
  async listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
    const rows = await this.clusterListings.run(() => queryAll<Record<string, unknown>>(this.client, `${clusterRange(cluster)} and ${rowRange(CLUSTER_ROWS)}`));
    const placements: PlacementFacts[] = [];
    const evictions: VersionedEviction[] = [];
    for (const row of rows) {
      if (row.rowKey.startsWith(PLACEMENT)) placements.push(placementFromEntity(row));
      else if (row.rowKey.startsWith(EVICTION)) evictions.push({ record: evictionFromEntity(row), etag: row.etag });
    }
    return { placements, evictions };
  }

  async listPlacements(cluster: string): Promise<PlacementFacts[]> {
    const rows = await queryAll<Record<string, unknown>>(this.client, `${clusterRange(cluster)} and ${rowRange(PLACEMENT_ROWS)}`);
    return rows.map(placementFromEntity);
  }
}
