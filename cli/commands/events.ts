import { flag, has, UsageError } from '../args';
import { UnreachableError } from '../client';
import { Context } from '../context';
import { printData } from '../output';
import { cell, columnWidths, formatRow } from '../tables';
import { Event, ItemList } from '../types';

const HEADERS = ['TIME', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
/** Minimum widths so rows that arrive later under --watch still line up. */
const MIN_WIDTHS = [24, 7, 22, 36];
const POLL_MS = 1000;
/** Each poll asks again for this much time before the newest event seen, so late-written events are not missed. */
const OVERLAP_MS = 5000;

const row = (e: Event) => [e.time, e.type, e.reason, `${e.kind}/${e.name}`, cell(e.message)];
const key = (e: Event) => JSON.stringify([e.time, e.kind, e.name, e.reason, e.message]);

/** `--since` as RFC 3339, or a duration back from now: 30s, 5m, 2h, 1d. */
function since(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d+)(s|m|h|d)$/.exec(text);
  if (m) return new Date(Date.now() - Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'] * 1000).toISOString();
  if (Number.isNaN(Date.parse(text))) throw new UsageError(`--since must be an RFC 3339 time or a duration such as 5m (got "${text}")`);
  return text;
}

export async function events(ctx: Context): Promise<void> {
  if (ctx.args.length > 0) throw new UsageError(`unexpected argument "${ctx.args[0]}"; filter with --kind and --name`);
  const limit = flag(ctx.parsed, 'limit');
  if (limit !== undefined && !/^[1-9]\d*$/.test(limit)) throw new UsageError(`--limit must be a positive integer (got "${limit}")`);
  const query = { kind: flag(ctx.parsed, 'kind'), name: flag(ctx.parsed, 'name'), limit };
  const from = since(flag(ctx.parsed, 'since'));
  const first = await ctx.client.get<ItemList<Event>>('events', { ...query, since: from });
  if (!has(ctx.parsed, 'watch')) {
    if (ctx.output === 'json' || ctx.output === 'yaml') return await printData(first, ctx.output);
    if (first.items.length === 0) return void process.stderr.write('No events found.\n');
    const widths = columnWidths(HEADERS, first.items.map(row));
    process.stdout.write([HEADERS, ...first.items.map(row)].map((r) => formatRow(r, widths)).join('\n') + '\n');
    return;
  }
  if (ctx.output === 'yaml') throw new UsageError('events --watch prints a table or -o json (one event per line)');
  return watch(ctx, query, first.items, from);
}

/** Prints the events so far, then every second the new ones, until SIGINT or SIGTERM (exit 0). */
async function watch(ctx: Context, query: Record<string, string | undefined>, initial: Event[], floor: string | undefined): Promise<void> {
  const json = ctx.output === 'json';
  const widths = columnWidths(HEADERS, initial.map(row)).map((w, i) => Math.max(w, MIN_WIDTHS[i] ?? 0));
  const seen = new Map<string, number>();
  let newest = 0;
  const print = (e: Event) => {
    const k = key(e);
    if (seen.has(k)) return;
    const t = Date.parse(e.time);
    seen.set(k, t);
    newest = Math.max(newest, t);
    process.stdout.write(json ? `${JSON.stringify(e)}\n` : `${formatRow(row(e), widths)}\n`);
  };
  const stop = () => process.exit(0);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (!json) process.stdout.write(`${formatRow(HEADERS, widths)}\n`);
  initial.forEach(print);
  let warned = false;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const from = newest > 0 ? new Date(newest - OVERLAP_MS).toISOString() : floor;
    let items: Event[];
    try {
      items = (await ctx.client.get<ItemList<Event>>('events', { ...query, since: from })).items;
    } catch (err) {
      if (!(err instanceof UnreachableError)) throw err;
      if (!warned) process.stderr.write(`warning: ${err.message}; retrying every ${POLL_MS / 1000}s\n`);
      warned = true;
      continue;
    }
    if (warned) process.stderr.write('reconnected\n');
    warned = false;
    items.forEach(print);
    // Forget what can no longer come back in a poll window.
    for (const [k, t] of seen) if (t < newest - 2 * OVERLAP_MS) seen.delete(k);
  }
}
