import type { QueueClient } from '@azure/storage-queue';
import { decodeMessage } from '../queue/encoding';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { HostSettings } from './hostJson';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';

/**
 * The local host's Storage queue triggers, with the Functions host's semantics and host.json settings:
 * base64 messages, `batchSize` and `newBatchThreshold`, randomized exponential back-off up to
 * `maxPollingInterval` between empty polls (nextPollDelay), `visibilityTimeout` before a failed message is retried,
 * `maxDequeueCount` then `<queue>-poison`. A message that is not valid base64 goes straight to poison.
 */

export interface QueueRunnerOptions {
  queue: (name: string) => QueueClient;
  settings: HostSettings['queues'];
  /** How long a dequeued message stays invisible while its function runs, renewed meanwhile. */
  holdSeconds?: number;
  log: Logger;
  lifecycle: HostLifecycle;
  invoke: Invoke;
}

// The Functions host holds a dequeued message for 10 minutes while the function runs, renewing it.
const QUEUE_HOLD_SECONDS = 600;

/** The wait before the next poll after an empty one, and how far the back-off has gone. */
export interface PollBackoff {
  delayMs: number;
  exponent: number;
}

const MIN_POLL_INTERVAL_MS = 100;
const RANDOMIZATION = 0.2;

/**
 * The Functions host's randomized exponential back-off between empty polls (WebJobs'
 * RandomizedExponentialBackoffStrategy, minimum and delta 100 ms): 100 ms, then 100 ms + (2^(n-1) × 100 ms
 * ± 20 %), until that reaches maxPollingInterval; from then on exactly maxPollingInterval, with no jitter, so
 * an idle queue costs one poll per maxPollingInterval, as in Azure. A message resets it (`previous` undefined).
 */
export function nextPollDelay(previous: PollBackoff | undefined, maxPollingIntervalMs: number, random: () => number = Math.random): PollBackoff {
  if (!previous) return { delayMs: Math.min(MIN_POLL_INTERVAL_MS, maxPollingIntervalMs), exponent: 1 };
  if (previous.delayMs >= maxPollingIntervalMs) return previous;
  const factor = 1 - RANDOMIZATION + random() * 2 * RANDOMIZATION;
  const delayMs = MIN_POLL_INTERVAL_MS + factor * 2 ** (previous.exponent - 1) * MIN_POLL_INTERVAL_MS;
  return delayMs < maxPollingIntervalMs ? { delayMs, exponent: previous.exponent + 1 } : { delayMs: maxPollingIntervalMs, exponent: previous.exponent };
}

type Message = { messageId: string; popReceipt: string; messageText: string; dequeueCount: number; insertedOn: Date; expiresOn: Date; nextVisibleOn: Date };

export class QueueRunner {
  /** Per queue: how to wake its poller now, or that a wake came while it was not sleeping. */
  private readonly wakers = new Map<string, (() => void) | 'pending'>();

  constructor(private readonly options: QueueRunnerOptions) {}

  /** This host wrote messages to `queueName` through a binding: its poller (if any) polls now, its back-off reset. */
  notify(queueName: string): void {
    const wake = this.wakers.get(queueName);
    if (typeof wake === 'function') wake();
    else this.wakers.set(queueName, 'pending');
  }

  /** Sleeps `ms` unless notified first: 'woken', 'slept', or 'stopped' when the host stops. */
  private async idle(queueName: string, ms: number): Promise<'woken' | 'slept' | 'stopped'> {
    if (this.wakers.get(queueName) === 'pending') {
      this.wakers.delete(queueName);
      return this.options.lifecycle.stopping ? 'stopped' : 'woken';
    }
    let wake!: () => void;
    const woken = new Promise<'woken'>((resolve) => (wake = () => resolve('woken')));
    this.wakers.set(queueName, wake);
    try {
      return await Promise.race([this.options.lifecycle.sleep(ms).then((slept) => (slept ? 'slept' : 'stopped')), woken]);
    } finally {
      if (this.wakers.get(queueName) === wake) this.wakers.delete(queueName);
    }
  }

  private get holdSeconds(): number {
    return this.options.holdSeconds ?? QUEUE_HOLD_SECONDS;
  }

