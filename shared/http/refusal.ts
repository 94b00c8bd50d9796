/**
 * What an apiserver (or berth's CNI plugin) never sends, refused before anything is handled.
 * A browser marks every cross-origin request with `Origin`, and a web page can POST `text/plain`,
 * form or multipart bodies without a CORS preflight; refusing both keeps a page the developer
 * opens from allocating or releasing anything, on the local server's loopback address and behind
 * a function URL alike.
 */
import type { HttpResponse, RequestHeaders } from './exchange.js';

/** 403 for a request carrying `Origin`, 415 for a POST whose body is not JSON; else undefined. */
export function refusalOf(method: string, headers: RequestHeaders): HttpResponse | undefined {
  if (headers.origin !== undefined) {
    return jsonError(
      403,
      'a request with an Origin header comes from a web page: berth serves the apiserver and its own tools',
    );
  }
  const contentType = headers['content-type'];
  if (method === 'POST' && !isJson(typeof contentType === 'string' ? contentType : undefined)) {
    return jsonError(
      415,
      `Content-Type ${JSON.stringify(contentType ?? '')} is not JSON: send application/json`,
    );
  }
  return undefined;
}

/** `application/json`, or a `+json` type, with any parameters. */
function isJson(contentType: string | undefined): boolean {
  const media = (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return media === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(media);
}

function jsonError(statusCode: number, error: string): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error }),
  };
}
