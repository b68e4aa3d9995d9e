import type { ClusterTaint } from './model';

/**
 * Drain: taking a cluster out is a command, not a NoExecute taint written by hand (docs/architecture.md,
 * decision 13). A drain cordons the cluster with the taint `karmadactl cordon` writes, so Karmada's
 * scheduler and ours place nothing new there, and evacuates every binding through the ledger with rows of
 * reason `Drain`. Pure rules only.
 */
export const CORDON_TAINT = { key: 'cluster.karmada.io/unschedulable', effect: 'NoSchedule' } as const;

/** The ledger reason (and graceful-eviction task reason) of a drain's evictions. */
export const DRAIN_REASON = 'Drain';

export const isCordonTaint = (taint: Pick<ClusterTaint, 'key' | 'effect'>) => taint.key === CORDON_TAINT.key && taint.effect === CORDON_TAINT.effect;

export const isCordoned = (taints: ReadonlyArray<Pick<ClusterTaint, 'key' | 'effect'>>) => taints.some(isCordonTaint);

/** A drain's row goes whatever the Failover gate says (a person decided it); every other row waits for the gate. */
export const bypassesGate = (record: { reason: string }) => record.reason === DRAIN_REASON;
