import { describe, expect, it } from 'vitest';
import { assignSlots, directStartLeads, earliestSlot } from '../../shared/failover/evictionDecision';

/** The pacer's leads when its caller runs the first messages itself. */
describe('directStartLeads', () => {
  const polled = { freshMs: 1500, deliveryMs: 1000 };

  it('starts a fresh series at the hand-off lead and continues a running one at the delivery lead', () => {
    expect(directStartLeads(polled, 250)).toEqual({ freshMs: 250, deliveryMs: 1000 });
    const leads = directStartLeads(polled, 250);
    // Run out (next free slot in the past): now + 250, not now + 1500.
    expect(earliestSlot(9_000, 10_000, leads)).toBe(10_250);
    // Running: continues down to now + 1000, as without the hand-off.
    expect(earliestSlot(10_100, 10_000, leads)).toBe(11_000);
  });

  it('never lengthens a lead', () => {
    expect(directStartLeads(polled, 5000)).toEqual(polled);
    expect(directStartLeads({ freshMs: 100, deliveryMs: 50 }, 250)).toEqual({ freshMs: 100, deliveryMs: 50 });
  });

  it('keeps the slots 1/rate apart after the stored next free slot, whatever the lead', () => {
    const leads = directStartLeads(polled, 250);
    // A running series whose next free slot is 10.4 s: a pass at 10.0 s continues a delivery lead ahead, 200 ms apart.
    const { slots } = assignSlots([0, 0, 0], 10_400, earliestSlot(10_400, 10_000, leads), 5, 20_000);
    expect(slots).toEqual([11_000, 11_200, 11_400]);
    // Its next free slot further out than that: it continues there, never closer.
    expect(assignSlots([0, 0], 11_300, earliestSlot(11_300, 10_000, leads), 5, 20_000).slots).toEqual([11_300, 11_500]);
    // Run out: from now + 250, 200 ms apart.
    expect(assignSlots([0, 0], 9_000, earliestSlot(9_000, 10_000, leads), 5, 20_000).slots).toEqual([10_250, 10_450]);
  });
});
