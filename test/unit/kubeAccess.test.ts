import { describe, expect, it } from 'vitest';
import {
  conditionOfExplanation,
  KARMADA,
  KubeAccess,
  KubeApi,
  KubeApiError,
  KubeObject,
  KubeVerb,
  resourceName,
  withAccessTracking,
} from '../../shared/kube/api';
import { endCondition, errorFields, jsonLogger, Logger, reportCondition, StateChanges } from '../../shared/telemetry/log';

/**
 * How the app tells a lasting access problem (the Kubernetes API server unreachable, a credential or a
 * permission refused) from a failed request, and says it once: when it begins, once a minute while it
 * lasts, and when it ends.
 */

interface Line {
  level: string;
  msg: string;
  condition?: string;
  forSeconds?: number;
}

function recording(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, ...fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const statusPatch = (status: number) =>
  new KubeApiError('patch', resourceName(KARMADA.clusters, 'member1', undefined, 'status'), status, status === 403 ? 'Forbidden' : 'Error', 'refused');
const unreachable = () => new KubeApiError('list', resourceName(KARMADA.clusters), 0, '', 'connect ECONNREFUSED');

describe('KubeApiError: the condition a failure shows', () => {
  it.each<[string, KubeApiError, string | undefined]>([
    ['no answer', unreachable(), 'unreachable'],
    ['503', new KubeApiError('get', 'clusters.cluster.karmada.io "m"', 503, 'ServiceUnavailable', ''), 'unreachable'],
    ['401', new KubeApiError('list', 'clusters.cluster.karmada.io', 401, 'Unauthorized', ''), 'unauthorized'],
    ['403 on a subresource', statusPatch(403), 'forbidden: patch clusters/status'],
    ['403 in the core group', new KubeApiError('get', resourceName(KARMADA.secrets, 'm', 'karmada-cluster'), 403, 'Forbidden', ''), 'forbidden: get secrets'],
    [
      '403 on a namespace listing',
      new KubeApiError('list', resourceName(KARMADA.resourceBindings, undefined, 'shop'), 403, 'Forbidden', ''),
      'forbidden: list resourcebindings',
    ],
    ['409 (a lost race)', statusPatch(409), undefined],
    ['404', statusPatch(404), undefined],
    ['500 (one request failed)', statusPatch(500), undefined],
  ])('%s', (_name, error, condition) => {
    expect(error.condition).toBe(condition);
    expect(error.explanation).toBe(condition ? `${condition}: ${error.message}` : error.message);
    expect(conditionOfExplanation(error.explanation)).toBe(condition);
  });
});

describe('KubeAccess', () => {
  const tracker = () => {
    let now = 0;
    const log = recording();
    const access = new KubeAccess(log, () => now);
    return { access, log, advance: (ms: number) => (now += ms) };
  };

  it('a forbidden write: logged when it begins and once a minute while it fails, ended by that write succeeding', () => {
    const { access, log, advance } = tracker();
    access.failed(statusPatch(403));
    for (let i = 0; i < 11; i++) {
      advance(5_000);
      access.failed(statusPatch(403));
    }
    expect(log.lines.map((l) => l.level)).toEqual(['error']);
    expect(access.problems()).toEqual([
      { condition: 'forbidden: patch clusters/status', reason: statusPatch(403).explanation, since: new Date(0).toISOString() },
    ]);
    advance(5_000);
    access.failed(statusPatch(403));
    expect(log.lines.map((l) => `${l.level} ${l.condition} ${l.forSeconds ?? ''}`)).toEqual([
      'error forbidden: patch clusters/status ',
      'error forbidden: patch clusters/status 60',
    ]);
    // Another verb or resource allowed says nothing about this one.
    access.answered('get', 'clusters');
    access.answered('patch', 'clusters');
    expect(access.problems()).toHaveLength(1);
    access.answered('patch', 'clusters/status');
    expect(access.problems()).toEqual([]);
    expect(log.lines.at(-1)).toMatchObject({ level: 'info', msg: 'Karmada API server usable again', condition: 'forbidden: patch clusters/status' });
    expect(access.endedAfter('forbidden: patch clusters/status', 0)).toBe(true);
  });

  it('unreachable ends with any answer, even a refusal of one request', () => {
    const { access, log } = tracker();
    access.failed(unreachable());
    access.failed(unreachable());
    access.failed(statusPatch(409));
    expect(access.problems()).toEqual([]);
    expect(log.lines.map((l) => `${l.level} ${l.condition}`)).toEqual(['error unreachable', 'info unreachable']);
  });

  it('through withAccessTracking, every request of the API is noted', async () => {
    const refusing = new Set<KubeVerb>(['patch']);
    const object: KubeObject = { metadata: { name: 'member1', resourceVersion: '1' } };
    const inner: KubeApi = {
      get: () => Promise.resolve(object),
      list: () => Promise.resolve({ items: [object], resourceVersion: '1' }),
      watch: () => Promise.resolve(),
      patch: () => (refusing.has('patch') ? Promise.reject(statusPatch(403)) : Promise.resolve(object)),
      create: () => Promise.resolve(object),
    };
    const log = recording();
    const api = withAccessTracking(inner, new KubeAccess(log));
    await expect(api.patch(KARMADA.clusters, 'member1', undefined, {}, 'merge', 'status')).rejects.toBeInstanceOf(KubeApiError);
    await api.list(KARMADA.clusters);
    expect(api.access?.problems().map((p) => p.condition)).toEqual(['forbidden: patch clusters/status']);
    refusing.delete('patch');
    await api.patch(KARMADA.clusters, 'member1', undefined, {}, 'merge', 'status');
    expect(api.access?.problems()).toEqual([]);
  });
});

describe('a failure whose condition is reported is not logged again', () => {
  const capture = (level: 'debug' | 'info') => {
    const lines: Line[] = [];
    return { lines, log: jsonLogger({ write: (line) => lines.push(JSON.parse(line) as Line), level }) };
  };

  it('written at debug while the condition is reported, at its level before and after', () => {
    const condition = 'forbidden: patch clusters/status';
    const { lines, log } = capture('debug');
    const { lines: infoLines, log: infoLog } = capture('info');
    const failure = { function: 'clusterProbes', ...errorFields(statusPatch(403)) };
    expect(failure).toMatchObject({ errorCondition: condition });
    log.error('function failed', failure);
    reportCondition(condition);
    log.error('function failed', failure);
    log.warn('not written', failure);
    infoLog.error('function failed', failure);
    // A failure of another condition, or of none, is still written.
    log.error('function failed', errorFields(unreachable()));
    log.error('function failed', errorFields(new Error('boom')));
    endCondition(condition);
    log.error('function failed', failure);
    expect(lines.map((l) => l.level)).toEqual(['error', 'debug', 'debug', 'error', 'error', 'error']);
    expect(infoLines).toEqual([]);
  });

  it('counted: reported by two trackers, it stays reported until both end it', () => {
    const condition = 'unreachable';
    const { lines, log } = capture('info');
    reportCondition(condition);
    reportCondition(condition);
    endCondition(condition);
    log.error('function failed', errorFields(unreachable()));
    endCondition(condition);
    log.error('function failed', errorFields(unreachable()));
    expect(lines.map((l) => l.level)).toEqual(['error']);
  });
});

describe('StateChanges', () => {
  it('a state seen again is not a change; a new state, or the same after a recovery, is', () => {
    const states = new StateChanges();
    expect(states.changed('ctp', '404 NotFound')).toBe(true);
    expect(states.changed('ctp', '404 NotFound')).toBe(false);
    expect(states.changed('other', '404 NotFound')).toBe(true);
    expect(states.changed('ctp', '422 Invalid')).toBe(true);
    expect(states.cleared('ctp')).toBe(true);
    expect(states.cleared('ctp')).toBe(false);
    expect(states.changed('ctp', '422 Invalid')).toBe(true);
  });

  it('keeps at most its limit of subjects, forgetting the oldest', () => {
    const states = new StateChanges(2);
    states.changed('a', 'x');
    states.changed('b', 'x');
    states.changed('c', 'x');
    expect(states.changed('a', 'x')).toBe(true);
    expect(states.changed('c', 'x')).toBe(false);
  });
});

describe('optional permissions', () => {
  it('a refused get on Secrets turns the probes off: said once at info, never degraded', () => {
    const log = recording();
    const access = new KubeAccess(log);
    const refused = () => new KubeApiError('get', resourceName(KARMADA.secrets, 'member1', 'karmada-cluster'), 403, 'Forbidden', 'secrets is forbidden');
    access.failed(refused());
    access.failed(refused());
    expect(access.problems()).toEqual([]);
    expect(log.lines.filter((l) => l.level !== 'debug')).toEqual([expect.objectContaining({ level: 'info', condition: 'forbidden: get secrets' })]);
  });
});
