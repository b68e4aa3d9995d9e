import type { ApplyAnswer } from '../api/contract/views';
import type { AppliedObject } from '../api/decode';
import { reportedErrors } from '../api/decode';
import { ApiError, FieldError, ManagedInKarmadaError } from '../api/errors';
import { mapConcurrent } from '../concurrency';
import { applyBindings } from './bindingBatch';
import { applyBinding } from './bindings';
import { applyBudget } from './budgets';
import { applyCluster } from './clusters';
import type { ControlPlane } from './ports';
import { applyPropagationPolicies, applyPropagationPolicy } from './propagationPolicies';
import type { ApplyAction } from './state/derivation';
import { underDerivationIntent } from './state/derivation';
import { applyTaintPolicy } from './taintPolicies';
import { applyTemplate, applyTemplates, newTemplateRecord } from './templates';

export type { ApplyAction } from './state/derivation';

/** How many consecutive Clusters of one request are applied at once (each is its own document, ETag-checked). */
const CLUSTER_CONCURRENCY = 8;
/** Room an object must leave in its stored document for what the app adds later (status, conditions, claims). */
export const STATUS_RESERVE_BYTES = 64 * 1024;

/** How a store measures a document (DocumentStore.measure). */
export type DocumentMeasure = (value: unknown) => { bytes: number; limit: number };

/**
 * The objects that would not fit in one stored document ("ConfigMap default/big", its index and size): each
 * measured as it will be stored (a template as its record, with its labels and annotations twice; one of ours
 * without the status it ignores).
 */
export function objectsTooLargeToStore(
  objects: readonly AppliedObject[],
  measure: DocumentMeasure,
): Array<{ document: number; object: string; bytes: number; limit: number; entityLimit: number }> {
  const found: Array<{ document: number; object: string; bytes: number; limit: number; entityLimit: number }> = [];
  objects.forEach((item, document) => {
    let stored: unknown;
    if (item.kind === 'ResourceTemplate') stored = newTemplateRecord(item.object, new Date(0));
    else {
      const { status: _ignored, ...rest } = item.object as Record<string, unknown>;
      stored = rest;
    }
    const { bytes, limit: entityLimit } = measure(stored);
    const limit = entityLimit - STATUS_RESERVE_BYTES;
    if (bytes > limit)
      found.push({ document, object: `${item.kind === 'ResourceTemplate' ? item.object.kind : item.kind} ${item.name}`, bytes, limit, entityLimit });
  });
  return found;
}

/**
 * Refuses a request none of whose objects may be applied here, before any is written (all or nothing): in
 * Karmada mode every kind we accept is Karmada's, applied to its API server; an object the store would refuse
 * (too large) is refused before the ones ahead of it are written.
 */
export function refuseUnstorable(plane: ControlPlane, objects: readonly AppliedObject[]): void {
  const first = objects[0];
  if (plane.karmada && first) throw new ManagedInKarmadaError(first.kind === 'ResourceTemplate' ? first.object.kind : first.kind);
  // Every table store keeps a document the same way: the templates' store measures for all kinds.
  const measure = plane.templates.measure?.bind(plane.templates);
  const tooLarge = measure ? objectsTooLargeToStore(objects, measure) : [];
  if (tooLarge.length > 0) {
    const errors: FieldError[] = tooLarge.map(({ document, object, bytes, limit, entityLimit }) => ({
      document,
      path: '',
      message: `${object} is too large to store: ${bytes} bytes stored, the limit is ${limit} (one storage entity of ${entityLimit} bytes, less room for its status)`,
    }));
    const what = tooLarge.length === 1 ? `${tooLarge[0].object} is` : `${tooLarge.length} objects are`;
    throw new ApiError(413, `${what} too large to store; nothing was applied`, reportedErrors(errors));
  }
}

/**
 * POST /api/apply: validated objects; the app's own kinds in the order given (consecutive Clusters several at
 * a time, every propagation policy at the first one's place), then the resource templates, together
 * (`applyTemplates`; each is claimed by the policies as they stand after the request's own policies, so a
 * template and its policy in one request derive the binding once). Consecutive bindings go together
 * (`applyBindings`). Results in the order given.
 */
