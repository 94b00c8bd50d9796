/** The admission function's `/metrics/<secret>` carries the cluster's capacity view, read from the table. */
import { describe, expect, it } from 'vitest';
import { clusterAdmission } from '../../shared/app/lambda-admission.js';
import { parseConfig } from '../../shared/config/schema.js';
import { DynamoCapacityLedger } from '../../shared/store/dynamo-capacity-ledger.js';
import { freshTable } from '../support/dynamo.js';

const SECRET = 'metrics-secret-0123456789';

describe('GET /metrics/<secret> of the admission function', () => {
  it('answers the capacity families of its cluster as the passes recorded them', async () => {
    const { client, tableName } = await freshTable();
    const ledger = new DynamoCapacityLedger({ client, tableName });
    await ledger.record('games-a', {
      source: 'scale',
      atMs: Date.now(),
      freeSlots: 17,
      readyByFleet: { arena: 3 },
      pendingGameServers: 0,
      slotsComing: 0,
      buffer: 10,
      nodes: 2,
    });
    await ledger.record('games-b', { source: 'eni', atMs: Date.now(), freeAddresses: 5, pools: 1 });
    const { api } = clusterAdmission({
      config: parseConfig({ cluster: 'games-a' }),
      dynamo: client,
      tableName,
      reader: {
        getPod: async () => undefined,
        getNode: async () => undefined,
        listPods: async function* () {},
        listServices: async function* () {},
        listServiceCidrs: async () => [],
      },
      queue: { submit: async () => undefined },
      observers: { onSettleLost: () => undefined, onDecision: () => undefined },
    });
    const answer = await api(SECRET)({
      method: 'GET',
      path: `/metrics/${SECRET}`,
      body: undefined,
      headers: {},
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toContain('berth_capacity_free_slots{cluster="games-a"} 17\n');
    expect(answer.body).toContain(
      'berth_capacity_ready_game_servers{cluster="games-a",fleet="arena"} 3\n',
    );
    // Only this cluster's figures: games-b's are another API's.
    expect(answer.body).not.toContain('games-b');
  });
});
