import { QueueClient } from '@azure/storage-queue';
import type { MessageQueue, SendOptions } from '../store/ports';
import { ATTR, currentTraceCarrier, inSpan, SpanKind } from '../telemetry/tracing';
import { encodeMessage } from './encoding';

/** Queue names this app uses. The poison queues are `<name>-poison`. */
export const QUEUES = {
  taintEvaluations: 'taint-evaluations',
  /** Clusters whose faulty taints changed: plan or abandon their evictions. */
  taintManager: 'taint-manager',
  /** Paced evictions, visible at their send slot. */
  evictions: 'evictions',
  /** Bindings to place (new, or a cluster lost to eviction). */
  scheduler: 'scheduler',
  /** Application failover deadline checks, visible shortly before their deadline. */
  applicationFailover: 'application-failover',
} as const;

// Azure Storage allows at most 7 days of initial invisibility.
const MAX_DELAY_SECONDS = 604_800;

export type { MessageQueue, SendOptions } from '../store/ports';

/** Adapter: an Azure Storage queue, base64 JSON messages, visibility delays for scheduling. */
export class StorageMessageQueue<T> implements MessageQueue<T> {
  constructor(private readonly client: QueueClient) {}

  async send(message: T, options: SendOptions = {}): Promise<void> {
    const delay = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor(options.delaySeconds ?? 0)));
    // A PRODUCER span, and its context in the message, so that the consumer continues this trace.
    await inSpan(
      `send ${this.client.name}`,
      { kind: SpanKind.PRODUCER, attributes: { [ATTR.queue]: this.client.name, 'messaging.delay_seconds': delay } },
      async () => {
        await this.client.sendMessage(encodeMessage({ ...message, ...currentTraceCarrier() }), { visibilityTimeout: delay, messageTimeToLive: -1 });
      },
    );
  }
}
