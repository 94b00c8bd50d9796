/** Applies an admission answer's JSONPatch the way the apiserver does, to build re-invocations. */

interface PatchOperation {
  readonly op: string;
  readonly path: string;
  readonly value?: unknown;
}

/** The object after the base64 JSONPatch of an AdmissionResponse (add, replace, remove). */
export function applyAdmissionPatch<T>(object: T, base64Patch: string | undefined): T {
  if (!base64Patch) return object;
  const patch = JSON.parse(Buffer.from(base64Patch, 'base64').toString('utf8')) as PatchOperation[];
  const result = structuredClone(object) as unknown;
  for (const operation of patch) {
    const tokens = operation.path
      .split('/')
      .slice(1)
      .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = tokens.pop();
    if (last === undefined) throw new Error(`bad patch path ${operation.path}`);
    let parent = result as Record<string, unknown>;
    for (const token of tokens) {
      const next = parent[token];
      if (typeof next !== 'object' || next === null)
        throw new Error(`patch parent missing: ${operation.path}`);
      parent = next as Record<string, unknown>;
    }
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      if (operation.op === 'remove') parent.splice(index, 1);
      else if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
      else parent[index] = structuredClone(operation.value);
    } else if (operation.op === 'remove') {
      delete parent[last];
    } else {
      parent[last] = structuredClone(operation.value);
    }
  }
  return result as T;
}
