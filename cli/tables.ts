/** kubectl-like text output: upper-case headers, columns padded with three spaces, short ages. */

const GAP = '   ';

/** Renders rows under headers; every column but the last is padded to its widest cell. */
export function table(headers: string[], rows: string[][]): string {
  const widths = columnWidths(headers, rows);
  return [headers, ...rows].map((row) => formatRow(row, widths)).join('\n') + '\n';
}

export function columnWidths(headers: string[], rows: string[][]): number[] {
  return headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
}

export function formatRow(row: string[], widths: number[]): string {
  return row
    .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? cell.length)))
    .join(GAP)
    .trimEnd();
}

/** A duration in kubectl's style: 45s, 3m, 2h, 4d (and 3m20s, 2h5m under the hour/day marks, like kubectl). */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

/** How long ago `iso` was (AGE columns); `<unknown>` when absent. */
export function age(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '<unknown>';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '<unknown>' : duration(now - t);
}

/** A time relative to now, in either direction: `in 5m`, `now`, `3s ago`; `<none>` when absent. */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '<none>';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  // Whole seconds, rounded: a time 4m59.98s away reads "in 5m".
  const diff = Math.round((t - now) / 1000) * 1000;
  if (diff === 0) return 'now';
  return diff > 0 ? `in ${duration(diff)}` : `${duration(-diff)} ago`;
}

/** `a, b` or `<none>`. */
export function list(values: string[], separator = ','): string {
  return values.length > 0 ? values.join(separator) : '<none>';
}

/** A cell: a single line, `<none>` when empty. */
export function cell(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '<none>';
  return String(value).replace(/\s*\n\s*/g, ' ');
}
