import type { BindingRef } from './types';

export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false });
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toLocaleDateString()} ${d.toLocaleTimeString(undefined, { hour12: false })}`;
}

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
