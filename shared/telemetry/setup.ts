import { metrics } from '@opentelemetry/api';
import { ConfigError, TelemetrySettings, telemetrySettingsSchema } from '../config';

/**
 * Chooses where traces and metrics go, once per process, before any function runs (functions/index.ts
 * imports this first, so the meters the control plane creates are the exporting ones):
 * - APPLICATIONINSIGHTS_CONNECTION_STRING set: the Azure Monitor distro (`applicationinsights`), every
 *   trace kept (sampling ratio 1, no per-second cap, so a failover's trace is never dropped), with an
 *   Entra ID credential when APPLICATIONINSIGHTS_AUTHENTICATION_STRING says `Authorization=AAD`;
 * - else OTEL_EXPORTER_OTLP_ENDPOINT set: OTLP over HTTP, protobuf or JSON (OTEL_EXPORTER_OTLP_PROTOCOL);
 * - else nothing: the API stays a no-op and costs next to nothing.
 * Exporter packages are loaded only when used, so the local host starts as fast without them.
 */

export type ExporterKind = 'azure-monitor' | 'otlp' | 'none';

export interface Telemetry {
  exporter: ExporterKind;
  /** Exports what is buffered and stops (the local host calls it on SIGTERM). */
  shutdown(): Promise<void>;
}

let started: Telemetry | undefined;

export function startTelemetry(env: NodeJS.ProcessEnv = process.env): Telemetry {
  const parsed = telemetrySettingsSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  if (started) return started;
  const settings = parsed.data;
  // Once per process: providers are global, and the meters the control plane creates bind to them.
  started = settings.APPLICATIONINSIGHTS_CONNECTION_STRING
    ? azureMonitor(settings, settings.APPLICATIONINSIGHTS_CONNECTION_STRING)
    : settings.OTEL_EXPORTER_OTLP_ENDPOINT
      ? otlp(settings, settings.OTEL_EXPORTER_OTLP_ENDPOINT)
      : { exporter: 'none', shutdown: async () => {} };
  return started;
}

export async function shutdownTelemetry(): Promise<void> {
  await started?.shutdown();
}

/** `ClientId=<id>;Authorization=AAD` → a managed identity credential (the setting the Functions host reads). */
function entraCredential(authentication: string | undefined) {
  if (!authentication || !/(^|;)\s*Authorization=AAD\s*(;|$)/i.test(authentication)) return undefined;
  const { DefaultAzureCredential, ManagedIdentityCredential } = require('@azure/identity') as typeof import('@azure/identity');
  const clientId = /(?:^|;)\s*ClientId=([^;]+)/i.exec(authentication)?.[1]?.trim();
  return clientId ? new ManagedIdentityCredential({ clientId }) : new DefaultAzureCredential();
}

function azureMonitor(settings: TelemetrySettings, connectionString: string): Telemetry {
  const ai = require('applicationinsights') as typeof import('applicationinsights');
  const credential = entraCredential(settings.APPLICATIONINSIGHTS_AUTHENTICATION_STRING);
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  ai.useAzureMonitor({
    azureMonitorExporterOptions: { connectionString, ...(credential ? { credential } : {}) },
    // The cloud role name Application Insights groups by.
    resource: resourceFromAttributes({ 'service.name': settings.OTEL_SERVICE_NAME }),
    // The distro's default keeps 5 traces per second: a failure story must not be sampled away.
    samplingRatio: 1,
    tracesPerSecond: 0,
    enableLiveMetrics: false,
  });
  return { exporter: 'azure-monitor', shutdown: () => ai.shutdownAzureMonitor() };
}

function otlp(settings: TelemetrySettings, endpoint: string): Telemetry {
  const { NodeTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { MeterProvider, PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const json = settings.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json';
  const base = endpoint.replace(/\/+$/, '');
  const traceExporter = json
    ? new (require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({
        url: `${base}/v1/traces`,
      })
    : new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({
        url: `${base}/v1/traces`,
      });
  const metricExporter = json
    ? new (require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter({
        url: `${base}/v1/metrics`,
      })
    : new (require('@opentelemetry/exporter-metrics-otlp-proto') as typeof import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter({
        url: `${base}/v1/metrics`,
      });
  const resource = resourceFromAttributes({ 'service.name': settings.OTEL_SERVICE_NAME });
  const tracerProvider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(traceExporter)] });
  // Sets the global tracer provider, the async context manager and the W3C trace-context propagator.
  tracerProvider.register();
  const meterProvider = new MeterProvider({
    resource,
    readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: settings.OTEL_METRIC_EXPORT_INTERVAL })],
  });
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    exporter: 'otlp',
    shutdown: async () => {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}
