import type { TableClient } from '@azure/data-tables';
import type { PacerState } from '../ports';
import type { LedgerEntity } from './entities';
import { PACER, PACER_ROW } from './keys';
import { statusOf } from './transactions';

/** The pacer's state before anyone wrote it. */
export const initialPacerState = (): PacerState => ({
  nextSlotAt: new Date(0).toISOString(),
  paused: false,
  tier: 'primary',
  rate: 0,
  total: 0,
  unhealthy: 0,
  updatedAt: new Date(0).toISOString(),
  draining: [],
});

export const pacerEntity = (state: PacerState): LedgerEntity => ({
  partitionKey: PACER,
  rowKey: PACER_ROW,
  ...state,
  draining: JSON.stringify(state.draining),
});

export function pacerFromEntity(e: Record<string, unknown>): PacerState {
  return {
    nextSlotAt: String(e.nextSlotAt),
    paused: Boolean(e.paused),
    tier: String(e.tier),
    rate: Number(e.rate),
    total: Number(e.total),
    // `faulty` in rows written before fleet health counted unhealthy clusters.
    unhealthy: Number(e.unhealthy ?? e.faulty ?? 0),
    updatedAt: String(e.updatedAt),
    // Written as JSON text (a Table column holds no arrays); absent in rows written before drains existed.
    draining: typeof e.draining === 'string' && e.draining !== '' ? (JSON.parse(e.draining) as string[]) : [],
    ...(typeof e.lastCluster === 'string' && e.lastCluster !== '' ? { lastCluster: e.lastCluster } : {}),
    ...(typeof e.shortPassesUntil === 'string' && e.shortPassesUntil !== '' ? { shortPassesUntil: e.shortPassesUntil } : {}),
  };
}

/** The one global rate row (`~pacer`/`state`), written with its ETag. */
export class TablePacerRow {
  constructor(private readonly client: TableClient) {}

  async getPacerState(): Promise<{ state: PacerState; etag?: string }> {
    try {
      const e = await this.client.getEntity<Record<string, unknown>>(PACER, PACER_ROW);
      return { etag: String(e.etag), state: pacerFromEntity(e) };
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      return { state: initialPacerState() };
    }
  }

  /** Writes the pacer row with its ETag (create when absent); false when another pacer wrote first. */
  async putPacerState(state: PacerState, etag: string | undefined): Promise<boolean> {
    const entity = pacerEntity(state);
    try {
      if (etag) await this.client.updateEntity(entity, 'Replace', { etag });
      else await this.client.createEntity(entity);
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 409) return false;
      throw error;
    }
  }
}
