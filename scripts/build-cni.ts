/**
 * `npm run build:cni [DIR]`: writes berth-cni (the wrapper and its bundle) into DIR (default
 * `dist/cni/`), run with this machine's Node.js. `berth manifests --cni` ships the same bundle to
 * nodes, where the DaemonSet puts a Node.js runtime from a public image beside it.
 */
import { resolve } from 'node:path';
import { installPlugin } from '../cni/build.js';

const dir = resolve(process.argv[2] ?? 'dist/cni');
const wrapper = await installPlugin(dir);
process.stdout.write(
  `wrote ${wrapper} (CNI type berth-cni) and its bundle under ${dir}/berth-cni.d/\n`,
);
