/** The in-memory `Lease` of the pass tests and the benches that run passes without DynamoDB. */
import { LeaseLostError } from '../../shared/lease/errors.js';
import type { Lease, LeaseAttempt, LeaseGrant } from '../../shared/lease/lease.js';

/** Leases in memory on an injected clock. */
export class FakeLease implements Lease {
  readonly held = new Map<string, LeaseGrant>();
  readonly calls: string[] = [];

  constructor(private readonly now: () => number) {}

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<LeaseAttempt> {
    this.calls.push(`acquire:${name}:${holder}`);
    const current = this.held.get(name);
    if (current && current.holder !== holder && current.expiresAtMs > this.now()) {
      return { acquired: false, holder: current.holder, expiresAtMs: current.expiresAtMs };
    }
    const lease = { name, holder, expiresAtMs: this.now() + ttlMs };
    this.held.set(name, lease);
    return { acquired: true, lease };
  }

  async renewLease(name: string, holder: string, ttlMs: number): Promise<LeaseGrant> {
    this.calls.push(`renew:${name}:${holder}`);
    if (this.held.get(name)?.holder !== holder) throw new LeaseLostError(name, holder);
    const lease = { name, holder, expiresAtMs: this.now() + ttlMs };
    this.held.set(name, lease);
    return lease;
  }

  async releaseLease(name: string, holder: string): Promise<boolean> {
    this.calls.push(`release:${name}:${holder}`);
    if (this.held.get(name)?.holder !== holder) return false;
    this.held.delete(name);
    return true;
  }
}
