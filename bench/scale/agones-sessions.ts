/**
 * The multi-session Agones day: the Agones-style day's matches (`./agones-day.ts`, the same
 * seeded arrivals) on game servers that each host up to `capacity` matches at once, counting
 * them in an Agones Counter, as Agones' "High Density GameServers" pattern runs them
 * (googleforgames/agones v1.56.0 `site/content/en/docs/Integration Patterns/
 * high-density-gameservers.md`). The fleet follows the one fleet controller
 * (`sim/fleet-controller.ts`): its FleetAutoscaler's Counter policy keeps the single-session
 * day's Ready buffer as available Counter capacity (the same room for matches), a match takes
 * the fullest Allocated server with room, else a Ready one (Packed, Counter priority Ascending),
 * and increments its Counter; a match that ends decrements it. A server whose count returns to
 * 0 shuts down, as the single-session day's servers do after their match (Agones never moves it
 * back to Ready itself), and the GameServerSet makes another.
 *
 * A server hosting `capacity` matches requests `capacity` single-session servers' CPU, so a match
 * costs the same CPU either way (a node holds whole servers only: where its room for game servers
 * is not a multiple of a server's request, the larger servers leave more of it unused), and
 * berth's slot is one such server
 * (`gameServerCpuMillis`), its buffer the single-session day's in match slots (rounded up to
 * whole servers), with `scale.gameState.counter` naming the Counter.
 *
 * Targets (`judgeSessionsDay`), measured in the same run as the single-session Agones day:
 * no game server with a match on it interrupted, and node-hours per match-hour played no worse
 * than berth's on the single-session day.
 */
import { parseConfig } from '../../shared/config/schema.js';
import { scalePolicy } from '../../shared/scale/policy.js';
import { TRIGGER_DEBOUNCE_MS } from '../../shared/scale/trigger.js';
import {
  AGONES_SESSION_READY_LABEL,
  SESSION_LABEL_VALUES,
} from '../../shared/vocabulary/labels.js';
import type { Arrival } from '../../sim/arrivals.js';
import {
  type CounterPolicy,
  FleetController,
  type SessionCounter,
} from '../../sim/fleet-controller.js';
import {
  AGONES_DAY,
  type AgonesScenario,
  applyReconciliation,
  FLEET_SYNC_MS,
  fleetBufferFor,
} from './agones-day.js';
import { berthScaler } from './berth.js';
import {
  arrivals,
  type DayOutcome,
  HOUR,
  MAIN_SCENARIO,
  round,
  type Scenario,
  SimCluster,
  type SimGame,
  type SimNode,
  simulateDay,
} from './day.js';
import type { ScenarioResult } from './result.js';
import type { ScenarioVerdict } from './targets.js';

/** The Counter every game server of the day counts its matches in. */
export const SESSIONS_COUNTER = 'sessions';

/** Matches one game server hosts at once. */
export const SESSIONS_PER_SERVER = 4;

/** A day of multi-session game servers: the Counter's capacity and the autoscaler's policy. */
export type SessionsScenario = AgonesScenario & {
  readonly sessions: { readonly counter: string; readonly capacity: number };
  readonly counterPolicy: CounterPolicy;
};

const singleBuffer = fleetBufferFor(MAIN_SCENARIO);

/** The Agones day with four matches per game server (see the header). */
export const SESSIONS_DAY: SessionsScenario = {
  ...AGONES_DAY,
  name: 'agones-multi-session',
  description: `the Agones-style day's matches on game servers hosting up to ${SESSIONS_PER_SERVER} each, counted in the Agones Counter "${SESSIONS_COUNTER}" (scale.gameState.counter); a FleetAutoscaler Counter policy keeps ${singleBuffer} match slots available, synced every 30 s; a match takes the fullest Allocated server with room, else a Ready one; a server shuts down once its last match ends; each server requests ${SESSIONS_PER_SERVER} x 100m`,
  game: {
    ...AGONES_DAY.game,
    requestMillis: SESSIONS_PER_SERVER * AGONES_DAY.game.requestMillis,
    limitMillis: SESSIONS_PER_SERVER * AGONES_DAY.game.limitMillis,
  },
  scale: {
    ...AGONES_DAY.scale,
    gameServerCpuMillis: SESSIONS_PER_SERVER * AGONES_DAY.scale.gameServerCpuMillis,
    bufferGameServers: Math.ceil(AGONES_DAY.scale.bufferGameServers / SESSIONS_PER_SERVER),
  },
  sessions: { counter: SESSIONS_COUNTER, capacity: SESSIONS_PER_SERVER },
  counterPolicy: {
    bufferSize: singleBuffer,
    minCapacity: singleBuffer,
    maxCapacity: 10_000 * SESSIONS_PER_SERVER,
    capacity: SESSIONS_PER_SERVER,
    syncIntervalMs: FLEET_SYNC_MS,
  },
};

