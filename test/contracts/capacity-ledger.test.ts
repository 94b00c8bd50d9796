/** The in-process capacity ledger and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoCapacityLedger } from '../../shared/store/dynamo-capacity-ledger.js';
import { InProcessCapacityLedger } from '../../sim/fakes/capacity-ledger.js';
import { freshTable } from '../support/dynamo.js';
import { capacityLedgerContract } from './capacity-ledger.contract.js';

capacityLedgerContract('InProcessCapacityLedger', async () => new InProcessCapacityLedger());

capacityLedgerContract('DynamoCapacityLedger', async () => {
  const { client, tableName } = await freshTable();
  return new DynamoCapacityLedger({ client, tableName });
});
