import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { post } from './api';
import { relative, time } from './format';
import { clear, notice, report, token } from './state';
import type { HeldBy } from './types';

export function When({ iso, rel = true }: { iso: string | null | undefined; rel?: boolean }) {
  if (!iso) return <span>—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {time(iso)}
      {rel ? ` (${relative(iso)})` : ''}
    </time>
  );
}

export function Section({ title, id, children }: { title: string; id: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      {children}
    </section>
  );
}

export function Badge({ tone, children }: { tone: 'ok' | 'warn' | 'bad' | 'info' | 'muted'; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

export function TierBadge({ tier }: { tier: string | undefined }) {
  const tone = tier === 'primary' ? 'ok' : tier === 'secondary' ? 'warn' : tier === 'halted' ? 'bad' : 'muted';
  return <Badge tone={tone}>{tier ?? 'unknown'}</Badge>;
}

export function heldText(heldBy: HeldBy | undefined): string {
  switch (heldBy) {
    case 'paused':
      return 'held: evictions are paused';
    case 'gate':
      return 'held: the Failover gate is off (FAILOVER_ENABLED=false)';
    case 'halted':
      return 'held: the fleet is halted (too many unhealthy clusters in a small fleet)';
    default:
      return 'running';
  }
}

/**
 * A button that runs an admin action. Without a token it still works where the API needs none (AUTH_MODE
 * none) but says that a token is needed; a 401 then lands in the alert region.
 */
export function ActionButton({
  label,
  path,
  body,
  confirmText,
  onDone,
  describe,
}: {
  label: string;
  path: string;
  body?: unknown;
  confirmText?: string;
  onDone?: (result: unknown) => void;
  describe?: (result: unknown) => string;
}) {
  const hasToken = token.use() !== '';
  const [busy, setBusy] = useState(false);
  const source = `action:${path}`;
  const run = async () => {
    if (confirmText && !window.confirm(confirmText)) return;
    setBusy(true);
    try {
      const result = await post<unknown>(path, body);
      clear(source);
      notice.set(describe ? describe(result) : `${label}: done`);
      onDone?.(result);
    } catch (e) {
      report(source, e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="action" onClick={() => void run()} disabled={busy} aria-describedby={hasToken ? undefined : 'token-needed'}>
      {label}
      {hasToken ? '' : ' (admin token needed)'}
    </button>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return <p class="empty">Loading {what}…</p>;
}
