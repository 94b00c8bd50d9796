/**
 * The work the fronts worker does, queued by admission (SQS in AWS, timers in `berth serve`):
 * `bind` once a game server's node is known, `release` once its pod is deleted. Small and
 * self-describing, because it travels through a queue and may come back many times: every step
 * it names is safe to repeat.
 */
import type { PortProtocol } from '../hostports/model.js';
import type { FrontKind } from './model.js';

/** A listener slot: one NLB's listener port, an exclusive value. */
export interface ListenerSlot {
  readonly loadBalancerArn: string;
  readonly port: number;
}

/** One fronted port of a game server, as the bind needs it. */
export interface FrontedPortWork {
  /** The port's name in `berth.dev/ports`. */
  readonly name: string;
  readonly front: FrontKind;
  readonly protocol: PortProtocol;
  /** The host port on the node: the destination behind the front. */
  readonly hostPort: number;
}

/** Make a bound game server reachable through its fronts. */
export interface BindWork {
  readonly kind: 'bind';
  readonly cluster: string;
  readonly namespace: string;
  readonly pod: string;
  readonly allocationId: string;
  readonly node: string;
  /** The node's private address: the NLB target and the accelerator destination. */
  readonly nodeAddress: string;
  readonly ports: readonly FrontedPortWork[];
  /** Epoch ms of the binding admission, for the reachable-after-binding measure. */
  readonly boundAt: number;
  /** How often it was queued again after part of it was done (absent: never). */
  readonly resumed?: number;
}

/** Take a deleted game server's fronts down once its pod is gone from the API. */
export interface ReleaseWork {
  readonly kind: 'release';
  readonly cluster: string;
  readonly namespace: string;
  readonly pod: string;
  readonly allocationId: string;
  /** Epoch ms of the DELETE admission. */
  readonly admittedAt: number;
  /** 0 for the first look; each re-check adds one (the backoff's step). */
  readonly attempt: number;
}

/** One item of front work. */
export type FrontWork = BindWork | ReleaseWork;

/** Where front work is queued. */
export interface FrontQueue {
  submit(work: FrontWork, delaySeconds: number): Promise<void>;
}

/** What became of one item of work. */
export type FrontWorkOutcome =
  | { readonly kind: 'reachable'; readonly at: number }
  | { readonly kind: 'released' }
  | { readonly kind: 'waiting'; readonly recheckAfter: number }
  | { readonly kind: 'skipped'; readonly reason: string }
  /**
   * Stopped by the budget, the service's throttling, or a previous owner's listener still on the
   * slot: queued again, for when the budget has a token or after a short backoff.
   */
  | { readonly kind: 'deferred'; readonly retryAfter: number }
  | { readonly kind: 'failed'; readonly error: unknown };
