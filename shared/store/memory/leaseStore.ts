import type { LeaseStore } from '../ports';

/**
 * Leases in memory, as the Table adapter keeps them: the holder keeps a lease until `expiresAt`, renewing it
 * on the ETag of its last write; every write gives the lease a new ETag.
 */
export class MemoryLeaseStore implements LeaseStore {
  private readonly leases = new Map<string, { owner: string; expiresAt: number; etag: string }>();
  private writes = 0;

  constructor(private readonly now: () => Date = () => new Date()) {}

  async acquire(name: string, owner: string, ttlMs: number): Promise<{ taken: true; etag: string } | { taken: false; heldUntil: Date }> {
    await Promise.resolve();
    const now = this.now().getTime();
    const current = this.leases.get(name);
    if (current && current.owner !== owner && current.expiresAt > now) return { taken: false, heldUntil: new Date(current.expiresAt) };
    return { taken: true, etag: this.write(name, owner, now + ttlMs) };
  }

  async renew(name: string, owner: string, ttlMs: number, etag: string): Promise<string | undefined> {
    await Promise.resolve();
    if (this.leases.get(name)?.etag !== etag) return undefined;
    return this.write(name, owner, this.now().getTime() + ttlMs);
  }

  async release(name: string, owner: string): Promise<void> {
    await Promise.resolve();
    // The Table adapter deletes on the holder's ETag, or else if `owner` still holds the lease: the same.
    if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
  }

  /** Who holds `name` now, if anyone (for tests). */
  holder(name: string): string | undefined {
    const lease = this.leases.get(name);
    return lease && lease.expiresAt > this.now().getTime() ? lease.owner : undefined;
  }

  private write(name: string, owner: string, expiresAt: number): string {
    const etag = `W/"${++this.writes}"`;
    this.leases.set(name, { owner, expiresAt, etag });
    return etag;
  }
}
