import type { LeaseStore } from '../ports';

/** Leases in memory, as the Table adapter keeps them: the holder keeps a lease until `expiresAt`, renewing it. */
export class MemoryLeaseStore implements LeaseStore {
  private readonly leases = new Map<string, { owner: string; expiresAt: number }>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  async acquire(name: string, owner: string, ttlMs: number): Promise<boolean> {
    await Promise.resolve();
    const now = this.now().getTime();
    const current = this.leases.get(name);
    if (current && current.owner !== owner && current.expiresAt > now) return false;
    this.leases.set(name, { owner, expiresAt: now + ttlMs });
    return true;
  }

  async release(name: string, owner: string): Promise<void> {
    await Promise.resolve();
    if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
  }

  /** Who holds `name` now, if anyone (for tests). */
  holder(name: string): string | undefined {
    const lease = this.leases.get(name);
    return lease && lease.expiresAt > this.now().getTime() ? lease.owner : undefined;
  }
}
