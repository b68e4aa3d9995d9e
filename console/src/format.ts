import type { BindingRef } from './types';

const pad = (n: number) => String(n).padStart(2, '0');

/** The console's one timestamp format: ISO date and time in the browser's time zone, `2025-03-01 14:05:09`. */
export function timestamp(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "1 eviction", "3 evictions", "2 policies" (`many` for an irregular plural). */
export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Names in natural order: numbers as numbers (member2 before member10), case aside. */
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
export const naturalCompare = (a: string, b: string) => collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);

/** "in 12 s", "3 min ago". */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const ms = Date.parse(iso) - now;
  if (Number.isNaN(ms)) return '';
  const s = Math.round(Math.abs(ms) / 1000);
  const text = s < 90 ? `${s} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export const rate = (perSecond: number | undefined) => (perSecond === undefined ? '—' : `${Number(perSecond.toPrecision(3))}/s`);
export const percent = (ratio: number | undefined) => (ratio === undefined ? '—' : `${Math.round(ratio * 1000) / 10}%`);

export function bindingName(b: BindingRef): string {
  return b.namespace ? `${b.namespace}/${b.name}` : b.name;
}

/** The console's hash for a binding: #/workload/ns/name, or #/workload/name for a ClusterResourceBinding. */
export function bindingHref(b: BindingRef): string {
  return `#/workload/${b.namespace ? `${encodeURIComponent(b.namespace)}/` : ''}${encodeURIComponent(b.name)}`;
}

/** A binding key as budgets record it (`rb:<namespace>:<name>`, `crb:<name>`) as a reference. */
export function keyRef(key: string): BindingRef {
  const rb = /^rb:([^:]*):(.+)$/.exec(key);
  if (rb) return { kind: 'ResourceBinding', namespace: rb[1], name: rb[2] };
  return { kind: 'ClusterResourceBinding', name: key.replace(/^crb:/, '') };
}

/** Runs `fn` over `items`, at most `limit` at a time, keeping the order. */
export async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
