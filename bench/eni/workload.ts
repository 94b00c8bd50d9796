/**
 * The ENI benchmark's simulated day: a few hundred nodes of mixed instance types joining over ten
 * minutes, game sessions arriving on a diurnal curve, matchmaking waves, and the order in which
 * nodes join. Every policy (berth's and its peers') runs on exactly these events.
 */
import { thinnedArrivals } from '../../sim/arrivals.js';
import { seededRandom } from '../../sim/random.js';

export const DAY_S = 24 * 3600;
export const NODES = 300;
export const SEED = 20250601;
/** Node types, their share of the fleet and game-server slots (CPU-bound, below IP capacity). */
export const FLEET = [
  { type: 't3.medium', share: 0.2, slots: 8 },
  { type: 'c5.large', share: 0.3, slots: 8 },
  { type: 'm5.xlarge', share: 0.35, slots: 16 },
  { type: 'c5.4xlarge', share: 0.15, slots: 64 },
] as const;
/** Nodes join over the first ten minutes (a fleet does not boot in one second). */
export const JOIN_WINDOW_S = 600;
const SESSION_MIN_S = 10 * 60;
const SESSION_MAX_S = 30 * 60;
/** Every 15 minutes a matchmaking wave fills 40% of 5% of the nodes within 10 s... */
export const BURST_EVERY_S = 15 * 60;
const BURST_NODE_SHARE = 0.05;
const BURST_SLOT_SHARE = 0.4;
/** ...and those matches end together about 15 minutes later. */
const BURST_SESSION_S = 15 * 60;
/** A pod refused an IP retries after this (kubelet/CNI retry). */
export const RETRY_S = 5;
export const BERTH_PASS_S = 60;
export const CNI_LOOP_S = 5;
export const CNI_COOLDOWN_MS = 30_000;
export const CNI_DECREASE_INTERVAL_MS = 30_000;
export const CNI_MIN_ENI_LIFETIME_MS = 60_000;
export const START = Date.parse('2025-06-02T00:00:00Z');

export interface NodeSpec {
  readonly name: string;
  readonly type: string;
  readonly slots: number;
  readonly joinAt: number;
  readonly cniPhase: number;
}

export interface PodEvent {
  readonly at: number;
  readonly kind: 'arrive' | 'depart';
  readonly node: number;
  readonly pod: string;
}

/** The fraction of slots in use the day wants at second `t`: lowest at 04:00, highest at 16:00. */
export function diurnal(t: number): number {
  return 0.2 + 0.65 * (0.5 - 0.5 * Math.cos((2 * Math.PI * (t - 4 * 3600)) / DAY_S));
}

