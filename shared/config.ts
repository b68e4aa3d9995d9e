import { z } from 'zod';
import type { RateSettings } from './failover/evictionDecision';
import { EVICTION_PLUGINS, EvictionPlugin } from './failover/gracefulEviction';
import { isLogLevel, LOG_LEVELS, LogLevel } from './telemetry/log';

/**
 * Every app setting the code reads, with its default. The configuration table in docs/reference/configuration.md mirrors this list;
 * a unit test keeps the two in step. Invalid values stop the app at start with a message naming the setting.
 */
const bool = (fallback: boolean) =>
  z
    .string()
    .trim()
    .toLowerCase()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      if (['true', '1', 'yes'].includes(value)) return true;
      if (['false', '0', 'no'].includes(value)) return false;
      ctx.addIssue({ code: 'custom', message: `must be true or false, got "${value}"` });
      return z.NEVER;
    });

const number = (fallback: number, check: (n: number) => string | undefined) =>
  z
    .string()
    .trim()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      const parsed = Number(value);
      const problem = Number.isFinite(parsed) ? check(parsed) : 'must be a number';
      if (problem) {
        ctx.addIssue({ code: 'custom', message: `${problem}, got "${value}"` });
        return z.NEVER;
      }
      return parsed;
    });

const rate = (n: number) => (n >= 0 && n <= 1000 ? undefined : 'must be an eviction rate per second between 0 and 1000');
const positiveInteger = (n: number) => (Number.isInteger(n) && n >= 1 ? undefined : 'must be a whole number ≥ 1');

/** A secret app setting: never echoed back in an error. */
const secret = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value === '') return undefined;
    if (value.length < 16) {
      ctx.addIssue({ code: 'custom', message: 'must be at least 16 characters (the value is not shown)' });
      return z.NEVER;
    }
    return value;
  });

/**
 * A JSON object of string to string. The message never shows the value (it may hold secrets); entries
 * failing `valid` make the whole setting invalid.
 */
const jsonStringMap = (message: string, valid: (value: string) => boolean = () => true, key: (k: string) => string = (k) => k) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return {};
      try {
        const parsed: unknown = JSON.parse(value);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && Object.values(parsed).every((v) => typeof v === 'string' && valid(v))) {
          return Object.fromEntries(Object.entries(parsed as Record<string, string>).map(([k, v]) => [key(k), v]));
        }
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    });

const clusterKeys = jsonStringMap(
  'must be a JSON object of cluster name to key (keys of at least 16 characters); the value is not shown',
  (k) => k.length >= 16,
);

/** An optional setting; an empty value (as app settings often hold) counts as unset. */
const unsetIfEmpty = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (typeof value === 'string' && value.trim() === '' ? undefined : value), schema);

const httpsUri = unsetIfEmpty(
  z
    .string()
    .trim()
    .regex(/^https?:\/\/[^\s/]+/, 'must be a URL such as https://<account>.queue.core.windows.net')
    .optional(),
);

