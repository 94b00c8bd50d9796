/** One HTTP exchange as berth's API, its hosts (function URL, local server) and its checks see it. */

/** Request headers by lower-case name, as Node's `IncomingMessage` and function URL events give them. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A request as berth sees it. */
export interface HttpRequest {
  readonly method: string;
  /** The path without the query string. */
  readonly path: string;
  /** The query string's parameters (the first value of each). */
  readonly query?: Readonly<Record<string, string>>;
  readonly body: string | undefined;
  /** The SigV4 identity Lambda verified for a function URL with IAM auth (its ARN). */
  readonly caller?: string;
  /**
   * The request's headers: the API refuses what an apiserver never sends from them (the local
   * server has refused it already, to the same answer) and reads `Accept` for `/metrics`.
   */
  readonly headers?: RequestHeaders;
}

/** The answer. */
export interface HttpResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** An error the API answers with its own status (a client mistake), never a 500. */
export interface HttpFault {
  readonly statusCode: number;
  readonly message: string;
  /** The answer's `Retry-After` (whole seconds, RFC 9110 section 10.2.3), when a retry is due. */
  readonly retryAfterSeconds?: number;
}
