/** The in-memory leak ledger and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoLeakLedger } from '../../shared/store/dynamo-leak-ledger.js';
import { MemoryLeakLedger } from '../../sim/fakes/leak-ledger.js';
import { freshTable } from '../support/dynamo.js';
import { leakLedgerContract } from './leak-ledger.contract.js';

leakLedgerContract('MemoryLeakLedger', async () => new MemoryLeakLedger());

let seq = 0;
leakLedgerContract('DynamoLeakLedger', async () => {
  const { client, tableName } = await freshTable();
  return new DynamoLeakLedger({ client, tableName, cluster: `l${seq++}` });
});
