import { afterEach, describe, expect, it, vi } from 'vitest';
import { HostLifecycle } from '../../shared/local/lifecycle';
import { jsonLogger, LogLevel, logLevelFromEnv } from '../../shared/telemetry/log';

function capture(level?: LogLevel) {
  const lines: Array<{ level: string; msg: string }> = [];
  const log = level ? jsonLogger({ write: (line) => lines.push(JSON.parse(line)), level }) : jsonLogger((line) => lines.push(JSON.parse(line)));
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  return lines.map((l) => `${l.level}:${l.msg}`);
}

describe('jsonLogger levels', () => {
  const saved = process.env.LOG_LEVEL;
  afterEach(() => {
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
  });

  it.each<[LogLevel, string[]]>([
    ['debug', ['debug:d', 'info:i', 'warn:w', 'error:e']],
    ['info', ['info:i', 'warn:w', 'error:e']],
    ['warn', ['warn:w', 'error:e']],
    ['error', ['error:e']],
  ])('at %s writes %j', (level, expected) => {
    expect(capture(level)).toEqual(expected);
  });

  it.each<[string | undefined, LogLevel]>([
    [undefined, 'info'],
    ['', 'info'],
    ['debug', 'debug'],
    [' WARN ', 'warn'],
    ['verbose', 'info'],
  ])('takes LOG_LEVEL=%j from the environment as %s when no level is given', (value, expected) => {
    if (value === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = value;
    expect(logLevelFromEnv()).toBe(expected);
    const all = ['debug:d', 'info:i', 'warn:w', 'error:e'];
    expect(capture()).toEqual(all.slice(all.findIndex((l) => l.startsWith(expected))));
  });

  it('keeps the positional form: base fields on every line', () => {
    const lines: string[] = [];
    jsonLogger((line) => lines.push(line), { app: 'x' }, { level: 'error' }).warn('dropped');
    jsonLogger((line) => lines.push(line), { app: 'x' }).info('kept', { n: 1 });
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 'info', msg: 'kept', app: 'x', n: 1 })]);
  });
});

describe('local host lifecycle', () => {
  it('wakes every sleeping loop at stop, with no AbortSignal listeners to pile up', async () => {
    const lifecycle = new HostLifecycle();
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const sleeps = Array.from({ length: 50 }, () => lifecycle.sleep(60_000));
      const started = Date.now();
      lifecycle.stop();
      expect(await Promise.all(sleeps)).toEqual(Array(50).fill(false));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await lifecycle.sleep(10)).toBe(false);
      await new Promise((r) => setImmediate(r));
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('sleeps longer than a Node timer can hold (a yearly timer) in steps, not 1 ms', async () => {
    vi.useFakeTimers();
    try {
      const lifecycle = new HostLifecycle();
      let done: boolean | undefined;
      void lifecycle.sleep(3_000_000_000).then((slept) => (done = slept));
      await vi.advanceTimersByTimeAsync(2_999_999_000);
      expect(done).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('completes a sleep that is not cut short, and drains tracked work', async () => {
    const lifecycle = new HostLifecycle();
    expect(await lifecycle.sleep(5)).toBe(true);
    let finished = false;
    void lifecycle.track(new Promise((r) => setTimeout(r, 30)).then(() => (finished = true)));
    void lifecycle.track(Promise.reject(new Error('failed work still counts as settled'))).catch(() => undefined);
    await lifecycle.drain();
    expect(finished).toBe(true);
  });
});
