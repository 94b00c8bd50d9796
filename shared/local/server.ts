/** The local HTTP(S) server: node's own http/https in front of the same API the Lambda serves. */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { HttpRequest, HttpResponse } from '../http/exchange.js';
import { refusalOf } from '../http/refusal.js';

/** How long an idle keep-alive connection is kept open: longer than any client keeps one. */
const IDLE_CONNECTION_MS = 95_000;

/** The apiserver sends at most 3 MiB; anything larger is not an AdmissionReview. */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** How to serve. */
export interface ServerOptions {
  readonly host: string;
  readonly port: number;
  /** PEM certificate and key; plain HTTP when absent. */
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly handle: (request: HttpRequest) => Promise<HttpResponse>;
  /** Told of internal faults, which are answered 500. */
  readonly onError: (error: unknown, request: HttpRequest) => void;
}

/** A listening server. */
export interface RunningServer {
  readonly url: string;
  close(): Promise<void>;
}

class BodyTooLargeError extends Error {
  constructor() {
    super(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/**
 * How much of a body past the limit is read and thrown away before the 413: answering while the
 * client is still sending makes the socket close under its upload (a reset, not a 4xx). Past
 * this much the reading stops, and such a client may well see its connection reset.
 */
const MAX_DRAINED_BYTES = 64 * 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_DRAINED_BYTES) break;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  if (size > MAX_BODY_BYTES) throw new BodyTooLargeError();
  return Buffer.concat(chunks).toString('utf8');
}

function jsonError(statusCode: number, error: string): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error }),
  };
}

/** Whether reading the body failed because the client went away mid-body: nobody to answer. */
function hungUp(incoming: IncomingMessage, error: unknown): boolean {
  return incoming.destroyed && (error as { code?: unknown }).code === 'ECONNRESET';
}

/** Starts listening; resolves once the port is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const listener = async (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const [path = '/', search = ''] = (incoming.url ?? '/').split('?', 2);
    const query = Object.fromEntries(new URLSearchParams(search));
    const request: HttpRequest = {
      method: incoming.method ?? 'GET',
      path,
      query,
      body: undefined,
      headers: incoming.headers,
    };
    let response: HttpResponse;
    try {
      const body = await readBody(incoming);
      response =
        refusalOf(request.method, incoming.headers) ?? (await options.handle({ ...request, body }));
    } catch (error) {
      // A client that hung up is no fault of berth's, and there is no one left to answer.
      if (hungUp(incoming, error)) return;
      if (error instanceof BodyTooLargeError) {
        response = jsonError(413, error.message);
      } else {
        options.onError(error, request);
        response = jsonError(500, 'internal error; see the server log');
      }
    }
    outgoing.writeHead(response.statusCode, response.headers);
    outgoing.end(response.body);
  };
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, listener)
    : createHttpServer(listener);
  // Idle connections are the client's to close (the kube-apiserver's Go client keeps them 90 s;
  // Node's fetch follows the server's Keep-Alive hint less a second): a server closing one first
  // races a client reusing it, and that request fails with the socket closed under it.
  server.keepAliveTimeout = IDLE_CONNECTION_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `${options.tls ? 'https' : 'http'}://${options.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
