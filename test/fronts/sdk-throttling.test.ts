/**
 * Throttling as it arrives on the wire, through the real SDK clients: a loopback server answers
 * ELBv2's query-protocol error (HTTP 400, code `Throttling`, "Rate exceeded"; Elastic Load
 * Balancing User Guide, "Request throttling for the Elastic Load Balancing API") and Global
 * Accelerator's JSON error (`ThrottlingException`) a set number of times, then succeeds. The
 * SDK names the unmodelled code as it came, berth classifies it, and the budgeted adapters try
 * again within their bounds: neither moto nor a mocked client shows this.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { GlobalAcceleratorClient } from '@aws-sdk/client-global-accelerator';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isThrottled } from '../../shared/aws/error-codes.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import { DEFAULT_BACKOFF } from '../../shared/ec2/rate-budget.js';
import { BudgetedCustomRoutingApi, BudgetedElbv2Api } from '../../shared/fronts/budgeted.js';
import { SdkCustomRoutingApi } from '../../shared/fronts/sdk-accelerator.js';
import { SdkElbv2Api } from '../../shared/fronts/sdk-elbv2.js';
import { MOTO_ACCOUNT, unmocked } from '../support/moto-server.js';

/** How many requests the server throttles before it answers; how many it received. */
const script = { throttle: 0, received: 0 };

const ELBV2_THROTTLED = `<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">
  <Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error>
  <RequestId>req-1</RequestId>
</ErrorResponse>`;
const ELBV2_DELETED = `<DeleteListenerResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">
  <DeleteListenerResult/><ResponseMetadata><RequestId>req-2</RequestId></ResponseMetadata>
</DeleteListenerResponse>`;

function answer(request: IncomingMessage, response: ServerResponse): void {
  request.resume();
  request.on('end', () => {
    script.received++;
    const throttled = script.received <= script.throttle;
    // Global Accelerator speaks JSON 1.1 (its target header); ELBv2 the query protocol.
    if (request.headers['x-amz-target']) {
      response.writeHead(throttled ? 400 : 200, {
        'content-type': 'application/x-amz-json-1.1',
        ...(throttled ? { 'x-amzn-errortype': 'ThrottlingException' } : {}),
      });
      response.end(
        throttled
          ? JSON.stringify({ __type: 'ThrottlingException', message: 'Rate exceeded' })
          : '{}',
      );
      return;
    }
    response.writeHead(throttled ? 400 : 200, { 'content-type': 'text/xml' });
    response.end(throttled ? ELBV2_THROTTLED : ELBV2_DELETED);
  });
}

let server: Server;
let endpoint: string;

beforeAll(async () => {
  unmocked(ElasticLoadBalancingV2Client, GlobalAcceleratorClient);
  server = createServer(answer);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((done) => server.close(() => done()));
});

beforeEach(() => {
  script.throttle = 0;
  script.received = 0;
});

/** Budget options on a clock that sleeps by moving on. */
function budgeted() {
  const clock = { now: 0 };
  return {
    budget: new InProcessSharedBudget(() => clock.now).for('test'),
    now: () => clock.now,
    sleep: async (ms: number) => {
      clock.now += ms;
    },
    random: () => 0.5,
  };
}

const elbv2 = () =>
  new BudgetedElbv2Api(
    new SdkElbv2Api(
      new ElasticLoadBalancingV2Client({ ...MOTO_ACCOUNT, endpoint, maxAttempts: 1 }),
    ),
    budgeted(),
  );
const accelerator = () =>
  new BudgetedCustomRoutingApi(
    new SdkCustomRoutingApi(
      new GlobalAcceleratorClient({
        ...MOTO_ACCOUNT,
        region: 'us-west-2',
        endpoint,
        maxAttempts: 1,
      }),
    ),
    budgeted(),
  );

const BATCH = { endpointGroupArn: 'eg-1', endpointId: 'subnet-1', addresses: ['10.0.1.4'] };

describe('throttling on the wire', () => {
  it("retries ELBv2's Throttling answer and succeeds once the service lets it through", async () => {
    script.throttle = 2;
    await elbv2().deleteListener('arn:listener/1');
    expect(script.received).toBe(3);
  });

  it('raises the SDK error ELBv2 throttled with, classified, once the attempts are spent', async () => {
    script.throttle = 100;
    const failure = await elbv2()
      .deleteListener('arn:listener/1')
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ name: 'Throttling', message: 'Rate exceeded' });
    expect(isThrottled(failure)).toBe(true);
    // One SDK attempt per budgeted attempt: the SDK's own retries are off.
    expect(script.received).toBe(DEFAULT_BACKOFF.maxAttempts);
  });

  it("retries Global Accelerator's ThrottlingException the same way", async () => {
    script.throttle = 1;
    await accelerator().allowTraffic(BATCH);
    expect(script.received).toBe(2);
    script.received = 0;
    script.throttle = 100;
    const failure = await accelerator()
      .allowTraffic(BATCH)
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ name: 'ThrottlingException' });
    expect(isThrottled(failure)).toBe(true);
    expect(script.received).toBe(DEFAULT_BACKOFF.maxAttempts);
  });
});
