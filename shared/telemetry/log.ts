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
  // Levels below the minimum are a no-op, so a debug line on a hot path costs no JSON.stringify.
  const at = (level: LogLevel) =>
    LOG_LEVELS.indexOf(level) < minimum
      ? () => {}
      : (message: string, fields?: Record<string, unknown>) =>
          write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fixed, ...fields, ...traceIds() }));
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { error: error.message, errorName: error.name };
  return { error: String(error) };
}
