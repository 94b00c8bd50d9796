/** The in-memory allocation store and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { MemoryAllocationStore } from '../../sim/fakes/allocation-store.js';
import { freshTable } from '../support/dynamo.js';
import { allocationStoreContract } from './allocation-store.contract.js';

allocationStoreContract('MemoryAllocationStore', async () => new MemoryAllocationStore());

let seq = 0;
allocationStoreContract('DynamoAllocationStore', async () => {
  const { client, tableName } = await freshTable();
  return new DynamoAllocationStore({ client, tableName, cluster: `d${seq++}` });
});
