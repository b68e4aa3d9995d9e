import { traceIds } from './tracing';

/** Structured logs: one JSON line per event, never secrets (callers pass names and numbers, not payloads). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

type Level = 'info' | 'warn' | 'error';

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

export function jsonLogger(write: (line: string) => void = bufferedStdout, base: Record<string, unknown> = {}): Logger {
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
