import { QueueClient } from '@azure/storage-queue';
import type { MessageQueue, Outbox, SendOptions } from '../store/ports';
import { ATTR, currentTraceCarrier, inSpan, SpanKind } from '../telemetry/tracing';
import { encodeMessage } from './encoding';

export { QUEUES } from './names';

// Azure Storage allows at most 7 days of initial invisibility.
const MAX_DELAY_SECONDS = 604_800;

export type { MessageQueue, SendOptions } from '../store/ports';

/** Adapter: an Azure Storage queue, base64 JSON messages, visibility delays for scheduling. */
export class StorageMessageQueue<T> implements MessageQueue<T> {
  constructor(
    private readonly client: QueueClient,
    private readonly outbox?: Outbox,
  ) {}

  through(outbox: Outbox): StorageMessageQueue<T> {
    return new StorageMessageQueue<T>(this.client, outbox);
  }

  async send(message: T, options: SendOptions = {}): Promise<void> {
    const delay = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor(options.delaySeconds ?? 0)));
    // A PRODUCER span, and its context in the message, so that the consumer continues this trace.
    await inSpan(
      `send ${this.client.name}`,
      { kind: SpanKind.PRODUCER, attributes: { [ATTR.queue]: this.client.name, 'messaging.delay_seconds': delay } },
      async () => {
        const body = { ...message, ...currentTraceCarrier() };
        const sendDirectly = async (payload: unknown, visibilityTimeout = 0) => {
          await this.client.sendMessage(encodeMessage(payload), { visibilityTimeout, messageTimeToLive: -1 });
        };
        if (delay === 0 && this.outbox?.hold(this.client.name, body, sendDirectly)) return;
        await sendDirectly(body, delay);
      },
    );
  }
}
