/**
 * The process is shutting down: long, bounded invocations (the Karmada watch) end early instead of holding
 * the stop for their whole budget. The local host signals it when it stops; in Azure, the app-terminate hook.
 */
const controller = new AbortController();

export const shutdownSignal: AbortSignal = controller.signal;

export function signalShutdown(): void {
  controller.abort();
}