/** The cluster with a multi-session Agones Fleet on it (see the header). */
export class SessionsCluster extends SimCluster {
  readonly fleet: FleetController<SimGame>;
  readonly policy: CounterPolicy;
  readonly capacity: number;
  /** Each Allocated server's matches, by when each ends. */
  readonly #matchEnds = new Map<SimGame, number[]>();
  /** Each Allocated server's latest allocation (Agones' `agones.dev/last-allocated`). */
  readonly #allocatedAt = new Map<SimGame, number>();
  /** Matches waiting for a server with room, oldest first. */
  readonly #matches: Arrival[] = [];
  #nextId = 0;
  #matchMs = 0;

  constructor(sc: SessionsScenario, now: number) {
    super(sc, now);
    this.policy = sc.counterPolicy;
    this.capacity = sc.sessions.capacity;
    // The Counter policy sets the replicas; the Buffer policy's fields are never read.
    const floor = Math.ceil(sc.counterPolicy.minCapacity / sc.sessions.capacity);
    this.fleet = new FleetController(
      { bufferSize: 0, minReplicas: floor, maxReplicas: 10_000, syncIntervalMs: FLEET_SYNC_MS },
      (game) => this.#matchEnds.has(game),
    );
  }

  /** The Fleet's template opens every server's session label; a pass's patch may close it. */
  override gameServerLabels(game: SimGame): Readonly<Record<string, string>> {
    return (
      super.gameServerLabels(game) ?? { [AGONES_SESSION_READY_LABEL]: SESSION_LABEL_VALUES.open }
    );
  }

