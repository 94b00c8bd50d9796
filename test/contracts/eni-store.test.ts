/** The in-memory ENI store and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';
import { freshTable } from '../support/dynamo.js';
import { eniStoreContract } from './eni-store.contract.js';

eniStoreContract('InMemoryEniStore', async () => new InMemoryEniStore());
eniStoreContract('DynamoEniStore', async () => {
  const { client, tableName } = await freshTable();
  return new DynamoEniStore({ client, tableName, cluster: 'test' });
});
