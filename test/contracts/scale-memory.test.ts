/** The in-process scale memory and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoScaleMemory } from '../../shared/store/dynamo-scale-memory.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { freshTable } from '../support/dynamo.js';
import { scaleMemoryContract } from './scale-memory.contract.js';

scaleMemoryContract('InProcessScaleMemory', async () => new InProcessScaleMemory());

let table: ReturnType<typeof freshTable> | undefined;
let clusters = 0;
scaleMemoryContract('DynamoScaleMemory', async () => {
  table ??= freshTable();
  const { client, tableName } = await table;
  clusters += 1;
  return new DynamoScaleMemory({ client, tableName, cluster: `m${clusters}` });
});
