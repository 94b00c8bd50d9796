/**
 * The capacity function as the stack deploys it (functions/capacity/handler.ts): `GET
 * /v1/capacity` behind a function URL with IAM authentication, answering only the roles the
 * stack granted. It reads the items of the config's clusters by key, never a scan, so it answers
 * the stack's own clusters only, whatever else the table holds.
 */
import type { HttpHandler } from '../clusters/http-routes.js';
import { EVERY_CLUSTER, nodeCallerCheck } from '../clusters/node-callers.js';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import { withCapacity } from '../http/capacity-route.js';
import { dynamoClient } from '../store/client.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { capacityReader } from './capacity.js';

const NOT_FOUND = {
  statusCode: 404,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: 'the capacity API answers GET /v1/capacity only' }),
};

/**
 * The capacity API: 403 for a signed caller whose role the stack did not grant (IAM has already
 * refused every unsigned one), else the view.
 */
export function capacityApi(
  read: ReturnType<typeof capacityReader>,
  callers: readonly string[],
): HttpHandler {
  const granted = nodeCallerCheck({ [EVERY_CLUSTER]: callers });
  const routes = withCapacity(read, async () => NOT_FOUND);
  return async (request) => {
    if (!granted(EVERY_CLUSTER, request.caller)) {
      return {
        statusCode: 403,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          error: `${request.caller ?? 'an unsigned caller'} is not a role this stack grants the capacity API`,
        }),
      };
    }
    return routes(request);
  };
}

/** The capacity API of the Lambda environment. */
export function lambdaCapacityApi(settings: LambdaSettings = lambdaSettings()): HttpHandler {
  const ledger = new DynamoCapacityLedger({
    client: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
  });
  return capacityApi(capacityReader(settings.configs, ledger), settings.capacityCallers);
}
