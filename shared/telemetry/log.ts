import { traceIds } from './tracing';

/** Structured logs: one JSON line per event, never secrets (callers pass names and numbers, not payloads). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

type Level = 'info' | 'warn' | 'error';

export function jsonLogger(write: (line: string) => void = (line) => process.stdout.write(line + '\n'), base: Record<string, unknown> = {}): Logger {
  const emit = (level: Level, message: string, fields?: Record<string, unknown>) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...base, ...fields, ...traceIds() }));
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { error: error.message, errorName: error.name };
  return { error: String(error) };
}
