/**
 * `berth manifests`: the command shared/app/manifests.ts builds, with berth-cni bundled here for
 * `--cni` (imported only then: the bundler is heavy, and no other command needs it).
 */
import {
  localManifestsDeps,
  type ManifestsDeps,
  type ManifestsOptions,
  manifestsCommandOf,
} from '../shared/app/manifests.js';

/** The command over its collaborators, berth-cni bundled from this checkout. */
export function createManifestsCommand(
  deps: ManifestsDeps,
): (options: ManifestsOptions) => Promise<number> {
  return manifestsCommandOf(deps, async () => {
    const { bundlePlugin, wrapperScript } = await import('../cni/build.js');
    return { bundle: await bundlePlugin(), wrapper: wrapperScript('node') };
  });
}

/** `berth manifests (--stack NAME | --url URL [--ca-file FILE] | --local) [--json]`. */
export const manifestsCommand = createManifestsCommand(localManifestsDeps);