/** Telemetry settings: the standard names the Azure Monitor and OpenTelemetry SDKs use. */
export const telemetrySettingsSchema = z.object({
  APPLICATIONINSIGHTS_CONNECTION_STRING: z.string().trim().optional(),
  // `Authorization=AAD` (with `ClientId=<id>` for a user-assigned identity): export with Entra ID when
  // the Application Insights resource has local authentication disabled.
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: z.string().trim().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(/^https?:\/\/[^\s/]+/, 'must be an http(s) URL such as http://collector:4318')
      .optional(),
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: unsetIfEmpty(
    z.enum(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json (grpc is not bundled)' }).default('http/protobuf'),
  ),
  OTEL_SERVICE_NAME: unsetIfEmpty(z.string().trim().min(1).max(256).default('cluster-failover')),
  OTEL_METRIC_EXPORT_INTERVAL: number(60_000, (n) => (Number.isInteger(n) && n >= 100 ? undefined : 'must be a whole number of milliseconds ≥ 100')),
});
export type TelemetrySettings = z.infer<typeof telemetrySettingsSchema>;

export const settingsSchema = telemetrySettingsSchema.extend({
  AzureWebJobsStorage: z.string().optional(),
  // Identity-based storage (no keys): what the Functions host reads for the same connection.
  AzureWebJobsStorage__accountName: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(/^[a-z0-9]{3,24}$/, 'must be a storage account name')
      .optional(),
  ),
  AzureWebJobsStorage__queueServiceUri: httpsUri,
  AzureWebJobsStorage__tableServiceUri: httpsUri,
  AzureWebJobsStorage__credential: unsetIfEmpty(z.literal('managedidentity', { message: 'must be managedidentity' }).optional()),
  AzureWebJobsStorage__clientId: z.string().trim().optional(),
  AUTO_REGISTER_CLUSTERS: bool(true),
  CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: number(40, positiveInteger),
  CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: number(60, positiveInteger),
  APPLY_INLINE_MAX_OBJECTS: number(1000, (n) => (Number.isInteger(n) && n >= 1 && n <= 100_000 ? undefined : 'must be a whole number between 1 and 100000')),
  MAX_REQUEST_BODY_BYTES: number(1_048_576, (n) =>
    Number.isInteger(n) && n >= 1024 && n <= 104_857_600 ? undefined : 'must be a whole number of bytes between 1024 and 104857600',
  ),
  EVENT_LIST_LIMIT: number(1000, (n) => (Number.isInteger(n) && n >= 1 && n <= 10000 ? undefined : 'must be a whole number between 1 and 10000')),
  FAILOVER_ENABLED: bool(false),
  RESOURCE_EVICTION_RATE: number(0.5, rate),
  SECONDARY_RESOURCE_EVICTION_RATE: number(0.1, rate),
  UNHEALTHY_CLUSTER_THRESHOLD: number(0.55, (n) => (n >= 0 && n <= 1 ? undefined : 'must be a fraction between 0 and 1')),
  LARGE_CLUSTER_NUM_THRESHOLD: number(10, (n) => (Number.isInteger(n) && n >= 0 ? undefined : 'must be a whole number ≥ 0')),
  // The blast-radius guard: the most of the fleet one ClusterTaintPolicy may hold NoExecute/PreferNoExecute taints on.
  MAX_FLEET_SHARE_TAINTED_BY_POLICY: number(0.5, (n) => (n > 0 && n <= 1 ? undefined : 'must be a fraction of the fleet above 0 and at most 1')),
  AUTH_MODE: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const mode = (value ?? '').trim().toLowerCase() || 'required';
      if (mode === 'required' || mode === 'none') return mode;
      ctx.addIssue({ code: 'custom', message: `must be required or none, got "${value}"` });
      return z.NEVER;
    }),
  REPORTER_SIGNING_KEY: secret,
  REPORTER_CLUSTER_KEYS: clusterKeys,
  ADMIN_TOKEN: secret,
  ALERTMANAGER_TOKEN: secret,
  AZURE_MONITOR_TOKEN: secret,
  ALERTMANAGER_CLUSTER_LABEL: z.string().trim().min(1).max(256).default('cluster'),
  ALERTMANAGER_CONDITION_LABEL: z.string().trim().min(1).max(256).default('condition'),
  ALERTMANAGER_STATUS_LABEL: z.string().trim().min(1).max(256).default('condition_status'),
  // Azure resource IDs compare case-insensitively.
  EVICTION_PLUGINS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return ['ResourceHealth'] as EvictionPlugin[];
      const names = value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      const unknown = names.filter((n) => !(EVICTION_PLUGINS as readonly string[]).includes(n));
      if (unknown.length === 0) return names as EvictionPlugin[];
      ctx.addIssue({ code: 'custom', message: `unknown plugin(s) ${unknown.join(', ')}; known: ${EVICTION_PLUGINS.join(', ')} (empty for none)` });
      return z.NEVER;
    }),
  GRACEFUL_EVICTION_TIMEOUT_SECONDS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      const n = Number(value);
      if (Number.isInteger(n) && n >= 1) return n;
      ctx.addIssue({ code: 'custom', message: `must be a whole number of seconds ≥ 1, got "${value}"` });
      return z.NEVER;
    }),
  // Karmada mode: a kubeconfig (YAML text or a file path) for the Karmada API server. Never echoed.
  KARMADA_KUBECONFIG: unsetIfEmpty(z.string().optional()),
  // Standalone probes: a kubeconfig whose context names are the cluster names. Never echoed.
  MEMBER_KUBECONFIGS: unsetIfEmpty(z.string().optional()),
  CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: number(10, (n) =>
    Number.isInteger(n) && n >= 1 && 60 % n === 0 ? undefined : 'must be a whole number of seconds that divides 60',
  ),
  CLUSTER_FAILURE_THRESHOLD_SECONDS: number(30, positiveInteger),
  CLUSTER_PROBE_TIMEOUT_SECONDS: number(5, positiveInteger),
  CLUSTER_PROBE_CONCURRENCY: number(50, (n) => (Number.isInteger(n) && n >= 1 && n <= 1000 ? undefined : 'must be a whole number between 1 and 1000')),
  AZURE_MONITOR_CLUSTER_MAP: jsonStringMap('must be a JSON object of Azure resource ID to cluster name', undefined, (id) => id.toLowerCase()),
  // The least severe JSON log line written (shared/telemetry/log.ts reads the same variable).
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((value, ctx): LogLevel => {
      const level = (value ?? '').trim().toLowerCase() || 'info';
      if (isLogLevel(level)) return level;
      ctx.addIssue({ code: 'custom', message: `must be one of ${LOG_LEVELS.join(', ')}, got "${value}"` });
      return z.NEVER;
    }),
});