/** The day's pod arrivals and departures, identical for every policy. */
export function generateWorkload(): { nodes: NodeSpec[]; events: PodEvent[] } {
  const random = seededRandom(SEED);
  const nodes: NodeSpec[] = [];
  for (let i = 0; i < NODES; i++) {
    const pick = random();
    let cumulative = 0;
    const kind =
      FLEET.find((f) => {
        cumulative += f.share;
        return pick < cumulative;
      }) ?? FLEET[FLEET.length - 1];
    if (!kind) throw new Error('empty fleet');
    nodes.push({
      name: `node-${String(i).padStart(3, '0')}`,
      type: kind.type,
      slots: kind.slots,
      joinAt: Math.floor(random() * JOIN_WINDOW_S),
      cniPhase: Math.floor(random() * CNI_LOOP_S),
    });
  }
  const candidates: { at: number; node: number; session: number }[] = [];
  const meanSession = (SESSION_MIN_S + SESSION_MAX_S) / 2;
  const length = (r: () => number) =>
    1000 * (SESSION_MIN_S + r() * (SESSION_MAX_S - SESSION_MIN_S));
  nodes.forEach((node, n) => {
    // Each node's sessions: diurnal(t) × slots / mean session a second, at most 0.85 × that.
    const perSecond = (share: number) => (share * node.slots) / meanSession;
    const rate = {
      fromMs: (node.joinAt + 30) * 1000,
      toMs: DAY_S * 1000,
      peakPerMinute: 60 * perSecond(0.85),
      perMinute: (atMs: number) => 60 * perSecond(diurnal(atMs / 1000)),
    };
    for (const a of thinnedArrivals(rate, length, random)) {
      candidates.push({ at: a.atMs / 1000, node: n, session: a.sessionMs / 1000 });
    }
  });
  for (let wave = BURST_EVERY_S; wave < DAY_S; wave += BURST_EVERY_S) {
    nodes.forEach((node, n) => {
      if (random() >= BURST_NODE_SHARE || wave < node.joinAt + 60) return;
      const size = Math.round(BURST_SLOT_SHARE * node.slots * (0.5 + diurnal(wave)));
      for (let k = 0; k < size; k++) {
        candidates.push({
          at: wave + random() * 10,
          node: n,
          session: BURST_SESSION_S + (random() - 0.5) * 120,
        });
      }
    });
  }
  candidates.sort((a, b) => a.at - b.at);
  // Admit an arrival only while its node has a free slot (the fleet allocator would place it
  // elsewhere otherwise): the same admitted pods then run under every policy.
  const ends: number[][] = nodes.map(() => []);
  const events: PodEvent[] = [];
  let seq = 0;
  for (const c of candidates) {
    const active = (ends[c.node] ?? []).filter((end) => end > c.at);
    ends[c.node] = active;
    if (active.length >= (nodes[c.node]?.slots ?? 0)) continue;
    const pod = `gs-${seq++}`;
    const end = Math.min(c.at + c.session, DAY_S - 1);
    active.push(end);
    events.push({ at: c.at, kind: 'arrive', node: c.node, pod });
    events.push({ at: end, kind: 'depart', node: c.node, pod });
  }
  events.sort((a, b) => a.at - b.at || (a.kind === 'depart' ? -1 : 1));
  return { nodes, events };
}

/**
 * The most pods any one node of each instance type runs at once over `events` (in time order,
 * departures first at a tie, as `generateWorkload` sorts them): what a user sizing each node
 * group's MINIMUM_IP_TARGET reads off the day. Types in FLEET order.
 */
export function peakPodsByType(
  nodes: readonly NodeSpec[],
  events: readonly PodEvent[],
): Record<string, number> {
  const running = nodes.map(() => 0);
  const rank = (type: string) => {
    const at = FLEET.findIndex((f) => f.type === type);
    return at < 0 ? FLEET.length : at;
  };
  const types = [...new Set(nodes.map((n) => n.type))].sort((a, b) => rank(a) - rank(b));
  const peak: Record<string, number> = Object.fromEntries(types.map((type) => [type, 0]));
  for (const event of events) {
    const type = nodes[event.node]?.type;
    if (type === undefined) continue;
    const now = (running[event.node] ?? 0) + (event.kind === 'arrive' ? 1 : -1);
    running[event.node] = now;
    peak[type] = Math.max(peak[type] ?? 0, now);
  }
  return peak;
}

/** The nodes in the order they join the cluster, handed out as their join time comes. */
export class JoinSchedule {
  readonly #nodes: readonly NodeSpec[];
  readonly #order: readonly number[];
  #joined = 0;

  constructor(nodes: readonly NodeSpec[]) {
    this.#nodes = nodes;
    this.#order = nodes
      .map((_, i) => i)
      .sort((a, b) => (nodes[a]?.joinAt ?? 0) - (nodes[b]?.joinAt ?? 0));
  }

  /** The nodes joining by `second`, each once, with the subnet its instance launches in. */
  *due(second: number): Generator<{
    readonly index: number;
    readonly spec: NodeSpec;
    readonly subnetId: string;
  }> {
    while (this.#joined < this.#order.length) {
      const index = this.#order[this.#joined] ?? 0;
      const spec = this.#nodes[index];
      if (!spec || spec.joinAt > second) return;
      this.#joined++;
      yield { index, spec, subnetId: index % 2 ? 'subnet-a' : 'subnet-b' };
    }
  }

  /** The nodes that have joined so far. */
  joined(): NodeSpec[] {
    return this.#order.slice(0, this.#joined).flatMap((index) => this.#nodes[index] ?? []);
  }
}

/** Whether `second` falls in the first 15 s of a matchmaking wave (waves fill within 10 s). */
export function isBurstWave(second: number): boolean {
  return second >= BURST_EVERY_S && second % BURST_EVERY_S < 15;
}
