import { traceIds } from './tracing';

/** Structured logs: one JSON line per event, never secrets (callers pass names and numbers, not payloads). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The levels of the `LOG_LEVEL` app setting, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/**
 * `LOG_LEVEL` from the environment when it is a valid level, else `info`. Validation (and the message
 * naming the setting) is shared/config.ts's job; a logger made before the config is read must not throw.
 */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const value = env.LOG_LEVEL?.trim().toLowerCase();
  return isLogLevel(value) ? value : 'info';
}

/**
 * Lines written to stdout once per event-loop turn rather than one write each: stdout to a pipe is
 * synchronous on Linux, and a write per line per request showed up in the HTTP tail latency.
 */
const pendingLines: string[] = [];
function flushLines(): void {
  if (pendingLines.length === 0) return;
  const text = pendingLines.join('\n') + '\n';
  pendingLines.length = 0;
  process.stdout.write(text);
}
process.on('exit', flushLines);

function bufferedStdout(line: string): void {
  if (pendingLines.push(line) === 1) setImmediate(flushLines);
}

export interface JsonLoggerOptions {
  /** Where each line goes; buffered stdout by default. */
  write?: (line: string) => void;
  /** Fields added to every line. */
  base?: Record<string, unknown>;
  /** Lines below this level are dropped; default `LOG_LEVEL` when valid, else `info`. */
  level?: LogLevel;
}

export function jsonLogger(options?: JsonLoggerOptions): Logger;
export function jsonLogger(write?: (line: string) => void, base?: Record<string, unknown>, options?: Pick<JsonLoggerOptions, 'level'>): Logger;
export function jsonLogger(
  first?: JsonLoggerOptions | ((line: string) => void),
  base?: Record<string, unknown>,
  options: Pick<JsonLoggerOptions, 'level'> = {},
): Logger {
  const settings: JsonLoggerOptions = typeof first === 'function' || first === undefined ? { write: first, base, ...options } : first;
  const write = settings.write ?? bufferedStdout;
  const fixed = settings.base ?? {};
  const minimum = LOG_LEVELS.indexOf(settings.level ?? logLevelFromEnv());
  const line = (level: LogLevel, message: string, fields?: Record<string, unknown>) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fixed, ...fields, ...traceIds() }));
  // Levels below the minimum are a no-op, so a debug line on a hot path costs no JSON.stringify.
  const at = (level: LogLevel) =>
    LOG_LEVELS.indexOf(level) < minimum ? () => {} : (message: string, fields?: Record<string, unknown>) => line(level, message, fields);
  // A failure whose condition is already reported says nothing new: written at debug, if at all.
  const unlessReported = (level: 'warn' | 'error') => {
    const atLevel = at(level);
    const atDebug = at('debug');
    return (message: string, fields?: Record<string, unknown>) => (isReportedCondition(fields?.errorCondition) ? atDebug : atLevel)(message, fields);
  };
  return { debug: at('debug'), info: at('info'), warn: unlessReported('warn'), error: unlessReported('error') };
}

/**
 * Lasting conditions (the Kubernetes API server unreachable, a permission refused) are logged by whoever
 * tracks them: when one begins, once a minute while it lasts, and when it ends. While one is reported, a
 * warning or error about a failure it caused (`errorCondition`, which errorFields copies from the error) is
 * written at debug: an outage is a few lines, not one per timer tick. Counted, as more than one tracker
 * may report the same condition.
 */
const reportedConditions = new Map<string, number>();

export function reportCondition(condition: string): void {
  reportedConditions.set(condition, (reportedConditions.get(condition) ?? 0) + 1);
}

export function endCondition(condition: string): void {
  const count = reportedConditions.get(condition) ?? 0;
  if (count <= 1) reportedConditions.delete(condition);
  else reportedConditions.set(condition, count - 1);
}

function isReportedCondition(condition: unknown): boolean {
  return typeof condition === 'string' && reportedConditions.has(condition);
}

/**
 * The state last reported per subject, so a warning is written when a subject's state changes rather than
 * each time it is seen again (a status patch refused every 5 s is one line, then one when it changes).
 */
export class StateChanges {
  private readonly states = new Map<string, string>();

  constructor(private readonly limit = 10_000) {}

  /** Notes `state` for `subject`: true when it differs from the state noted before (report it). */
  changed(subject: string, state: string): boolean {
    if (this.states.get(subject) === state) return false;
    this.states.delete(subject);
    this.states.set(subject, state);
    if (this.states.size > this.limit) this.states.delete(this.states.keys().next().value!);
    return true;
  }

  /** The subject is fine again: true when a state was noted for it (report the recovery). */
  cleared(subject: string): boolean {
    return this.states.delete(subject);
  }
}

export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const condition = conditionOf(error) ?? conditionOf(error.cause);
  return { error: error.message, errorName: error.name, ...(condition ? { errorCondition: condition } : {}) };
}

/** The lasting condition an error is a symptom of, when it names one (KubeApiError's `condition`). */
function conditionOf(error: unknown): string | undefined {
  const condition = error instanceof Error ? (error as { condition?: unknown }).condition : undefined;
  return typeof condition === 'string' ? condition : undefined;
}