/** How to reach the storage account: a connection string (local, Azurite) or an identity (Azure). */
export interface IdentityStorage {
  queueServiceUri: string;
  tableServiceUri: string;
  /** A user-assigned identity's client ID; without it the default Azure credential chain is used. */
  clientId?: string;
}

export interface AppConfig {
  storageConnectionString: string | undefined;
  identityStorage?: IdentityStorage;
  autoRegisterClusters: boolean;
  clusterMonitorGracePeriodSeconds: number;
  clusterStartupGracePeriodSeconds: number;
  /** POST /api/apply with more objects than this goes to the background (202 and an operation to poll). */
  applyInlineMaxObjects: number;
  maxRequestBodyBytes: number;
  eventListLimit: number;
  /** The Failover gate: when false no eviction happens at all, whoever added the taint. */
  failoverEnabled: boolean;
  rates: RateSettings;
  /** The blast-radius guard: one taint policy holds NoExecute/PreferNoExecute taints on at most this share of the fleet (0–1]. */
  maxFleetShareTaintedByPolicy: number;
  auth: AuthSettings;
  alerts: AlertSettings;
  /** Optional global limit on graceful-eviction tasks; none by default (docs/architecture.md, decision 9). */
  gracefulEvictionTimeoutSeconds?: number;
  /** Graceful-eviction plugins; any one passing clears a task. */
  evictionPlugins: EvictionPlugin[];
  /** The least severe log line written. */
  logLevel: LogLevel;
  /** Karmada mode when set: the Karmada API server's kubeconfig (YAML text or path). */
  karmadaKubeconfig?: string;
  /** Standalone member probes: a kubeconfig with one context per cluster (context name = cluster name). */
  memberKubeconfigs?: string;
  probes: ProbeSettings;
}

export interface ProbeSettings {
  /** Seconds between probe rounds (Karmada's --cluster-status-update-frequency). */
  updateFrequencySeconds: number;
  /** A new answer must hold this long before Ready flips (Karmada's --cluster-failure-threshold / --cluster-success-threshold). */
  failureThresholdSeconds: number;
  probeTimeoutSeconds: number;
  probeConcurrency: number;
}

export interface AlertSettings {
  alertmanager: { clusterLabel: string; conditionLabel: string; statusLabel: string };
  /** Azure resource ID (lower case) → cluster name. */
  azureMonitorClusterMap: Record<string, string>;
}

export interface AuthSettings {
  mode: 'required' | 'none';
  /** Root of the per-cluster report keys. */
  signingKey?: string;
  /** Explicit per-cluster keys that override the derived ones. */
  clusterKeys: Record<string, string>;
  adminToken?: string;
  alertmanagerToken?: string;
  azureMonitorToken?: string;
}

