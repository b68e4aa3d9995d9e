import { randomUUID } from 'node:crypto';
import { InvocationContext, LogLevel as FunctionsLogLevel } from '@azure/functions';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';

/**
 * One invocation of a registered function, as the Functions host runs it: a fresh InvocationContext whose
 * ctx.log/info/warn/error lines go to the host's logger, the host.json functionTimeout, and one
 * "invocation" log line at the end (function, trigger, duration, outcome). Shared by the HTTP, timer and
 * queue runners.
 */

export interface InvokeOptions {
  trigger: 'http' | 'timer' | 'queue';
  /** `ctx.triggerMetadata` (queue triggers: id, popReceipt, dequeueCount, ...). */
  triggerMetadata?: Record<string, unknown>;
  /** Fields for the invocation line, read when the invocation ends (an HTTP status is known only then). */
  fields?: () => Record<string, unknown>;
  /**
   * Write the invocation line at debug when the invocation succeeded and the function logged nothing.
   * Timers use it: the pacer runs every second, and a line per idle tick drowns everything else.
   */
  debugWhenIdle?: boolean;
  /** Write the invocation line at debug when this says so at its end (HTTP: a read answered without error). */
  quiet?: () => boolean;
}

export type Invoke = (fn: RegisteredFunction, args: unknown[], options: InvokeOptions) => Promise<unknown>;

/** Writes a successful invocation's output bindings (ctx.extraOutputs), as the host does after the function returns. */
export type WriteOutputs = (fn: RegisteredFunction, ctx: InvocationContext) => Promise<void>;

export function createInvoker(log: Logger, functionTimeoutMs: number, writeOutputs?: WriteOutputs): Invoke {
  return async (fn, args, options) => {
    const started = performance.now();
    const { ctx, loggedSomething } = invocationContext(fn, log, options.triggerMetadata);
    let outcome = 'succeeded';
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        Promise.resolve().then(() => fn.handler(...args, ctx)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`function timed out after ${functionTimeoutMs} ms (functionTimeout)`)), functionTimeoutMs);
        }),
      ]);
      // A binding that cannot be written fails the invocation (a queue message is then retried).
      await writeOutputs?.(fn, ctx);
      return result;
    } catch (error) {
      outcome = 'failed';
      log.error('function failed', { function: fn.name, invocationId: ctx.invocationId, ...errorFields(error) });
      throw error;
    } finally {
      clearTimeout(timer);
      const idle = outcome === 'succeeded' && !loggedSomething();
      const level = (options.debugWhenIdle && idle) || (outcome === 'succeeded' && options.quiet?.()) ? 'debug' : 'info';
      log[level]('invocation', {
        function: fn.name,
        trigger: options.trigger,
        invocationId: ctx.invocationId,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        outcome,
        ...options.fields?.(),
      });
    }
  };
}

/**
 * The InvocationContext handed to the function. Its log handler writes through the host's logger and notes
 * whether the function logged at information level or above (ctx.log/info/warn/error), which is what
 * tells an idle timer tick from one that did something.
 */
export function invocationContext(
  fn: RegisteredFunction,
  log: Logger,
  triggerMetadata?: Record<string, unknown>,
): { ctx: InvocationContext; loggedSomething: () => boolean } {
  const invocationId = randomUUID();
  let logged = false;
  const ctx = new InvocationContext({
    invocationId,
    functionName: fn.name,
    triggerMetadata,
    options: { trigger: triggerOf(fn) as never },
    logHandler: (level: FunctionsLogLevel, ...args: unknown[]) => {
      const message = args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
      const fields = { function: fn.name, invocationId };
      if (level === 'trace' || level === 'debug') return log.debug(message, fields);
      logged = true;
      if (level === 'error' || level === 'critical') log.error(message, fields);
      else if (level === 'warning') log.warn(message, fields);
      else log.info(message, fields);
    },
  });
  return { ctx, loggedSomething: () => logged };
}
