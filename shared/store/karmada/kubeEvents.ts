import { createHash } from 'node:crypto';
import { KARMADA, KubeApi, KubeApiError, KubeResource } from '../../kube/api';
import { errorFields, Logger, StateChanges } from '../../telemetry/log';
import type { EventLog, EventQuery, EventRecord } from '../ports';
import { knownUid, noteUid } from './kubeObjects';

/** The namespace Kubernetes puts events about cluster-scoped objects in. */
const CLUSTER_SCOPED_EVENTS_NAMESPACE = 'default';
const REPORTING_CONTROLLER = 'failover.io/cluster-failover';
/** The one subject of KubeMirroredEventLog's failures: posting Events at all. */
const POSTING = 'posting';

const REGARDING: Record<string, KubeResource> = {
  Cluster: KARMADA.clusters,
  ClusterTaintPolicy: KARMADA.clusterTaintPolicies,
  ResourceBinding: KARMADA.resourceBindings,
  ClusterResourceBinding: KARMADA.clusterResourceBindings,
};

/** RFC 3339 with exactly six fractional digits: the API server refuses a MicroTime with milliseconds. */
export function microTime(iso: string): string {
  const date = new Date(iso);
  return `${date.toISOString().slice(0, 19)}.${String(date.getUTCMilliseconds()).padStart(3, '0')}000Z`;
}

/**
 * Our event history, and each event on a Karmada object also as an `events.k8s.io/v1` Event, so
 * `kubectl describe cluster member1` says why it is tainted. The Kubernetes copy is best effort: a
 * decision is never undone because its event could not be posted (the table keeps it).
 */
export class KubeMirroredEventLog implements EventLog {
  /** Why posting failed last: a failure that repeats for every event is logged when it begins or changes. */
  private readonly failures = new StateChanges();

  constructor(
    private readonly inner: EventLog,
    private readonly api: KubeApi,
    private readonly log: Logger,
    private readonly instance: string,
  ) {}

  list(query: EventQuery): Promise<EventRecord[]> {
    return this.inner.list(query);
  }

  async append(events: EventRecord[]): Promise<void> {
    await this.inner.append(events);
    await Promise.all(events.filter((e) => REGARDING[e.kind]).map((e) => this.post(e)));
  }

  private async post(event: EventRecord): Promise<void> {
    const resource = REGARDING[event.kind];
    const [namespace, name] = resource.namespaced && event.name.includes('/') ? event.name.split('/', 2) : [undefined, event.name];
    const eventNamespace = namespace ?? CLUSTER_SCOPED_EVENTS_NAMESPACE;
    // A retried step records its event once: the same id gives the same Event name (409 on the second post).
    const digest = createHash('sha256')
      .update(event.id ?? `${event.time}|${event.kind}|${event.name}|${event.reason}|${event.message}`)
      .digest('hex')
      .slice(0, 16);
    try {
      const uid = await this.uidOf(resource, name, namespace);
      await this.api.create(KARMADA.events, eventNamespace, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: `${name}.${digest}`.slice(0, 253), namespace: eventNamespace },
        eventTime: microTime(event.time),
        reportingController: REPORTING_CONTROLLER,
        reportingInstance: this.instance,
        action: event.reason,
        reason: event.reason,
        note: event.message.slice(0, 1024),
        type: event.type,
        regarding: {
          apiVersion: `${resource.group}/${resource.version}`,
          kind: resource.kind,
          name,
          ...(namespace ? { namespace } : {}),
          ...(uid ? { uid } : {}),
        },
      });
      if (this.failures.cleared(POSTING)) this.log.info('Kubernetes Events posted again');
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 409) return;
      // An outage or a refusal is reported by the API's access tracking, and the line below (errorCondition) is then written at debug.
      const why = error instanceof KubeApiError ? `${error.status} ${error.reason}` : String(error);
      if (!this.failures.changed(POSTING, why)) return;
      this.log.warn('Kubernetes Event not posted (kept in the event history; said again when the failure changes)', {
        kind: event.kind,
        name: event.name,
        reason: event.reason,
        ...errorFields(error),
      });
    }
  }

  /** kubectl describe finds events by the object's uid too: known from the stores' reads, else looked up once. */
  private async uidOf(resource: KubeResource, name: string, namespace?: string): Promise<string | undefined> {
    const known = knownUid(this.api, resource.kind, name, namespace);
    if (known) return known;
    const object = await this.api.get(resource, name, namespace);
    if (object) noteUid(this.api, resource.kind, object);
    return object?.metadata.uid;
  }
}
