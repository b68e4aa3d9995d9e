import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { applyObjects } from '../../shared/controllers/apply';
import { SLOW_READ_MS } from '../../shared/controllers/evictionChecks';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer, setPaused } from '../../shared/controllers/pacer';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * Found by `npm run chaos`: a storage read answered late describes the world as it was when it was served.
 * The worker must not act on it when a recovery or a pause was written meanwhile.
 */
const sleepReal = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function oneScheduledEviction() {
  const m = memoryPlane({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10' });
  await applyTo(m, [cluster('c1'), cluster('c2'), cluster('c3'), binding('web', ['c1'])]);
  await applyObjects(m.plane, decodeApplyDocuments([cluster('c1', true)]));
  expect((await manageCluster(m.plane, 'c1')).planned).toBe(1);
  await runPacer(m.plane);
  const [message] = takeEvictions(m).map((entry) => entry.message);
  m.clock.advance(5000);
  return { m, message };
}

/**
 * `read` whose first answer, served at once, is delivered only after `meanwhile` has run and SLOW_READ_MS +
 * 200 ms have passed: what the caller gets describes storage as it was before `meanwhile`.
 */
function slowFirstAnswer<A extends unknown[], R>(read: (...args: A) => Promise<R>, meanwhile: () => Promise<unknown>): (...args: A) => Promise<R> {
  let first = true;
  return async (...args: A) => {
    const answer = await read(...args);
    if (first) {
      first = false;
      await meanwhile();
      await sleepReal(SLOW_READ_MS + 200);
    }
    return answer;
  };
}

/** c1 reports Ready again: its taint goes. */
const recover = (m: { plane: Parameters<typeof applyObjects>[0] }) => applyObjects(m.plane, decodeApplyDocuments([cluster('c1', false)]));

describe('the worker and slow storage reads', () => {
  it('does not evict when the taint read was answered late and the cluster recovered meanwhile', async () => {
    const { m, message } = await oneScheduledEviction();
    const get = m.plane.clusters.get.bind(m.plane.clusters);
    let first = true;
    m.plane.clusters.get = async (id: string) => {
      const answer = await get(id);
      if (first && id === 'c1') {
        first = false;
        // Served before the recovery, delivered after it.
        await applyObjects(m.plane, decodeApplyDocuments([cluster('c1', false)]));
        await sleepReal(700);
      }
      return answer;
    };
    expect(await executeEviction(m.plane, message)).toBe('recovered');
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });

  it('does not evict when the reads were slow and evictions were paused meanwhile', async () => {
    const { m, message } = await oneScheduledEviction();
    const get = m.plane.bindings.get.bind(m.plane.bindings);
    m.plane.bindings.get = async (id: string) => {
      const answer = await get(id);
      await setPaused(m.plane, true);
      await sleepReal(700);
      return answer;
    };
    // The switch was read (not paused) before the slow read; the pause came during it.
    expect(await executeEviction(m.plane, message)).toBe('postponed');
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });

  it('does not evict when the switch read itself was answered late and evictions were paused while it was on the way', async () => {
    const { m, message } = await oneScheduledEviction();
    // Served before the pause, delivered after it: what the worker holds says "not paused".
    m.plane.ledger.getPacerState = slowFirstAnswer(m.plane.ledger.getPacerState.bind(m.plane.ledger), () => setPaused(m.plane, true));
    expect(await executeEviction(m.plane, message)).toBe('postponed');
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });

  it('puts the row back in line when the pause switch is never read promptly (it never acts on a stale switch)', async () => {
    const { m, message } = await oneScheduledEviction();
    const getPacerState = m.plane.ledger.getPacerState.bind(m.plane.ledger);
    let reads = 0;
    m.plane.ledger.getPacerState = async () => {
      const answer = await getPacerState();
      reads++;
      m.clock.advance(SLOW_READ_MS + 50);
      await sleepReal(SLOW_READ_MS + 50);
      return answer;
    };
    expect(await executeEviction(m.plane, message)).toBe('postponed');
    // The first read, then three more before giving up.
    expect(reads).toBe(4);
    expect((await m.plane.ledger.getEviction('c1', 'rb:default:web'))?.record).toMatchObject({
      state: 'pending',
      message: expect.stringContaining('the pause switch could not be read promptly'),
    });
  });

  it('reads the taint again when the binding read made beside it was slow and the cluster recovered meanwhile', async () => {
    const { m, message } = await oneScheduledEviction();
    // The taint's read (made beside this one) was answered at once; the recovery comes while this one is slow.
    m.plane.bindings.get = slowFirstAnswer(m.plane.bindings.get.bind(m.plane.bindings), () => recover(m));
    expect(await executeEviction(m.plane, message)).toBe('recovered');
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });

  it('reads the taint again when it was answered promptly but the switch read after it was slow, and the cluster recovered meanwhile', async () => {
    const { m, message } = await oneScheduledEviction();
    // The taint was read (faulty) beside the binding and answered at once; the recovery comes while the
    // switch's read is slow, so what the worker holds of the taint is older than SLOW_READ_MS when it acts.
    m.plane.ledger.getPacerState = slowFirstAnswer(m.plane.ledger.getPacerState.bind(m.plane.ledger), () => recover(m));
    expect(await executeEviction(m.plane, message)).toBe('recovered');
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });

  it('puts the row back in line when three taint reads in a row are answered late (it never acts on a late read)', async () => {
    const { m, message } = await oneScheduledEviction();
    const get = m.plane.clusters.get.bind(m.plane.clusters);
    let reads = 0;
    m.plane.clusters.get = async (id: string) => {
      const answer = await get(id);
      if (id === 'c1') {
        reads++;
        await sleepReal(SLOW_READ_MS + 50);
      }
      return answer;
    };
    expect(await executeEviction(m.plane, message)).toBe('postponed');
    expect(reads).toBe(3);
    expect((await m.plane.ledger.getEviction('c1', 'rb:default:web'))?.record).toMatchObject({
      state: 'pending',
      message: expect.stringContaining('could not be read promptly'),
    });
    expect((await m.plane.bindings.get('rb:default:web'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
  });
});

describe("the worker's reads", () => {
  it('asks for the fleet view and the failback windows beside its first reads, not after them', async () => {
    const { m, message } = await oneScheduledEviction();
    // Every copy the worker could hold has aged out: it reads the fleet summary and the policies itself.
    m.clock.advance(60_000);
    const order: string[] = [];
    const getBinding = m.plane.bindings.get.bind(m.plane.bindings);
    m.plane.bindings.get = async (id: string) => {
      const answer = await getBinding(id);
      // Answered a moment later than served, as a busy storage service answers.
      await sleepReal(20);
      order.push('binding answered');
      return answer;
    };
    const getSummary = m.plane.fleetSummary.get.bind(m.plane.fleetSummary);
    m.plane.fleetSummary.get = async (id: string) => {
      order.push('fleet summary asked');
      return getSummary(id);
    };
    const listPolicies = m.plane.propagationPolicies.list.bind(m.plane.propagationPolicies);
    m.plane.propagationPolicies.list = async (...args: Parameters<typeof listPolicies>) => {
      order.push('policies asked');
      return listPolicies(...args);
    };
    expect(await executeEviction(m.plane, { ...message, slot: m.clock.now().toISOString() })).toBe('evicted');
    expect(order.indexOf('fleet summary asked')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('fleet summary asked')).toBeLessThan(order.indexOf('binding answered'));
    expect(order.indexOf('policies asked')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('policies asked')).toBeLessThan(order.indexOf('binding answered'));
  });
});
