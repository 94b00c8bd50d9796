/** The in-memory host-port store and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { MemoryHostPortStore } from '../../sim/fakes/host-port-store.js';
import { freshTable } from '../support/dynamo.js';
import { hostPortStoreContract } from './host-port-store.contract.js';

hostPortStoreContract('MemoryHostPortStore', async () => new MemoryHostPortStore());

let seq = 0;
hostPortStoreContract('DynamoHostPortStore', async () => {
  const { client, tableName } = await freshTable();
  return new DynamoHostPortStore({ client, tableName, cluster: `s${seq++}` });
});
