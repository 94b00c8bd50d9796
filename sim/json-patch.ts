/** Applies an RFC 6902 patch (add, replace, remove) to a copy of a document: how the simulated apiserver stores what admission patched. */
export interface PatchOperation {
  op: string;
  path: string;
  value?: unknown;
}

const decodeToken = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');

/** Decodes an AdmissionResponse's base64 patch. */
export function decodePatch(base64: string | undefined): PatchOperation[] {
  return base64
    ? (JSON.parse(Buffer.from(base64, 'base64').toString('utf8')) as PatchOperation[])
    : [];
}

/** The document after the patch; throws when a path's parent is missing, as the apiserver would. */
export function applyPatch<T>(document: T, patch: readonly PatchOperation[]): T {
  const result = structuredClone(document) as unknown;
  for (const operation of patch) {
    const tokens = operation.path.split('/').slice(1).map(decodeToken);
    const last = tokens.pop();
    if (last === undefined) throw new Error(`bad path ${operation.path}`);
    let parent = result as Record<string, unknown> | unknown[];
    for (const token of tokens) {
      const next = (parent as Record<string, unknown>)[token];
      if (typeof next !== 'object' || next === null)
        throw new Error(`missing parent for ${operation.path}`);
      parent = next as Record<string, unknown>;
    }
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      if (operation.op === 'remove') parent.splice(index, 1);
      else if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
      else parent[index] = structuredClone(operation.value);
    } else if (operation.op === 'remove') {
      if (!(last in parent)) throw new Error(`remove of missing ${operation.path}`);
      delete parent[last];
    } else {
      parent[last] = structuredClone(operation.value);
    }
  }
  return result as T;
}
