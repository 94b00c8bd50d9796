/**
 * moto's server mode (`python3 -m moto.server`, moto 5) on a loopback port of its own choosing,
 * for tests that check an SDK adapter's wire shapes against a real AWS API model. One server per
 * test file: start it in `beforeAll`, stop it in `afterAll`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mockClient } from 'aws-sdk-client-mock';

/** Credentials and Region moto accepts; nothing leaves loopback. */
export const MOTO_ACCOUNT = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
} as const;

/** A running moto server. */
export interface MotoServer {
  readonly endpoint: string;
  /** What an SDK client needs to talk to it: endpoint, Region and credentials. */
  readonly clientConfig: {
    readonly endpoint: string;
    readonly region: string;
    readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  stop(): Promise<void>;
}

/** moto imports every service's models at start: seconds on a busy machine. */
const START_TIMEOUT_MS = 60_000;

/** Starts moto on port 0 and resolves once it prints the port it listens on. */
export async function startMoto(): Promise<MotoServer> {
  const child: ChildProcess = spawn(
    'python3',
    ['-m', 'moto.server', '-H', '127.0.0.1', '-p', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  const port = await new Promise<number>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`moto did not start within ${START_TIMEOUT_MS} ms:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const read = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
      const match = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        done(Number(match[1]));
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('error', (error) => {
      clearTimeout(timer);
      fail(new Error(`cannot run python3 -m moto.server: ${error.message}`, { cause: error }));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      // moto 5 with its server extras (flask, flask-cors) is what the tests need.
      fail(new Error(`moto exited with ${code} before listening:\n${output}`));
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    clientConfig: { endpoint, ...MOTO_ACCOUNT },
    stop: async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Gives SDK client classes back their real `send`: a file that mocks a client class
 * (`mockClient(EC2Client)`) and never restores it leaves it mocked for every later file of its
 * worker, which shares one module graph (vitest's `isolate: false`). `mockClient` replaces a stub
 * it finds, and `restore` then puts the original back.
 */
export function unmocked(...clients: Parameters<typeof mockClient>[0][]): void {
  for (const client of clients) mockClient(client).restore();
}
