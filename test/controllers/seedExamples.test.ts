import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments, parseDocuments } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import { applyObjects } from '../../shared/controllers/apply';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import { scheduleAll } from '../../shared/controllers/scheduler';
import { manageCluster } from '../../shared/controllers/taintManager';
import { cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';
import {
  SEED_000_CLUSTER,
  SEED_000_CTP,
  SEED_000_PP,
  SEED_001_DIVIDED,
  SEED_001_DUPLICATED,
  SEED_001_TOLERATIONS,
  SEED_002_PP,
  SEED_003_INTERPRETER,
  SEED_003_PP,
  SEED_003_RB,
  SEED_003_REJECTED_SHAPE,
} from '../helpers/seedYaml';

/**
 * Every YAML example of test/helpers/seedYaml.ts, as a user would apply it: each applies as written, or,
 * where the example has a typo or shows a shape that was not adopted, is refused with a 400 that names the
 * field and the reason.
 */

async function applyYaml(m: MemoryPlane, yaml: string) {
  try {
    return { results: await applyObjects(m.plane, decodeApplyDocuments(parseDocuments(yaml, 'yaml'))) };
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, errors: error.errors.map((e) => `${e.path}: ${e.message}`) };
    throw error;
  }
}

describe("the proposals' YAML, as written", () => {
  const applies: Array<[string, string]> = [
    ['seed 000: the ClusterTaintPolicy example', SEED_000_CTP],
    ['seed 000: the Cluster example (its status is ignored: health comes from reports)', SEED_000_CLUSTER],
    ['seed 001: the PropagationPolicy with the default tolerations', SEED_001_TOLERATIONS],
    ['seed 001: the Duplicated Deployment and its policy', SEED_001_DUPLICATED],
    ['seed 001: the Divided Deployment and its policy', SEED_001_DIVIDED],
    ['seed 002: the PropagationPolicy with purgeMode Graciously', SEED_002_PP],
    ['seed 003: the ResourceInterpreterCustomization (stored as a resource template)', SEED_003_INTERPRETER],
    ['seed 003: the PropagationPolicy with application failover', SEED_003_PP],
  ];
  it.each(applies)('%s applies', async (_name, yaml) => {
    const m = memoryPlane();
    const outcome = await applyYaml(m, yaml);
    expect(outcome).toMatchObject({ results: expect.any(Array) as unknown });
    expect((outcome.results ?? []).every((r) => r.action === 'created')).toBe(true);
  });

  const refused: Array<[string, string, string]> = [
    ["seed 000: the policy's typo pureMode", SEED_000_PP, 'spec.failover.cluster.pureMode: unknown field; did you mean "purgeMode"?'],
    [
      "seed 003: the binding's typo createTimestamp",
      SEED_003_RB,
      'spec.activeEvictionHistory[0].createTimestamp: unknown field; did you mean "creationTimestamp"?',
    ],
    ['seed 003: the failover list of an alternative design', SEED_003_REJECTED_SHAPE, 'spec.failover'],
  ];
  it.each(refused)('%s is refused with the field and the reason', async (_name, yaml, expected) => {
    const m = memoryPlane();
    const outcome = await applyYaml(m, yaml);
    expect(outcome.status).toBe(400);
    expect(outcome.errors!.some((e) => e.startsWith(expected))).toBe(true);
    expect(await m.policies.list()).toEqual([]);
    expect(await m.propagationPolicies.list()).toEqual([]);
    expect(await m.bindings.list()).toEqual([]);
  });
});

describe("seed 001's failover examples, end to end on the controllers", () => {
  const placement = async (m: MemoryPlane) =>
    ((await m.bindings.get('rb:default:nginx-deployment'))!.value.spec.clusters ?? []).map((c) => `${c.name}:${c.replicas}`);

  async function failover(m: MemoryPlane, name: string) {
    await applyObjects(m.plane, decodeApplyDocuments([cluster(name, true)]));
    await manageCluster(m.plane, name);
    for (let tick = 0; tick < 10; tick++) {
      await runPacer(m.plane);
      for (const { message } of takeEvictions(m)) {
        m.clock.set(message.slot);
        await executeEviction(m.plane, message);
      }
      m.clock.advance(1000);
    }
  }

  async function fleet(yaml: string) {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10', UNHEALTHY_CLUSTER_THRESHOLD: '0.9' });
    await applyTo(
      m,
      ['member1', 'member2', 'member3', 'member4', 'member5'].map((n) => cluster(n)),
    );
    expect((await applyYaml(m, yaml)).results).toHaveLength(2);
    await scheduleAll(m.plane);
    return m;
  }

  it('Duplicated: [member1, member2]; member2 fails; [member1, member3] (member4 does not match the affinity)', async () => {
    const m = await fleet(SEED_001_DUPLICATED);
    expect(await placement(m)).toEqual(['member1:2', 'member2:2']);
    await failover(m, 'member2');
    expect(await placement(m)).toEqual(['member1:2', 'member3:2']);
  });

  it('Divided: member1 1 and member2 2; member1 fails; member2 3', async () => {
    const m = await fleet(SEED_001_DIVIDED);
    expect(await placement(m)).toEqual(['member1:1', 'member2:2']);
    await failover(m, 'member1');
    expect(await placement(m)).toEqual(['member2:3']);
  });
});