export async function applyObjects(plane: ControlPlane, objects: AppliedObject[]): Promise<ApplyAnswer['results']> {
  refuseUnstorable(plane, objects);
  const actions = new Array<ApplyAction>(objects.length);
  const templates: number[] = [];
  for (let index = 0; index < objects.length; index++) {
    const item = objects[index];
    if (item.kind === 'ResourceTemplate') templates.push(index);
    else if (isBinding(item)) {
      // Consecutive bindings are applied together (a bulk import costs a few requests per hundred).
      const run = [index];
      while (run.length < objects.length - index && isBinding(objects[index + run.length])) run.push(index + run.length);
      const applied = await applyBindings(
        plane,
        run.map((i) => (objects[i] as AppliedBinding).object),
      );
      run.forEach((i, k) => (actions[i] = applied[k]));
      index += run.length - 1;
    } else if (isPropagationPolicy(item)) {
      // Every policy of the request is stored here, then derived once together: a request of many policies
      // derives each template and binding they affect once, not once per policy. Where the request puts them
      // does not change the outcome: a binding applied before a policy is derived again under it.
      if (actions[index] !== undefined) continue;
      const run = objects.flatMap((object, i) => (i >= index && isPropagationPolicy(object) ? [i] : []));
      const applied = await applyPropagationPolicies(
        plane,
        run.map((i) => (objects[i] as AppliedPolicy).object),
      );
      run.forEach((i, k) => (actions[i] = applied[k]));
    } else if (item.kind === 'Cluster') {
      // Consecutive Clusters go side by side, as their health reports would: several failing at once start
      // their taint evaluation and planning together (a request names an object once: decode refuses twice).
      let end = index + 1;
      while (objects[end]?.kind === 'Cluster') end++;
      const run = Array.from({ length: end - index }, (_, k) => index + k);
      // The first failure stops the run as it would stop one object after another: no Cluster is started
      // after it, and those already started finish before the request answers.
      let failure: { error: unknown } | undefined;
      await mapConcurrent(run, CLUSTER_CONCURRENCY, async (i) => {
        if (failure) return;
        try {
          actions[i] = await applyOne(plane, objects[i]);
        } catch (error) {
          failure ??= { error };
        }
      });
      if (failure) throw failure.error;
      index = end - 1;
    } else actions[index] = await applyOne(plane, item);
  }
  // One derivation intent for the request's templates: a host killed between storing a template and deriving
  // its binding leaves it open, and the write journal's repair derives every template again.
  if (templates.length > 0)
    await underDerivationIntent(plane, async () => {
      const applied = await applyTemplates(
        plane,
        templates.map((index) => (objects[index] as AppliedTemplate).object),
      );
      templates.forEach((index, k) => (actions[index] = applied[k]));
    });
  return objects.map((item, index) => ({ kind: item.kind === 'ResourceTemplate' ? item.object.kind : item.kind, name: item.name, action: actions[index] }));
}

type AppliedPolicy = Extract<AppliedObject, { kind: 'PropagationPolicy' | 'ClusterPropagationPolicy' }>;
const isPropagationPolicy = (item: AppliedObject): item is AppliedPolicy => item.kind === 'PropagationPolicy' || item.kind === 'ClusterPropagationPolicy';
type AppliedBinding = Extract<AppliedObject, { kind: 'ResourceBinding' | 'ClusterResourceBinding' }>;
type AppliedTemplate = Extract<AppliedObject, { kind: 'ResourceTemplate' }>;
const isBinding = (item: AppliedObject): item is AppliedBinding => item.kind === 'ResourceBinding' || item.kind === 'ClusterResourceBinding';

function applyOne(plane: ControlPlane, item: AppliedObject): Promise<ApplyAction> {
  switch (item.kind) {
    case 'Cluster':
      return applyCluster(plane, item.object);
    case 'ClusterTaintPolicy':
      return applyTaintPolicy(plane, item.object);
    case 'PropagationPolicy':
    case 'ClusterPropagationPolicy':
      return applyPropagationPolicy(plane, item.object);
    case 'ResourceBinding':
    case 'ClusterResourceBinding':
      return applyBinding(plane, item.object);
    case 'FailoverBudget':
      return applyBudget(plane, item.object);
    case 'ResourceTemplate':
      return applyTemplate(plane, item.object);
  }
}
