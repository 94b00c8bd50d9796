/**
 * `node --import tsx scripts/layout-fixture.ts`: captures the table this version writes, as a
 * release's fixture for the upgrade test (`test/operations/upgrade.test.ts`), at
 * `test/fixtures/layout/<package.json version>.json`. A simulated day runs on a fresh DynamoDB
 * Local (Services' blocks and owner records, ENI pools, the scale pass's memory, the EC2 budget),
 * then a few game servers are admitted (live pods' records and host ports); the file holds every
 * item exactly as stored and what `berth status` read from them. An existing fixture is a released layout: it is kept
 * unless `--force` is given.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { admit } from '../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../shared/admission/review.js';
import { type BerthRuntime, createRuntime } from '../shared/app/runtime.js';
import { parseConfig } from '../shared/config/schema.js';
import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { dynamoClient } from '../shared/store/client.js';
import { scanRaw } from './raw-table.js';

const ROOT = new URL('..', import.meta.url).pathname;
/** The day whose table is captured: small, steady, and stopped with game servers still running. */
const SIM = [
  'sim',
  '--hours',
  '0.6',
  '--speed',
  '600',
  '--nodes',
  '4',
  '--sessions-per-minute',
  '8',
  '--scenario',
  'steady',
  '--port',
  '0',
];

/** Game servers admitted after the day, so the table holds live pods' records and host ports. */
const LIVE_GAME_SERVERS = 12;

/** Admits `examples/review-game-server.json` as `count` game servers of their own names. */
async function admitGameServers(runtime: BerthRuntime, count: number): Promise<void> {
  const example = await readFile(join(ROOT, 'examples/review-game-server.json'), 'utf8');
  for (let i = 0; i < count; i++) {
    const review = JSON.parse(example);
    const name = `match-${String(i + 1).padStart(4, '0')}`;
    review.request.uid = `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`;
    review.request.name = name;
    review.request.object.metadata.name = name;
    const { response } = await admit(parseAdmissionReview(review), runtime.admission);
    if (!response.allowed) throw new Error(`${name} was refused: ${response.status?.message}`);
  }
}

async function main(): Promise<number> {
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  const file = join(ROOT, 'test/fixtures/layout', `${version}.json`);
  const exists = await access(file).then(
    () => true,
    () => false,
  );
  if (exists && !process.argv.includes('--force')) {
    process.stderr.write(`${file} exists (a released layout); pass --force to capture it again\n`);
    return 2;
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'berth-layout-'));
  const dynamo = await startDynamoDbLocal({ dataDir: join(dataDir, 'dynamodb') });
  try {
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, 'bin/berth.mjs'),
        ...SIM,
        '--dynamodb-endpoint',
        dynamo.endpoint,
        '--data-dir',
        dataDir,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    if (run.status !== 0) throw new Error(`berth sim exited with ${run.status}`);
    const client = dynamoClient({ endpoint: dynamo.endpoint });
    const tables = (await client.send(new ListTablesCommand({}))).TableNames ?? [];
    const tableName = tables.find((name) => name.startsWith('berth-sim-'));
    if (!tableName) throw new Error(`the sim left no table (found ${tables.join(', ')})`);
    const runtime = createRuntime({ config: parseConfig({}), dynamo: client, tableName });
    await admitGameServers(runtime, LIVE_GAME_SERVERS);
    const items = await scanRaw(dynamo.endpoint, tableName);
    const status = await runtime.status();
    client.destroy();
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    const fixture = {
      layout: version,
      commit,
      writtenBy: `berth ${SIM.join(' ')} (config: every key at its default; the scale section the sim fits to its fleet), then ${LIVE_GAME_SERVERS} game servers admitted from examples/review-game-server.json; captured by scripts/layout-fixture.ts`,
      status,
      items,
    };
    await writeFile(file, `${JSON.stringify(fixture, null, 2)}\n`);
    // Laid out as the repository's formatter lays out every JSON file, so `npm test` accepts it.
    execFileSync(join(ROOT, 'node_modules/.bin/biome'), ['format', '--write', file]);
    process.stdout.write(`${file}: ${items.length} items\n`);
    return 0;
  } finally {
    await dynamo.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
