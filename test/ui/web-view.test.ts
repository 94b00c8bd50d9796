/**
 * The web view in a real browser: Debian's Chromium, headless, driven by playwright-core, against
 * the local server's real HTTP surface over DynamoDB Local. Never a downloaded browser.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveRuntime } from '../../bench/support/serve-runtime.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import type { RunningServer } from '../../shared/local/server.js';
import { nodesView } from '../../shared/ui/node-view.js';
import { simConfig } from '../../sim/config.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { runSim, SIM_DEFAULTS } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { gamePod } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';
import { launchChromium, pageProblems } from './chromium.js';
import { holdAt } from './held-day.js';

/**
 * Where the sim test leaves its screenshot of a wave (git ignores `.berth/`): the README's
 * picture is this file, copied to docs/ when the view changes.
 */
const SCREENSHOT = '.berth/ui-wave.png';

let server: RunningServer;
let browser: Browser;
let serverErrors: unknown[] = [];

async function admit(body: unknown): Promise<{ allowed: boolean }> {
  const answer = await fetch(`${server.url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { response: { allowed: boolean } }).response;
}

/** The page, with every console error and uncaught exception it raises collected. */
async function openView(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const problems = pageProblems(page);
  await page.goto(`${server.url}/ui`);
  return { page, problems };
}

beforeAll(async () => {
  const { client, tableName } = await freshTable();
  const config = parseConfig({ cluster: 'ui-test', serviceCIDRs: ['10.60.0.0/24'] });
  const runtime = createRuntime({ config, dynamo: client, tableName });
  ({ server, internalFaults: serverErrors } = await serveRuntime(runtime));
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the web view at /ui', { timeout: 60_000 }, () => {
  it('shows the ranges, pools and rate chart the server reports, with accessible names and no script or CSP error', async () => {
    const { page, problems } = await openView();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated /);
    expect(await page.locator('#cluster').textContent()).toBe('cluster ui-test');
    const clusterIps = page.getByRole('meter', { name: /^cluster IPs 10\.60\.0\.0\/24: / });
    expect(await clusterIps.getAttribute('aria-label')).toBe(
      'cluster IPs 10.60.0.0/24: 0 of 254 used',
    );
    expect(await page.getByRole('meter', { name: /^node ports 30000-32767: / }).count()).toBe(1);
    expect(
      await page
        .getByRole('img', { name: /^use count per port of host port range default, ports / })
        .count(),
    ).toBe(1);
    expect(await page.getByRole('table', { name: 'ENI pools' }).isVisible()).toBe(true);
    expect(await page.getByText('No ENI pool yet').isVisible()).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('updates live as Services and game servers arrive', async () => {
    const { page, problems } = await openView();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated /);
    for (const name of ['web', 'api', 'chat']) {
      const answer = await admit(
        review({
          resource: 'services',
          operation: 'CREATE',
          name,
          object: { metadata: { name, namespace: 'default' }, spec: { ports: [{ port: 80 }] } },
        }),
      );
      expect(answer.allowed).toBe(true);
    }
    const pod = gamePod([{ name: 'game', containerPort: 7777 }], { name: 'gs-1' });
    expect(
      (await admit(review({ resource: 'pods', operation: 'CREATE', name: 'gs-1', object: pod })))
        .allowed,
    ).toBe(true);

    await expect
      .poll(
        () =>
          page
            .getByRole('meter', { name: /^cluster IPs 10\.60\.0\.0\/24: / })
            .getAttribute('aria-label'),
        { timeout: 10_000 },
      )
      .toBe('cluster IPs 10.60.0.0/24: 3 of 254 used');
    await expect
      .poll(() => page.locator('[data-hostport-range="default"] .range-used').textContent(), {
        timeout: 10_000,
      })
      .toBe('1 held; use counts 0 to 1');
    // The chart saw the allocations arrive.
    await expect.poll(() => page.locator('#rate-now').textContent()).toMatch(/peak [1-9]/);
    expect(problems).toEqual([]);
    expect(serverErrors).toEqual([]);
    await page.close();
  });

  it('counts allocations per second, not net growth: Services created and deleted between two readings still count', async () => {
    const { page, problems } = await openView();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated .* \(wall-clock\)$/);
    const used = async () => {
      const status = (await (await fetch(`${server.url}/v1/status`)).json()) as {
        ranges: { kind: string; used: number }[];
      };
      return status.ranges.find((range) => range.kind === 'clusterIP')?.used;
    };
    const before = await used();
    // Without a cluster, values a Service gives back are freed at admission: no net growth.
    for (const name of ['churn-1', 'churn-2', 'churn-3', 'churn-4']) {
      const object = { metadata: { name, namespace: 'default' }, spec: { ports: [{ port: 80 }] } };
      const created = (await admit(
        review({ resource: 'services', operation: 'CREATE', name, object }),
      )) as { allowed: boolean; patch?: string };
      expect(created.allowed).toBe(true);
      const stored = applyPatch(object, decodePatch(created.patch));
      expect(
        (
          await admit(
            review({ resource: 'services', operation: 'DELETE', name, oldObject: stored }),
          )
        ).allowed,
      ).toBe(true);
    }
    await expect
      .poll(() => page.locator('#rate-now').textContent(), { timeout: 10_000 })
      .toMatch(/peak [1-9][0-9.]* .* [1-9][0-9]* values allocated by this server/);
    // Every value given back: no net growth, and still allocations to count.
    expect(await used()).toBe(before);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('says who holds a host port, a cluster IP or what namespace/name holds, from a form on the page', async () => {
    const pod = gamePod([{ name: 'game', containerPort: 7777 }], { name: 'gs-lookup' });
    const created = (await admit(
      review({ resource: 'pods', operation: 'CREATE', name: 'gs-lookup', object: pod }),
    )) as { allowed: boolean; patch?: string };
    expect(created.allowed).toBe(true);
    const hostPorts = decodePatch(created.patch).find(
      (op) => op.path === '/metadata/annotations/berth.dev~1host-ports',
    );
    const port = (JSON.parse(String(hostPorts?.value)) as { game: number }).game;
    const object = {
      metadata: { name: 'lookup', namespace: 'default' },
      spec: { ports: [{ port: 80 }] },
    };
    const service = (await admit(
      review({ resource: 'services', operation: 'CREATE', name: 'lookup', object }),
    )) as { allowed: boolean; patch?: string };
    const ip = String(
      decodePatch(service.patch).find((op) => op.path === '/spec/clusterIP')?.value,
    );

    const { page, problems } = await openView();
    const form = page.getByRole('search', { name: 'Who holds it?' });
    const ask = async (value: string) => {
      await form.getByLabel(/cluster IP/).fill(value);
      await form.getByRole('button', { name: 'Look up' }).click();
    };
    await ask(String(port));
    await expect
      .poll(() => page.locator('#holder-answer').textContent(), { timeout: 10_000 })
      .toContain(`hostPort ${port}/UDP (default): Pod default/gs-lookup`);
    // A Service found by name, whose CREATE wrote no owner record.
    await ask('default/lookup');
    await expect
      .poll(() => page.locator('#holder-answer').textContent(), { timeout: 10_000 })
      .toContain(`clusterIP ${ip} (10.60.0.0/24): Service`);
    // By its value, without a cluster to name it from (this server records no CREATE): the page
    // says why it has no name, never a hint printed where a name goes.
    await ask(ip);
    await expect
      .poll(() => page.locator('#holder-answer').textContent(), { timeout: 10_000 })
      .toMatch(
        new RegExp(
          `^clusterIP ${ip.replaceAll('.', '\\.')} \\(10\\.60\\.0\\.0/24\\): Service \\(not named: no owner record, and no cluster here to read it from; `,
        ),
      );
    // Cluster IPs are drawn at random, so the free address asked about is one the Service above
    // was not given.
    const free = ip === '10.60.0.250' ? '10.60.0.251' : '10.60.0.250';
    await ask(free);
    await expect
      .poll(() => page.locator('#holder-answer').textContent(), { timeout: 10_000 })
      .toBe(`Nobody holds ${free}.`);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows the nodes on their way (asked for and not registered, registered and not Ready) and marks each node', async () => {
    const node = (name: string, joining: boolean, draining = false) => ({
      name,
      cpuMillis: 16_000,
      usedCpuMillis: 0,
      gameServers: 0,
      cordoned: draining,
      draining,
      joining,
    });
    const state = {
      cluster: 'ui-test',
      at: Date.now(),
      ranges: [],
      pools: [],
      hostPorts: [],
      allocations: 0,
      clusterView: {
        ...nodesView(
          [node('game-node-1', false), node('game-node-2', true), node('game-node-3', false, true)],
          [],
        ),
        pendingGameServers: 3,
        nodesOnTheirWay: 2,
      },
    };
    const { page, problems } = await openView();
    await page.route('**/ui/state', (route) =>
      route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(state) }),
    );
    await expect
      .poll(() => page.locator('#nodes-coming').textContent(), { timeout: 10_000 })
      .toBe(
        'Nodes on their way: 2 asked for and not registered yet, 1 registered and not Ready yet',
      );
    expect(await page.locator('[data-node="game-node-2"]').getAttribute('data-joining')).toBe(
      'true',
    );
    expect(
      await page
        .getByRole('list', { name: 'marks of game-node-2' })
        .getByRole('listitem')
        .allTextContents(),
    ).toEqual(['joining: not Ready yet']);
    const marks = (name: string) =>
      page
        .getByRole('list', { name: `marks of ${name}` })
        .getByRole('listitem')
        .allTextContents();
    expect(await marks('game-node-3')).toEqual(['cordoned', 'draining']);
    expect(await marks('game-node-1')).toEqual([]);
    expect(await page.locator('[data-node="game-node-1"]').getAttribute('data-joining')).toBe(
      'false',
    );
    expect(problems).toEqual([]);
    await page.close();
  });

  it('says so when berth stops answering, and recovers', async () => {
    const { page } = await openView();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated /);
    await page.route('**/ui/state', (route) => route.fulfill({ status: 503, body: '' }));
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^berth is not answering \(HTTP 503\); retrying/);
    await page.unroute('**/ui/state');
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated /);
    await page.close();
  });

  it('says berth is up and its store is down when the store does not answer, naming the store', async () => {
    const { page } = await openView();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(/^updated /);
    // What berth answers while its DynamoDB Local is down (shared/http/unavailable.ts).
    const error =
      "the store did not answer: DynamoDB Local at http://127.0.0.1:8000, table berth: Error: connect ECONNREFUSED 127.0.0.1:8000; until it does, game-server and Service CREATEs are refused (the webhooks' failurePolicy)";
    await page.route('**/ui/state', (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error }),
      }),
    );
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toBe(
        'berth is up, but the store did not answer: DynamoDB Local at http://127.0.0.1:8000, table berth: Error: connect ECONNREFUSED 127.0.0.1:8000; retrying',
      );
    await page.close();
  });
});

describe('the web view during berth sim', { timeout: 120_000 }, () => {
  it('shows the nodes and ranges of the run, follows its game servers, and reports a violation the test injects', async () => {
    const { client, tableName } = await freshTable();
    const day = {
      ...SIM_DEFAULTS,
      hours: 0.5,
      speed: 1_000_000,
      nodes: 6,
      sessionsPerMinute: 8,
      services: 8,
      checkEvery: 20,
    };
    const sim = await startSimServer({
      config: simConfig(parseConfig({ cluster: 'sim-view', serviceCIDRs: ['10.80.0.0/24'] }), day),
      dynamo: client,
      tableName,
      listen: { host: '127.0.0.1', port: 0 },
      onError: (error) => serverErrors.push(error),
    });
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    // Mid-wave: the day is held still while the page is looked at, then a count is broken.
    const hold = holdAt(200);
    try {
      await page.goto(`${sim.server.url}/ui`);
      const run = runSim(sim.target, day, {
        watch: sim.watch,
        afterEvent: async (index) => {
          await hold.atEvent(index);
          if (index === 201) {
            await sim.runtime.hostPortStore.addUses([
              { name: 'lost', range: 'default', port: 7999, protocol: 'UDP' },
            ]);
          }
        },
      });
      // However slowly the day runs, the page is looked at once it stands still.
      await hold.reached;
      await expect
        .poll(() => page.locator('#cluster-summary').textContent(), { timeout: 20_000 })
        .toMatch(
          /^[1-9]\d* game servers on \d+ nodes, \d+ waiting for a node, \d+ waiting for an address; admission p50 [\d.]+ ms, p99 [\d.]+ ms$/,
        );
      // The day is held: the boxes drawn are the nodes the summary counts.
      const summary = (await page.locator('#cluster-summary').textContent()) ?? '';
      const nodes = Number(/ on (\d+) nodes/.exec(summary)?.[1]);
      expect(nodes).toBeGreaterThanOrEqual(day.nodes - 2);
      expect(await page.locator('[data-node]').count()).toBe(nodes);
      const node = page.getByRole('meter', { name: /^node game-node-000: \d+ game servers, / });
      expect(await node.count()).toBe(1);
      expect(
        await page
          .getByRole('meter', { name: /^cluster IPs 10\.80\.0\.0\/24: [1-9]\d* of 254 used$/ })
          .count(),
      ).toBe(1);
      await expect
        .poll(() => page.locator('#invariants-summary').textContent(), { timeout: 20_000 })
        .toMatch(/checks, every invariant held$/);
      // The day is held after at least one pass of each kind has run.
      const passKinds = async () =>
        (await page.getByRole('list', { name: 'Last passes' }).locator('li').allTextContents())
          .map((line) => /^(\w+) pass at /.exec(line)?.[1])
          .filter((kind, i, all) => kind && all.indexOf(kind) === i)
          .sort();
      await expect.poll(passKinds, { timeout: 20_000 }).toEqual(['eni', 'repair', 'scale']);
      const passes = await page
        .getByRole('list', { name: 'Last passes' })
        .locator('li')
        .allTextContents();
      expect(passes).toContainEqual(
        expect.stringMatching(/^repair pass at [\d.]+ h: 0 findings, 0 released, 0 recorded$/),
      );
      expect(passes).toContainEqual(
        expect.stringMatching(/^eni pass at [\d.]+ h: [1-9]\d* pools: \d+ addresses assigned, /),
      );
      // berth's pools on the table, and its EC2 calls against the budget.
      expect(await page.locator('#pool-rows tr').count()).toBeGreaterThan(0);
      expect(await page.locator('#ec2-now').textContent()).toMatch(
        /^\d+ mutating EC2 calls in the last minute, peak [1-9]\d*, against a budget of 570 a minute; /,
      );
      // A few seconds of the chart before the picture: counted from a fresh load, however long
      // the checks above took to see what they wait for (the day is held meanwhile).
      await page.reload();
      await expect
        .poll(() => page.locator('#rate-now').textContent(), { timeout: 20_000 })
        .toMatch(/over the last [4-9] readings /);
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      hold.release();
      const report = await run;
      expect(report.violations).toHaveLength(1);
      expect(report.violations[0]).toMatch(
        /^host port 7999: berth counts \d+ uses, \d+ live pods hold it$/,
      );
      await expect
        .poll(() => page.getByRole('alert').textContent(), { timeout: 20_000 })
        .toBe(report.violations[0]);
      expect(await page.locator('#invariants-summary').textContent()).toMatch(
        /^1 violation\(s\) after \d+ checks: the run stopped$/,
      );
      expect(problems).toEqual([]);
    } finally {
      hold.release();
      await page.close();
      await sim.close();
    }
  });
});
