import { AsyncLocalStorage } from 'node:async_hooks';
import { type InvocationContext, output, type StorageQueueOutput } from '@azure/functions';
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

const HANDED_OFF: readonly StorageQueueOutput[] = [taintManagerOutput];

const outbox = new AsyncLocalStorage<Map<string, unknown[]>>();

/**
 * Registration options for a function whose taint-manager messages go through the output binding: spread
 * into `app.http/timer/storageQueue`. Outputs are set only when the handler returns; a failed invocation
 * writes none (its writes are retried with it, or found by the taint manager's resync).
 */
export function handingOff<T, R>(handler: (trigger: T, ctx: InvocationContext) => R | Promise<R>) {
  return {
    extraOutputs: [...HANDED_OFF],
    handler: async (trigger: T, ctx: InvocationContext): Promise<R> => {
      const boxes = new Map(HANDED_OFF.map((binding) => [String(binding.queueName), [] as unknown[]]));
      const result = await outbox.run(boxes, async () => handler(trigger, ctx));
      for (const binding of HANDED_OFF) {
        const messages = boxes.get(String(binding.queueName))!;
        if (messages.length > 0) ctx.extraOutputs.set(binding, messages);
      }
      return result;
    },
  };
}

/** Puts `message` in the running invocation's output for `queueName`; false when there is none (send it yourself). */
export function handOff(queueName: string, message: unknown): boolean {
  const box = outbox.getStore()?.get(queueName);
  if (!box) return false;
  box.push(message);
  return true;
}