  /** Polls `fn`'s queue and runs it on each message until the host stops, then waits for its messages. */
  async run(fn: RegisteredFunction): Promise<void> {
    const { lifecycle, log } = this.options;
    const queueName = String(triggerOf(fn).queueName);
    const client = this.options.queue(queueName);
    const poison = queueName.endsWith('-poison') ? undefined : this.options.queue(`${queueName}-poison`);
    const { batchSize, newBatchThreshold, maxPollingIntervalMs } = this.options.settings;
    const mine = new Set<Promise<void>>();
    let backoff: PollBackoff | undefined;
    while (!lifecycle.stopping) {
      // Fetch another batch only when in-flight work has dropped to newBatchThreshold, as the host does.
      while (mine.size > newBatchThreshold && !lifecycle.stopping) await Promise.race(mine);
      if (lifecycle.stopping) break;
      let received;
      try {
        received = await client.receiveMessages({ numberOfMessages: batchSize, visibilityTimeout: this.holdSeconds });
      } catch (error) {
        log.warn('queue poll failed', { queue: queueName, ...errorFields(error) });
        received = undefined;
      }
      const messages = received?.receivedMessageItems ?? [];
      if (messages.length === 0) {
        backoff = nextPollDelay(backoff, maxPollingIntervalMs);
        const after = await this.idle(queueName, backoff.delayMs);
        if (after === 'stopped') break;
        if (after === 'woken') backoff = undefined;
        continue;
      }
      backoff = undefined;
      for (const message of messages) {
        const work = lifecycle.track(this.process(fn, client, poison, message));
        mine.add(work);
        void work.finally(() => mine.delete(work));
      }
    }
    await Promise.allSettled([...mine]);
  }

  private async process(fn: RegisteredFunction, client: QueueClient, poison: QueueClient | undefined, message: Message): Promise<void> {
    const { log } = this.options;
    const { maxDequeueCount, visibilityTimeoutMs, messageEncoding } = this.options.settings;
    const queueName = client.name;
    // Keep the message invisible while the function runs, as the host does; each renewal changes the receipt.
    const hold = this.holdSeconds;
    let renewing = Promise.resolve();
    const renewal = setInterval(
      () => {
        renewing = renewing.then(async () => {
          try {
            const updated = await client.updateMessage(message.messageId, message.popReceipt, undefined, hold);
            if (updated.popReceipt) message.popReceipt = updated.popReceipt;
          } catch (error) {
            log.warn('could not renew message visibility', { queue: queueName, ...errorFields(error) });
          }
        });
      },
      (hold * 1000) / 3,
    );
    const stopRenewing = async () => {
      clearInterval(renewal);
      await renewing;
    };
    const toPoison = async (why: string) => {
      await stopRenewing();
      if (poison) {
        await poison.createIfNotExists();
        await poison.sendMessage(message.messageText, { messageTimeToLive: -1 });
      }
      await client.deleteMessage(message.messageId, message.popReceipt);
      log.warn('message moved to poison queue', { queue: queueName, messageId: message.messageId, dequeueCount: message.dequeueCount, reason: why });
    };
    let value: unknown = message.messageText;
    if (messageEncoding === 'base64') {
      const decoded = decodeMessage(message.messageText);
      if (!decoded.ok) return toPoison(decoded.reason);
      value = decoded.value;
    }
    const triggerMetadata = {
      id: message.messageId,
      popReceipt: message.popReceipt,
      dequeueCount: message.dequeueCount,
      insertionTime: message.insertedOn.toISOString(),
      expirationTime: message.expiresOn.toISOString(),
      nextVisibleTime: message.nextVisibleOn.toISOString(),
      queueTrigger: typeof value === 'string' ? value : JSON.stringify(value),
    };
    try {
      await this.options.invoke(fn, [value], { trigger: 'queue', triggerMetadata, fields: () => ({ queue: queueName, dequeueCount: message.dequeueCount }) });
    } catch (error) {
      await stopRenewing();
      try {
        if (message.dequeueCount >= maxDequeueCount) await toPoison(`failed ${message.dequeueCount} time(s): ${(error as Error)?.message ?? error}`);
        else await client.updateMessage(message.messageId, message.popReceipt, undefined, Math.round(visibilityTimeoutMs / 1000));
      } catch (releaseError) {
        log.warn('could not release failed message', { queue: queueName, ...errorFields(releaseError) });
      }
      return;
    }
    await stopRenewing();
    try {
      await client.deleteMessage(message.messageId, message.popReceipt);
    } catch (error) {
      log.warn('could not delete processed message', { queue: queueName, ...errorFields(error) });
    }
  }
}