/**
 * The probe timer's NCRONTAB schedule. Read at registration (a schedule is fixed when the function is
 * registered); an invalid value falls back to the default here and is reported by loadConfig at the first
 * invocation.
 */
export function probeSchedule(env: NodeJS.ProcessEnv): string {
  const seconds = Number(env.CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS || 10);
  return `*/${Number.isInteger(seconds) && seconds >= 1 && 60 % seconds === 0 ? seconds : 10} * * * * *`;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid app settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = settingsSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const s = parsed.data;
  return {
    storageConnectionString: s.AzureWebJobsStorage || undefined,
    ...identityStorageOf(s),
    autoRegisterClusters: s.AUTO_REGISTER_CLUSTERS,
    clusterMonitorGracePeriodSeconds: s.CLUSTER_MONITOR_GRACE_PERIOD_SECONDS,
    clusterStartupGracePeriodSeconds: s.CLUSTER_STARTUP_GRACE_PERIOD_SECONDS,
    applyInlineMaxObjects: s.APPLY_INLINE_MAX_OBJECTS,
    maxRequestBodyBytes: s.MAX_REQUEST_BODY_BYTES,
    eventListLimit: s.EVENT_LIST_LIMIT,
    failoverEnabled: s.FAILOVER_ENABLED,
    rates: {
      resourceEvictionRate: s.RESOURCE_EVICTION_RATE,
      secondaryResourceEvictionRate: s.SECONDARY_RESOURCE_EVICTION_RATE,
      unhealthyClusterThreshold: s.UNHEALTHY_CLUSTER_THRESHOLD,
      largeClusterNumThreshold: s.LARGE_CLUSTER_NUM_THRESHOLD,
    },
    maxFleetShareTaintedByPolicy: s.MAX_FLEET_SHARE_TAINTED_BY_POLICY,
    auth: {
      mode: s.AUTH_MODE,
      signingKey: s.REPORTER_SIGNING_KEY,
      clusterKeys: s.REPORTER_CLUSTER_KEYS,
      adminToken: s.ADMIN_TOKEN,
      alertmanagerToken: s.ALERTMANAGER_TOKEN,
      azureMonitorToken: s.AZURE_MONITOR_TOKEN,
    },
    gracefulEvictionTimeoutSeconds: s.GRACEFUL_EVICTION_TIMEOUT_SECONDS,
    evictionPlugins: s.EVICTION_PLUGINS,
    logLevel: s.LOG_LEVEL,
    ...(s.KARMADA_KUBECONFIG ? { karmadaKubeconfig: s.KARMADA_KUBECONFIG } : {}),
    ...(s.MEMBER_KUBECONFIGS ? { memberKubeconfigs: s.MEMBER_KUBECONFIGS } : {}),
    probes: {
      updateFrequencySeconds: s.CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS,
      failureThresholdSeconds: s.CLUSTER_FAILURE_THRESHOLD_SECONDS,
      probeTimeoutSeconds: s.CLUSTER_PROBE_TIMEOUT_SECONDS,
      probeConcurrency: s.CLUSTER_PROBE_CONCURRENCY,
    },
    alerts: {
      alertmanager: { clusterLabel: s.ALERTMANAGER_CLUSTER_LABEL, conditionLabel: s.ALERTMANAGER_CONDITION_LABEL, statusLabel: s.ALERTMANAGER_STATUS_LABEL },
      azureMonitorClusterMap: s.AZURE_MONITOR_CLUSTER_MAP,
    },
  };
}

function identityStorageOf(s: z.infer<typeof settingsSchema>): { identityStorage?: IdentityStorage } {
  const account = s.AzureWebJobsStorage__accountName;
  const queueServiceUri = s.AzureWebJobsStorage__queueServiceUri ?? (account ? `https://${account}.queue.core.windows.net` : undefined);
  const tableServiceUri = s.AzureWebJobsStorage__tableServiceUri ?? (account ? `https://${account}.table.core.windows.net` : undefined);
  if (!queueServiceUri || !tableServiceUri) return {};
  return { identityStorage: { queueServiceUri, tableServiceUri, ...(s.AzureWebJobsStorage__clientId ? { clientId: s.AzureWebJobsStorage__clientId } : {}) } };
}
