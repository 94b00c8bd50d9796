/** The in-process trigger store and the DynamoDB adapter on DynamoDB Local, held to one contract. */
import { DynamoScaleTrigger } from '../../shared/store/dynamo-scale-trigger.js';
import { InProcessScaleTrigger } from '../../sim/fakes/scale-trigger.js';
import { freshTable } from '../support/dynamo.js';
import { scaleTriggerContract } from './scale-trigger.contract.js';

scaleTriggerContract('InProcessScaleTrigger', async () => new InProcessScaleTrigger());

let table: ReturnType<typeof freshTable> | undefined;
let clusters = 0;
scaleTriggerContract('DynamoScaleTrigger', async () => {
  table ??= freshTable();
  const { client, tableName } = await table;
  clusters += 1;
  return new DynamoScaleTrigger({ client, tableName, cluster: `t${clusters}` });
});
