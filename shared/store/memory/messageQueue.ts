import { encodeMessage } from '../../queue/encoding';
import type { MessageQueue, SendOptions } from '../ports';
import { MemoryStorageError } from './errors';
import { FaultOptions, Faults } from './faults';

/** One message sent to a `MemoryMessageQueue`. */
export interface SentMessage<T> {
  message: T;
  /** The delay it was sent with, as the Storage queue adapter applies it (whole seconds, 0 to 7 days). */
  delaySeconds: number;
  sentAt: Date;
  /** When it becomes visible: `sentAt` + `delaySeconds`. */
  visibleAt: Date;
  /** Send order, from 0. */
  sequence: number;
}

// The Storage queue adapter's limits: at most 7 days of initial invisibility, 64 KiB a message.
const MAX_DELAY_SECONDS = 604_800;
const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * A queue in memory that records what was sent, for tests. Messages are stored as the Storage queue
 * adapter sends them: as JSON (a copy, without what JSON drops), with the delay cut to whole seconds
 * between 0 and 7 days, refused above 64 KiB (base64), visible at send time + delay by `now()`.
 * Nothing consumes them: a test takes the visible ones (`takeVisible`) or all (`takeAll`) and runs the
 * handler itself. `failNext('send', error)` makes one send fail.
 */
export class MemoryMessageQueue<T> implements MessageQueue<T> {
  private queued: Array<{ json: string; delaySeconds: number; sentAt: number; visibleAt: number; sequence: number }> = [];
  private sequence = 0;
  readonly faults = new Faults<'send'>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  failNext(method: 'send', error: Error, options?: FaultOptions): void {
    this.faults.failNext(method, error, options);
  }

  send(message: T, options: SendOptions = {}): Promise<void> {
    return this.faults.run('send', [message, options], true, () => {
      const delaySeconds = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor(options.delaySeconds ?? 0)));
      const json = JSON.stringify(message);
      if (Buffer.byteLength(encodeMessage(message)) > MAX_MESSAGE_BYTES)
        throw new MemoryStorageError(413, 'RequestBodyTooLarge', 'the message is larger than 64 KiB');
      const sentAt = this.now().getTime();
      this.queued.push({ json, delaySeconds, sentAt, visibleAt: sentAt + delaySeconds * 1000, sequence: this.sequence++ });
    });
  }

  /** Every message not taken yet, in send order. */
  messages(): Array<SentMessage<T>> {
    return this.queued.map(copy<T>);
  }

  /** The messages not taken yet that are visible at `at` (default now), in visibility order. */
  visible(at: Date = this.now()): Array<SentMessage<T>> {
    return this.queued
      .filter((m) => m.visibleAt <= at.getTime())
      .sort(byVisibility)
      .map(copy<T>);
  }

  /** Removes and returns the messages visible at `at` (default now), in visibility order (then send order). */
  takeVisible(at: Date = this.now()): Array<SentMessage<T>> {
    const taken = this.queued.filter((m) => m.visibleAt <= at.getTime());
    this.queued = this.queued.filter((m) => m.visibleAt > at.getTime());
    return taken.sort(byVisibility).map(copy<T>);
  }

  /** Removes and returns every message, in send order. */
  takeAll(): Array<SentMessage<T>> {
    const taken = this.queued;
    this.queued = [];
    return taken.map(copy<T>);
  }

  /** When the next message not taken yet becomes visible (for a test clock to jump to). */
  nextVisibleAt(): Date | undefined {
    const first = [...this.queued].sort(byVisibility)[0];
    return first && new Date(first.visibleAt);
  }

  get size(): number {
    return this.queued.length;
  }

  /** How many messages were ever sent. */
  get sent(): number {
    return this.sequence;
  }
}

const byVisibility = (a: { visibleAt: number; sequence: number }, b: { visibleAt: number; sequence: number }) =>
  a.visibleAt - b.visibleAt || a.sequence - b.sequence;

function copy<T>(m: { json: string; delaySeconds: number; sentAt: number; visibleAt: number; sequence: number }): SentMessage<T> {
  return { message: JSON.parse(m.json) as T, delaySeconds: m.delaySeconds, sentAt: new Date(m.sentAt), visibleAt: new Date(m.visibleAt), sequence: m.sequence };
}
