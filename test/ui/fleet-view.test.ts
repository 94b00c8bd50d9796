/**
 * The web view of `berth sim --scenario agones-fleet` in a real browser (Debian's Chromium,
 * headless, driven by playwright-core): each node's Ready, Reserved and Allocated game servers
 * drawn apart, in the numbers the Kubernetes API stand-in's Agones GameServers have.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { simConfig } from '../../sim/config.js';
import type { KubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { runSim, SIM_DEFAULTS } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { freshTable } from '../support/dynamo.js';
import { launchChromium, pageProblems } from './chromium.js';
import { holdAt } from './held-day.js';

/**
 * Where the test leaves its picture of the fleet's nodes (git ignores `.berth/`): docs/game-state.md
 * shows this file, copied to docs/ when the view changes.
 */
const SCREENSHOT = '.berth/ui-fleet.png';

const DAY = {
  ...SIM_DEFAULTS,
  scenario: 'agones-fleet' as const,
  hours: 0.25,
  speed: 1_000_000,
  nodes: 6,
  sessionsPerMinute: 6,
  services: 2,
  checkEvery: 50,
};

/** The Agones states the view draws, as the GameServer's `status.state` spells them. */
const AGONES = { Ready: 'ready', Reserved: 'reserved', Allocated: 'allocated' } as const;
type Counts = Record<'ready' | 'reserved' | 'allocated', number>;

/**
 * Each node's GameServers by `status.state`, counted straight from the stand-in (a GameServer
 * is on the node its pod is bound to), for every node the API holds.
 */
function gameServersByNode(api: KubeApiServer): Record<string, Counts> {
  const counts: Record<string, Counts> = {};
  for (const name of api.nodes.keys()) counts[name] = { ready: 0, reserved: 0, allocated: 0 };
  for (const gs of api.gameServers.values()) {
    const pod = api.pods.get(`${gs.metadata?.namespace}/${gs.metadata?.name}`);
    const node = pod?.spec?.nodeName;
    const state = AGONES[gs.status?.state as keyof typeof AGONES];
    const entry = node ? counts[node] : undefined;
    if (entry && state) entry[state] += 1;
  }
  return counts;
}

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
});

describe('the web view during berth sim --scenario agones-fleet', { timeout: 300_000 }, () => {
  it("draws each node's Ready, Reserved and Allocated game servers apart, as many as the stand-in's GameServers", async () => {
    const { client, tableName } = await freshTable();
    const serverErrors: unknown[] = [];
    const sim = await startSimServer({
      config: simConfig(parseConfig({ cluster: 'fleet-view' }), DAY),
      dynamo: client,
      tableName,
      listen: { host: '127.0.0.1', port: 0 },
      onError: (error) => serverErrors.push(error),
    });
    const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    const problems = pageProblems(page);
    // Partway through the day, sessions run and the buffer is Ready: the day stands still.
    const hold = holdAt(150);
    try {
      await page.goto(`${sim.server.url}/ui`);
      const run = runSim(sim.target, DAY, { watch: sim.watch, afterEvent: hold.atEvent });
      await hold.reached;
      // A match reserves one Ready server (Agones' SDK.Reserve), as the fleet's players would.
      const ready = [...sim.api.gameServers.entries()].find(
        ([key, gs]) =>
          gs.status?.state === 'Ready' && sim.api.pods.get(key)?.spec?.nodeName !== undefined,
      );
      expect(ready).toBeDefined();
      const [key, gs] = ready ?? ['', {}];
      sim.api.gameServers.set(key, { ...gs, status: { ...gs.status, state: 'Reserved' } });

      const expected = gameServersByNode(sim.api);
      const totals = Object.values(expected).reduce(
        (sum, c) => ({
          ready: sum.ready + c.ready,
          reserved: sum.reserved + c.reserved,
          allocated: sum.allocated + c.allocated,
        }),
        { ready: 0, reserved: 0, allocated: 0 },
      );
      // The fleet has both kinds to tell apart, and the one reserved.
      expect(totals.ready).toBeGreaterThan(0);
      expect(totals.allocated).toBeGreaterThan(0);
      expect(totals.reserved).toBe(1);

      const fleetLine = () => page.locator('#fleet-states').textContent();
      await expect
        .poll(fleetLine, { timeout: 20_000 })
        .toBe(
          `Game servers on these nodes: ${totals.allocated} allocated, ${totals.reserved} reserved, ${totals.ready} ready`,
        );
      // Every node the stand-in holds is drawn, with its GameServers' numbers in words and in
      // markers alike.
      const drawn = await page
        .locator('[data-node]')
        .evaluateAll((cards) => cards.map((card) => card.getAttribute('data-node')));
      expect(drawn.sort()).toEqual(Object.keys(expected).sort());
      const states = ['ready', 'reserved', 'allocated'] as const;
      for (const [node, c] of Object.entries(expected)) {
        const card = page.locator(`[data-node="${node}"]`);
        const words = card.locator('.node-pods');
        expect(await words.textContent()).toBe(
          `${c.ready + c.reserved + c.allocated} game servers: ${c.allocated} allocated, ${c.reserved} reserved, ${c.ready} ready`,
        );
        for (const state of states) {
          expect({ node, state, count: Number(await words.getAttribute(`data-${state}`)) }).toEqual(
            { node, state, count: c[state] },
          );
          expect({
            node,
            state,
            markers: await card.locator(`.gs[data-state="${state}"]`).count(),
          }).toEqual({ node, state, markers: c[state] });
        }
      }

      // Apart to the eye, and not by colour alone: each state its own colour and shape.
      const look = (state: string) =>
        page
          .locator(`[data-node] .gs[data-state="${state}"]`)
          .first()
          .evaluate((el) => {
            // The page's window (the test compiles without the DOM's types).
            const style = (
              globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }
            ).getComputedStyle(el);
            return `${style.borderTopColor} ${style.backgroundImage} ${style.backgroundColor} ${style.borderTopLeftRadius}`;
          });
      const looks = await Promise.all(states.map(look));
      expect(new Set(looks).size).toBe(3);
      const legend = await page.locator('#game-legend').textContent();
      for (const word of ['allocated:', 'reserved:', 'ready:']) expect(legend).toContain(word);
      await page.locator('#cluster-section').screenshot({ path: SCREENSHOT });

      hold.release();
      const report = await run;
      expect(report.violations).toEqual([]);
      expect(report.fleet?.allocatedInterrupted).toBe(0);
      expect(problems).toEqual([]);
      expect(serverErrors).toEqual([]);
    } finally {
      hold.release();
      await page.close();
      await sim.close();
    }
  });
});