  /** A server holds players while a match is on it. */
  override holdsPlayers(game: SimGame): boolean {
    return (this.#matchEnds.get(game)?.length ?? 0) > 0;
  }

  override allocatedAtMs(game: SimGame): number | undefined {
    return this.#allocatedAt.get(game);
  }

  override sessionsOf(game: SimGame): SessionCounter {
    return { count: this.#matchEnds.get(game)?.length ?? 0, capacity: this.capacity };
  }

  /** A match: it takes room on a server (no pod is created for it). */
  override arrive(arrival: Arrival): void {
    this.#matches.push(arrival);
  }

  /** A server's pod that waited for a node is no player's wait. */
  protected override placed(_game: SimGame): void {}

  override endSessions(): void {
    for (const [game, ends] of this.#matchEnds) {
      const left = ends.filter((endsAt) => endsAt > this.now);
      if (left.length === ends.length) continue;
      if (left.length > 0) {
        this.#matchEnds.set(game, left);
        continue;
      }
      // Its last match is over: the GameServer shuts down and its pod goes.
      this.#matchEnds.delete(game);
      this.#allocatedAt.delete(game);
      game.node?.games.delete(game);
      if (game.node) game.node.lastPodEventAtMs = this.now;
    }
    if (this.now >= 0) {
      for (const ends of this.#matchEnds.values()) this.#matchMs += ends.length * this.sc.stepMs;
    }
  }

  /** The FleetAutoscaler, the GameServerSet, the scheduler, then the allocator. */
  override schedule(): void {
    const counter = (game: SimGame) => this.sessionsOf(game);
    // The matchmaker's Allocated selector: the session label "true"; berth closes it on the
    // servers of the nodes it cordons.
    const open = (game: SimGame) =>
      this.gameServerLabels(game)[AGONES_SESSION_READY_LABEL] === SESSION_LABEL_VALUES.open;
    this.fleet.autoscaleCounter(this.now, this.policy, this.nodes, this.queue.length, counter);
    applyReconciliation(
      this,
      this.fleet.reconcile(this.nodes, this.queue.length),
      () => this.#nextId++,
    );
    super.schedule();
    while (this.#matches.length > 0) {
      const server = this.fleet.allocateSession(this.nodes, counter, open);
      const match = this.#matches[0];
      if (!server || !match) return;
      this.#matches.shift();
      this.#matchEnds.set(server, [
        ...(this.#matchEnds.get(server) ?? []),
        this.now + match.sessionMs,
      ]);
      this.#allocatedAt.set(server, this.now);
      this.recordWait(match.atMs);
    }
  }

  /** A node a scaler removed: its servers with matches are interrupted, the rest made again. */
  override remove(node: SimNode): void {
    super.remove(node);
    for (const game of node.games) {
      this.#matchEnds.delete(game);
      this.#allocatedAt.delete(game);
    }
    node.games.clear();
  }

  override resetCounters(): void {
    super.resetCounters();
    this.#matchMs = 0;
  }

  override extraOutcome(): Partial<DayOutcome> {
    return { matchHours: round(this.#matchMs / HOUR, 2) };
  }
}

/** The cluster of a multi-session day, for `simulateDay`. */
export function sessionsCluster(sc: Scenario, now: number): SimCluster {
  if (!('counterPolicy' in sc)) throw new Error(`scenario ${sc.name} has no Counter policy`);
  return new SessionsCluster(sc as SessionsScenario, now);
}

/** Node-hours per match-hour played, three decimals; infinite when no match was played. */
export function nodeHoursPerMatchHour(o: DayOutcome): number {
  const played = o.matchHours ?? 0;
  return played > 0 ? round(o.nodeHours / played, 3) : Number.POSITIVE_INFINITY;
}

/**
 * The multi-session day's targets, against berth's single-session Agones day of the same run:
 * no server with a match interrupted, and node-hours per match-hour at most the single-session
 * day's.
 */
export function judgeSessionsDay(berth: DayOutcome, single: DayOutcome): ScenarioVerdict[] {
  const multi = nodeHoursPerMatchHour(berth);
  const one = nodeHoursPerMatchHour(single);
  return [
    {
      name: 'noServerWithAMatchInterrupted',
      pass: berth.interruptedGames === 0,
      line: `${berth.interruptedGames} game servers with a match on them interrupted by berth (${berth.lostGames} lost to a node failure, not counted)`,
    },
    {
      name: 'nodeHoursPerMatchHourNoWorseThanSingleSession',
      pass: multi <= one,
      line: `${berth.nodeHours} node-hours for ${berth.matchHours ?? 0} match-hours = ${multi} per match-hour, against the single-session Agones day's ${single.nodeHours} for ${single.matchHours ?? 0} = ${one} (ratio ${round(multi / one, 3)}, target <= 1); ${berth.waitingPods} allocations waited (single-session ${single.waitingPods})`,
    },
  ];
}

/**
 * The multi-session day under berth as served (admission-triggered passes), reading game state
 * and room from the Counter (`scale.gameState.counter`), judged against `single`, berth's
 * single-session Agones day of the same run. No peer runs: the targets compare berth with itself.
 */
export async function compareSessions(
  sc: SessionsScenario,
  single: DayOutcome,
): Promise<ScenarioResult & { readonly seed: number }> {
  const counter = sc.sessions.counter;
  const policy = scalePolicy(
    parseConfig({ scale: { ...sc.scale, gameState: { counter } } }).scale,
    {
      reactionMs: TRIGGER_DEBOUNCE_MS,
    },
  );
  const run = berthScaler(sc, policy, { triggered: true, agones: true, counter });
  const berth = await simulateDay(sc, arrivals(sc), run, sessionsCluster);
  return {
    scenario: sc.name,
    description: sc.description,
    seed: sc.seed,
    berth,
    baselines: {},
    best: {},
    targets: judgeSessionsDay(berth, single),
  };
}
