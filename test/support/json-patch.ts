/** The simulator's RFC 6902 patch reader, which tests use to read admission answers. */
export { applyPatch, decodePatch, type PatchOperation } from '../../sim/json-patch.js';
