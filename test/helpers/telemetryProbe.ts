/**
 * Run as a child process by test/e2e/exporters.test.ts: the app's telemetry setup as the environment
 * chooses it (Application Insights or OTLP), twenty producer → consumer hops as the queues make them,
 * a metric, then a flush. Prints the exporter chosen.
 */
import { FailoverMetrics } from '../../shared/telemetry/metrics';
import { shutdownTelemetry, startTelemetry } from '../../shared/telemetry/setup';
import { currentTraceCarrier, inSpan, SpanKind } from '../../shared/telemetry/tracing';

async function main() {
  const telemetry = startTelemetry();
  const metrics = new FailoverMetrics();
  for (let i = 0; i < 20; i++) {
    let message: Record<string, unknown> = {};
    await inSpan('taintManager.plan', { attributes: { 'failover.cluster': `probe-${i}` } }, async () => {
      await inSpan('send evictions', { kind: SpanKind.PRODUCER }, async () => {
        message = { cluster: `probe-${i}`, ...currentTraceCarrier() };
      });
    });
    await inSpan('process evictions', { kind: SpanKind.CONSUMER, parent: { traceparent: message.traceparent as string } }, async () => {
      metrics.recordProcessed('ResourceBinding', 'success', 0.5);
    });
  }
  await shutdownTelemetry();
  process.stdout.write(JSON.stringify({ exporter: telemetry.exporter }) + '\n');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
