import type { Condition } from './model';

/**
 * Probed health, as Karmada's cluster-status controller probes Push-mode clusters: a member's /readyz is
 * probed every period, and the Ready condition flips only after the new answer has held for the threshold,
 * so one lost probe does not taint a cluster and one good probe does not clear it.
 */

export type ProbeOutcome = 'ok' | 'notOk' | 'unreachable';

/** The current run of answers on one side (success or failure), persisted with the cluster. */
export interface ProbeState {
  /** Latest answer. */
  outcome: ProbeOutcome;
  /** Start of the current run of successes (ok) or failures (notOk, unreachable): the threshold counts from here. */
  since: string;
  detail?: string;
}

export interface ProbeInput {
  previous?: ProbeState;
  outcome: ProbeOutcome;
  detail?: string;
  ready?: Condition;
  /** A pushed report arrived within the threshold: the cluster speaks for itself and that wins. */
  pushFresh: boolean;
  now: Date;
  thresholdSeconds: number;
}

export interface ProbeDecision {
  probe: ProbeState;
  /** The Ready condition to write, when it should change. */
  ready?: { type: 'Ready'; status: 'True' | 'False'; reason: string; message: string };
  /** The stored run changed (a write is due even when Ready is not). */
  probeChanged: boolean;
}

// Karmada's own reasons and messages (pkg/controllers/status/cluster_status_controller.go).
const OBSERVED: Record<ProbeOutcome, { status: 'True' | 'False'; reason: string; message: string }> = {
  ok: { status: 'True', reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads' },
  notOk: { status: 'False', reason: 'ClusterNotReady', message: 'cluster is reachable but health endpoint responded without ok' },
  unreachable: { status: 'False', reason: 'ClusterNotReachable', message: 'cluster is not reachable' },
};

const healthy = (outcome: ProbeOutcome) => outcome === 'ok';

export function probeDecision(input: ProbeInput): ProbeDecision {
  const { previous, outcome, now } = input;
  const sameSide = previous !== undefined && healthy(previous.outcome) === healthy(outcome);
  const probe: ProbeState = {
    outcome,
    since: sameSide ? previous.since : now.toISOString(),
    ...(input.detail ? { detail: input.detail } : {}),
  };
  // Only a change of outcome is stored: a steady cluster costs no write per probe.
  const probeChanged = previous?.outcome !== outcome || previous.since !== probe.since;
  if (input.pushFresh) return { probe, probeChanged };
  const observed = OBSERVED[outcome];
  const current = input.ready;
  if (current && current.status === observed.status && current.reason === observed.reason) return { probe, probeChanged };
  // A cluster with no Ready condition yet gets the first answer at once, as Karmada does.
  const heldSeconds = (now.getTime() - new Date(probe.since).getTime()) / 1000;
  const sameStatus = current?.status === observed.status;
  if (current && !sameStatus && heldSeconds < input.thresholdSeconds) return { probe, probeChanged };
  const message = outcome === 'ok' || !input.detail ? observed.message : `${observed.message}: ${input.detail}`;
  return { probe, probeChanged, ready: { type: 'Ready', status: observed.status, reason: observed.reason, message } };
}
