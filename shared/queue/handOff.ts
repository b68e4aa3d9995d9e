import { type InvocationContext, output, type StorageQueueOutput } from '@azure/functions';
import type { Outbox } from '../store/ports';
import { QUEUES } from './names';

/**
 * Messages an invocation hands to the Functions host through a queue output binding instead of sending them
 * itself. The host writes them when the invocation succeeds and, because they come from a binding, wakes its
 * own listener of that queue at once (the WebJobs SharedQueueWatcher): the next function starts within
 * milliseconds instead of after the idle poll (up to host.json maxPollingInterval). A message with a
 * visibility delay cannot go through a binding and is sent directly, as is one sent outside such an invocation.
 */

/** The taint manager's queue: a cluster's faulty taints changed. */
export const taintManagerOutput: StorageQueueOutput = output.storageQueue({ queueName: QUEUES.taintManager, connection: 'AzureWebJobsStorage' });

/**
 * The eviction worker's queue: paced evictions whose slot is near (no visibility delay). Handed off by the
 * functions that run the pacer (its timer, and the taint manager's pass right after planning): the worker's
 * listener is woken at once instead of at its next poll, so a message is received well inside the slot's
 * lead even on a busy host. The lead itself stays a poll's (MIN_SLOT_LEAD_MS): a message received late would
 * run its passed slots together and the rate, measured, would exceed its setting.
 */
export const evictionsOutput: StorageQueueOutput = output.storageQueue({ queueName: QUEUES.evictions, connection: 'AzureWebJobsStorage' });

const HANDED_OFF: readonly StorageQueueOutput[] = [taintManagerOutput];

/** One queue's held messages in a running invocation, by content (a repeat adds nothing), and how to send one directly. */
interface Held {
  messages: Map<string, unknown>;
  sendDirectly?: (message: unknown) => Promise<void>;
}

/** The messages one invocation holds for its queue outputs. */
class InvocationOutbox implements Outbox {
  readonly held: Map<string, Held>;

  constructor(outputs: readonly StorageQueueOutput[]) {
    this.held = new Map(outputs.map((binding) => [String(binding.queueName), { messages: new Map() }]));
  }

  /** Messages equal but for their trace context are held once (the first trace kept). */
  hold(queueName: string, message: object, sendDirectly: (message: unknown) => Promise<void>): boolean {
    const held = this.held.get(queueName);
    if (!held) return false;
    held.sendDirectly ??= sendDirectly;
    const key = JSON.stringify(message, (name, value: unknown) => (name === 'traceparent' || name === 'tracestate' ? undefined : value));
    if (!held.messages.has(key)) held.messages.set(key, message);
    return true;
  }
}

const outboxes = new WeakMap<InvocationContext, InvocationOutbox>();

/**
 * The outbox of a running invocation registered with `handingOff` (undefined otherwise): a trigger builds
 * its plane's queues through it (shared/runtime.ts `invocationPlane`), so whoever sends there hands off.
 */
export const outboxOf = (ctx: InvocationContext): Outbox | undefined => outboxes.get(ctx);

/**
 * Registration options for a function whose messages go through its output bindings: spread into
 * `app.http/timer/storageQueue`. Outputs are set when the handler returns. When it throws, the host
 * would write none, but what the messages announce is already stored (a retry would find nothing changed
 * and send nothing): they are sent directly before the error goes on. Only for functions that finish in
 * moments: a message waits for the end of its invocation.
 */
export function handingOff<T, R>(handler: (trigger: T, ctx: InvocationContext) => R | Promise<R>, outputs: readonly StorageQueueOutput[] = HANDED_OFF) {
  return {
    extraOutputs: [...outputs],
    handler: async (trigger: T, ctx: InvocationContext): Promise<R> => {
      const outbox = new InvocationOutbox(outputs);
      outboxes.set(ctx, outbox);
      let result: R;
      try {
        result = await handler(trigger, ctx);
      } catch (error) {
        const sends = [...outbox.held.values()].flatMap(({ messages, sendDirectly }) => (sendDirectly ? [...messages.values()].map(sendDirectly) : []));
        await Promise.allSettled(sends);
        throw error;
      } finally {
        outboxes.delete(ctx);
      }
      for (const binding of outputs) {
        const messages = [...outbox.held.get(String(binding.queueName))!.messages.values()];
        if (messages.length > 0) ctx.extraOutputs.set(binding, messages);
      }
      return result;
    },
  };
}
