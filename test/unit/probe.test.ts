import { describe, expect, it } from 'vitest';
import type { Condition } from '../../shared/failover/model';
import { probeDecision, ProbeOutcome, ProbeState } from '../../shared/failover/probe';

const T0 = new Date('2026-11-22T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const ready = (status: 'True' | 'False', reason: string): Condition => ({ type: 'Ready', status, reason, lastTransitionTime: T0.toISOString() });
const run = (outcome: ProbeOutcome, sinceSeconds: number): ProbeState => ({ outcome, since: at(sinceSeconds).toISOString() });

/** [case, previous run, this answer, current Ready, seconds now, push fresh, Ready written (status/reason) or none, run start (s)] */
const CASES: Array<[string, ProbeState | undefined, ProbeOutcome, Condition | undefined, number, boolean, string | undefined, number]> = [
  ['first answer, no Ready yet: written at once', undefined, 'ok', undefined, 0, false, 'True/ClusterReady', 0],
  ['first failure, no Ready yet: written at once', undefined, 'unreachable', undefined, 0, false, 'False/ClusterNotReachable', 0],
  ['failure starts a run, Ready stays until the threshold', run('ok', -100), 'unreachable', ready('True', 'ClusterReady'), 0, false, undefined, 0],
  ['29 s of failures: not yet', run('unreachable', 0), 'unreachable', ready('True', 'ClusterReady'), 29, false, undefined, 0],
  ['30 s of failures: Ready=False', run('unreachable', 0), 'unreachable', ready('True', 'ClusterReady'), 30, false, 'False/ClusterNotReachable', 0],
  ['not ok and unreachable are one run of failures', run('notOk', 0), 'unreachable', ready('True', 'ClusterReady'), 30, false, 'False/ClusterNotReachable', 0],
  ['answered not ok for 30 s: ClusterNotReady', run('notOk', 0), 'notOk', ready('True', 'ClusterReady'), 30, false, 'False/ClusterNotReady', 0],
  [
    'already False: a new reason is written at once',
    run('notOk', 0),
    'unreachable',
    ready('False', 'ClusterNotReady'),
    31,
    false,
    'False/ClusterNotReachable',
    0,
  ],
  ['one success after failures restarts the run', run('unreachable', 0), 'ok', ready('False', 'ClusterNotReachable'), 40, false, undefined, 40],
  ['success held 30 s: Ready=True', run('ok', 40), 'ok', ready('False', 'ClusterNotReachable'), 70, false, 'True/ClusterReady', 40],
  ['steady and already right: nothing', run('ok', 0), 'ok', ready('True', 'ClusterReady'), 100, false, undefined, 0],
  ['a fresh pushed report wins', run('unreachable', 0), 'unreachable', ready('True', 'ClusterReady'), 60, true, undefined, 0],
];

describe('probeDecision', () => {
  it.each(CASES)('%s', (_name, previous, outcome, current, now, pushFresh, written, since) => {
    const decision = probeDecision({ previous, outcome, ready: current, pushFresh, now: at(now), thresholdSeconds: 30 });
    expect(decision.ready ? `${decision.ready.status}/${decision.ready.reason}` : undefined).toBe(written);
    expect(decision.probe.since).toBe(at(since).toISOString());
  });

  it('writes the run only when the answer changes (a steady cluster costs no write)', () => {
    expect(probeDecision({ previous: run('ok', 0), outcome: 'ok', pushFresh: false, now: at(50), thresholdSeconds: 30 }).probeChanged).toBe(false);
    expect(probeDecision({ previous: run('ok', 0), outcome: 'notOk', pushFresh: false, now: at(50), thresholdSeconds: 30 }).probeChanged).toBe(true);
    expect(probeDecision({ previous: run('notOk', 0), outcome: 'unreachable', pushFresh: false, now: at(50), thresholdSeconds: 30 }).probeChanged).toBe(true);
  });

  it('says why in the message', () => {
    const decision = probeDecision({
      outcome: 'unreachable',
      detail: 'no answer from https://m1:6443 in 5000 ms',
      pushFresh: false,
      now: at(0),
      thresholdSeconds: 30,
    });
    expect(decision.ready?.message).toBe('cluster is not reachable: no answer from https://m1:6443 in 5000 ms');
  });
});
