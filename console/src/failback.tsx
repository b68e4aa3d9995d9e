import { get, HttpError } from './api';
import { Badge, Empty, Pending, Section, When } from './components';
import { bindingHref, bindingName } from './format';
import { useNow, usePoll } from './state';
import type { Failback, FailbackState } from './types';

const ORDER: FailbackState[] = ['scheduled', 'queued', 'counting', 'waiting-for-home', 'done'];
const EXPLAIN: Record<FailbackState, string> = {
  'waiting-for-home': 'waiting for the home cluster to be healthy',
  counting: 'home healthy: counting down its window',
  queued: 'due: queued at the fleet rate',
  scheduled: 'scheduled to go home',
  done: 'back home',
};

/** GET /api/failback; undefined when the server has none (404). */
async function loadFailback(): Promise<Failback[] | undefined> {
  try {
    return (await get<{ bindings?: Failback[] }>('failback')).bindings ?? [];
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) return undefined;
    throw e;
  }
}

function FailbackBadge({ state }: { state: FailbackState }) {
  const tone = state === 'done' ? 'ok' : state === 'waiting-for-home' ? 'muted' : state === 'counting' ? 'info' : 'warn';
  return <Badge tone={tone}>{state}</Badge>;
}

/** #/failback: bindings that left their home cluster, and when each goes back. */
export function FailbackView() {
  const data = usePoll('failback', async () => ({ items: await loadFailback() }), 5000);
  const now = useNow(1000);
  if (!data.data) return <Pending poll={data} what="the failback state" />;
  const items = data.data.items;
  if (items === undefined)
    return (
      <Section title="Going home" id="failback-list">
        <Empty>No failback data: this server does not report failback (GET /api/failback is not there).</Empty>
      </Section>
    );
  const sorted = [...items].sort((a, b) => ORDER.indexOf(a.state) - ORDER.indexOf(b.state) || String(a.dueAt ?? '~').localeCompare(String(b.dueAt ?? '~')));
  const done = items.filter((f) => f.state === 'done').length;
  return (
    <Section title="Going home" id="failback-list">
      {sorted.length ? (
        <div class="scroll">
          <table data-testid="failback">
            <caption>
              Workloads that failed over away from their home cluster and go back once it has been healthy for their window ({items.length - done} waiting,{' '}
              {done} back home)
            </caption>
            <thead>
              <tr>
                <th scope="col">Workload</th>
                <th scope="col">Home</th>
                <th scope="col">Now on</th>
                <th scope="col">State</th>
                <th scope="col">Home healthy since</th>
                <th scope="col">Window</th>
                <th scope="col">Goes home</th>
              </tr>
            </thead>
            <tbody>
              {sorted.map((f) => (
                <tr key={`${bindingName(f.binding)}-${f.home}`} data-failback={bindingName(f.binding)}>
                  <th scope="row">
                    <a href={bindingHref(f.binding)}>{bindingName(f.binding)}</a>
                  </th>
                  <td>{f.home}</td>
                  <td>{f.replacedBy?.join(', ') || '—'}</td>
                  <td>
                    <FailbackBadge state={f.state} /> <small>{EXPLAIN[f.state] ?? ''}</small>
                  </td>
                  <td>
                    <When iso={f.healthySince} />
                  </td>
                  <td>{f.windowSeconds} s</td>
                  <td>{f.dueAt && f.state !== 'done' ? <When iso={f.dueAt} now={now} /> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>No workload is waiting to go home.</Empty>
      )}
    </Section>
  );
}
