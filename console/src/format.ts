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
