/** The in-memory lease and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { freshTable } from '../support/dynamo.js';
import { leaseContract } from './lease.contract.js';

leaseContract('FakeLease', async (now) => {
  const lease = new FakeLease(now);
  return { contender: () => lease };
});

let table: ReturnType<typeof freshTable> | undefined;
let clusters = 0;
// Each case gets its own cluster prefix, so cases share the table without sharing leases.
leaseContract('DynamoLease', async (now) => {
  table ??= freshTable();
  const { client, tableName } = await table;
  clusters += 1;
  const cluster = `c${clusters}`;
  return { contender: () => new DynamoLease({ client, tableName, cluster, now }) };
});
