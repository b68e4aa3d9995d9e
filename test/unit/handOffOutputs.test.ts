import { describe, expect, it } from 'vitest';
import { installFunctionsCore } from '../../shared/local/functionsCore';
installFunctionsCore();
import { InvocationContext } from '@azure/functions';
import { evictionsOutput, handingOff, outboxOf, taintManagerOutput } from '../../shared/queue/handOff';
import { QUEUES } from '../../shared/queue/names';

/** A function chooses the queues it hands messages off to (the pacer's: evictions). */
describe('hand-off outputs', () => {
  it('declares and fills only the outputs it was given', async () => {
    const ctx = new InvocationContext({ functionName: 'pacer' });
    const registration = handingOff(
      async (_trigger: unknown, invocation: InvocationContext) => {
        expect(outboxOf(invocation)!.hold(QUEUES.evictions, { evictions: [1] }, async () => undefined)).toBe(true);
        expect(outboxOf(invocation)!.hold(QUEUES.taintManager, { cluster: 'a' }, async () => undefined)).toBe(false);
      },
      [evictionsOutput],
    );
    expect(registration.extraOutputs).toEqual([evictionsOutput]);
    await registration.handler(undefined, ctx);
    expect(ctx.extraOutputs.get(evictionsOutput)).toEqual([{ evictions: [1] }]);
    expect(evictionsOutput.queueName).toBe(QUEUES.evictions);
  });

  it('keeps the taint-manager output by default, and has no outbox outside an invocation', async () => {
    expect(handingOff(async () => undefined).extraOutputs).toEqual([taintManagerOutput]);
    const ctx = new InvocationContext({ functionName: 'pacer' });
    expect(outboxOf(ctx)).toBeUndefined();
    await handingOff(async () => undefined).handler(undefined, ctx);
    expect(outboxOf(ctx)).toBeUndefined();
  });

  it('sends the held evictions itself when the pass fails after marking its rows', async () => {
    const ctx = new InvocationContext({ functionName: 'pacer' });
    const sent: unknown[] = [];
    const failing = handingOff(
      async (_trigger: unknown, invocation: InvocationContext) => {
        outboxOf(invocation)!.hold(QUEUES.evictions, { evictions: [2] }, async (message) => void sent.push(message));
        throw new Error('deleteDue failed');
      },
      [evictionsOutput],
    );
    await expect(failing.handler(undefined, ctx)).rejects.toThrow('deleteDue failed');
    expect(sent).toEqual([{ evictions: [2] }]);
  });
});
