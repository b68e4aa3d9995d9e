import { Badge, Empty, When } from './components';
import type { FleetEvent } from './types';

/** A timeline of recorded events, newest first. */
export function EventTimeline({ events, caption }: { events: FleetEvent[]; caption: string }) {
  if (!events.length) return <Empty>No events recorded.</Empty>;
  const newest = [...events].reverse();
  return (
    <div class="scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Reason</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {newest.map((e, i) => (
            <tr key={`${e.time}-${i}`}>
              <td>
                <When iso={e.time} />
              </td>
              <td>{e.type === 'Warning' ? <Badge tone="warn">Warning</Badge> : 'Normal'}</td>
              <th scope="row">{e.reason}</th>
              <td>{e.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
