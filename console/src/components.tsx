import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { HttpError, post, q } from './api';
import { plural, relative, timestamp } from './format';
import { clear, type LoadError, notice, type Poll, report, setTokenNeeded, token, useTokenMissing } from './state';
import type { HeldBy, Policy } from './types';

/** A timestamp as the console shows every one: local ISO date and time, and its age ("3 min ago", "in 12 s"). */
export function When({ iso, rel = true, now }: { iso: string | null | undefined; rel?: boolean; now?: number }) {
  if (!iso) return <span>—</span>;
  const age = rel ? relative(iso, now) : '';
  return (
    <time dateTime={iso} title={iso}>
      {timestamp(iso)}
      {age ? ` (${age})` : ''}
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
 * A button that runs an admin action (it changes the fleet), after the user confirms `confirmText`, which
 * says what it will do. It sends the admin token when one is set. Under AUTH_MODE=none (healthz says so)
 * it is a plain button; under `required` it says that the admin token is needed, and waits, until one is
 * typed in. When the server does not say, it is enabled until an action is refused (401/403), then waits too.
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
  confirmText: string;
  onDone?: (result: unknown) => void;
  describe?: (result: unknown) => string;
}) {
  const hasToken = token.use() !== '';
  const locked = useTokenMissing();
  const [busy, setBusy] = useState(false);
  const source = `action:${path}`;
  const run = async () => {
    if (!window.confirm(confirmText)) return;
    setBusy(true);
    try {
      const result = await post<unknown>(path, body);
      if (!hasToken) setTokenNeeded(false);
      clear(source);
      notice.set(describe ? describe(result) : `${label}: done`);
      onDone?.(result);
    } catch (e) {
      if (e instanceof HttpError && (e.status === 401 || e.status === 403) && !hasToken) setTokenNeeded(true);
      report(source, e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="action" onClick={() => void run()} disabled={busy || locked} aria-describedby={locked ? 'token-needed' : undefined}>
      {label}
      {locked ? ' (admin token needed)' : ''}
    </button>
  );
}

/**
 * Acknowledges a policy's exceeded blast radius (POST /api/clustertaintpolicies/{name}/acknowledge): the
 * guard then lets the policy taint beyond its limit for this episode, until it holds fewer taints again.
 */
/** Resume evictions fleet-wide (confirmed): the banner's and the fleet summary's button. */
export function ResumeButton({ waiting, onDone }: { waiting?: number; onDone: () => void }) {
  return (
    <ActionButton
      label="Resume evictions"
      path="failover/resume"
      confirmText={`Resume evictions?${waiting ? ` ${plural(waiting, 'waiting eviction')} will` : ' Waiting evictions'} run at the fleet's rate again.`}
      onDone={onDone}
      describe={() => 'Evictions resumed'}
    />
  );
}

export function AcknowledgeButton({ policy, onDone }: { policy: Policy; onDone: () => void }) {
  const name = policy.metadata.name;
  const b = policy.status?.blastRadius;
  const refused = b?.refused?.length ? b.refused.join(', ') : 'the clusters it refused';
  return (
    <ActionButton
      label={`Acknowledge ${name}`}
      path={`clustertaintpolicies/${q(name)}/acknowledge`}
      confirmText={
        `Acknowledge the exceeded blast radius of ${name}? It lets the policy taint beyond its limit ` +
        `(${b ? `${b.limit} of ${b.fleet} clusters` : 'its share of the fleet'}) for this episode: ${refused} may then be tainted and their workloads evicted. ` +
        'The limit holds again once the policy taints fewer clusters than that.'
      }
      onDone={onDone}
      describe={(r) => `Acknowledged ${name}: ${(r as { message?: string }).message ?? 'done'}`}
    />
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return <p class="empty">Loading {what}…</p>;
}

/** Why a load failed, in words: the server's status and message, or that it cannot be reached. */
export function LoadFailed({ what, error, onRetry, retrying = false }: { what: string; error: LoadError; onRetry: () => void; retrying?: boolean }) {
  const cause =
    error.status === 0
      ? 'cannot reach the server'
      : error.status === 503
        ? `the server is unavailable (HTTP 503)${error.retryAfter !== undefined ? `; it asks to retry in ${error.retryAfter} s (the page retries then)` : ''}`
        : error.status
          ? `the server answered HTTP ${error.status}`
          : 'it failed';
  return (
    <div class="load-error" data-testid="load-error">
      <p>
        <strong>
          {what[0].toUpperCase()}
          {what.slice(1)} cannot be loaded: {cause}.
        </strong>{' '}
        <span class="small">{error.message}</span>
      </p>
      <button type="button" onClick={onRetry} disabled={retrying}>
        {retrying ? 'Retrying…' : `Retry loading ${what}`}
      </button>
    </div>
  );
}

/** What stands in for a poll's data until it arrives: loading, or the failure with a retry. */
export function Pending({ poll, what }: { poll: Poll<unknown>; what: string }) {
  return poll.error ? <LoadFailed what={what} error={poll.error} onRetry={poll.refresh} retrying={poll.loading} /> : <Loading what={what} />;
}
