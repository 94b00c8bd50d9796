/**
 * berth's layer order, checked by `npm test` (kubernetes/kubernetes keeps its layers with
 * `cmd/import-boss`; this is the same idea with dependency-cruiser). Imports run down the list
 * below and never up it, and no module imports itself back through another.
 *
 *   entry points   functions/, cli/, infra/, cni/, bench/, scripts/   (each only its own helpers
 *                  and what the layers below offer it; see the per-entry rules)
 *   simulation     sim/          the simulated world and the one fake per port
 *   composition    shared/app/ builds berth once for every host; shared/local/ is the
 *                  local host's own machinery (DynamoDB Local, TLS, its HTTP server)
 *   webhook/passes the admission webhook, the HTTP API, the scheduled passes and what they show
 *   domain         pure policy: allocators, plans, diffs
 *   ports/adapters narrow interfaces named for their role and the code that speaks AWS,
 *                  DynamoDB and Kubernetes behind them
 *   config         the parsed configuration
 *   vocabulary     owner identity, patch operations, label and annotation names, address math
 *
 * A folder's files take the folder's layer, except in the domain folders, whose files say their
 * role by name: a port module (`store.ts`, `model.ts`, a queue's `work.ts`) and an adapter
 * (`sdk-*.ts`, `sqs-queue.ts`) sit with the ports, and the folder's `pass.ts` with the passes;
 * so do the files of a room one folder down (`fronts/slots/store.ts`).
 */

/**
 * Files of a domain folder that are not domain, by the role their name says: the port modules
 * (the interface a store, queue or cloud API offers, the records and messages it carries, its
 * errors), the adapters behind them, and the folder's pass.
 */
const PORT_FILE =
  '(store|model|errors|queue|work|work-message|task|ledger|elbv2|accelerator)\\.ts$';
const ADAPTER_FILE = '(sdk-[a-z0-9-]+|sqs-queue|in-process-queue)\\.ts$';
const PASS_FILE = '(pass|worker)\\.ts$';
const DOMAIN_FOLDERS = 'allocation|hostports|services|eni|scale|repair|fronts|settle';
/**
 * Rooms of a mechanism inside a domain folder (`fronts/slots/`), named so the patterns stay
 * safe: their files say their role by name alike.
 */
const ROOM = '(slots/)?';

/**
 * Layers from the bottom up. The patterns are disjoint (a domain folder's port modules and
 * passes are cut out of the domain by a lookahead), so every file has exactly one layer.
 */
const LAYERS = [
  { name: 'vocabulary', paths: ['^shared/(vocabulary|net|concurrency)/'] },
  { name: 'config', paths: ['^shared/config/'] },
  {
    name: 'ports',
    paths: [
      '^shared/(store|k8s|ec2|aws|lease|node-pool)/',
      `^shared/(${DOMAIN_FOLDERS})/${ROOM}(${PORT_FILE}|${ADAPTER_FILE})`,
    ],
  },
  {
    name: 'domain',
    paths: [`^shared/(${DOMAIN_FOLDERS})/(?!${ROOM}(${PORT_FILE}|${ADAPTER_FILE}|${PASS_FILE}))`],
  },
  {
    name: 'passes',
    paths: [
      '^shared/(admission|http|status|ui|metrics|manifests|clusters)/',
      `^shared/(${DOMAIN_FOLDERS})/${ROOM}${PASS_FILE}`,
    ],
  },
  { name: 'composition', paths: ['^shared/(app|local)/'] },
  { name: 'simulation', paths: ['^sim/'] },
  { name: 'entry', paths: ['^(functions|cli|infra|cni|bench|scripts)/'] },
];

/** Layer `index` may import itself and what lies below it, never what lies above. */
function layerRule(index) {
  const own = LAYERS[index];
  return {
    name: `layer-${own.name}`,
    comment: `${own.name} imports only what lies below it in the layer order`,
    severity: 'error',
    from: { path: own.paths },
    to: { path: LAYERS.slice(index + 1).flatMap((l) => l.paths) },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'a module never imports itself back through others',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...LAYERS.slice(0, -1).map((_, i) => layerRule(i)),
    {
      name: 'vocabulary-stands-alone',
      comment: "the vocabulary imports nothing of berth's, so every layer can use it",
      severity: 'error',
      from: { path: '^shared/vocabulary/' },
      to: {
        path: '^(shared|cli|cni|bench|sim|functions|infra|scripts|test)/',
        pathNot: '^shared/vocabulary/',
      },
    },
    {
      name: 'functions-through-composition',
      comment:
        'a Lambda entry point parses its event and calls what shared/app/ built, nothing deeper',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^(shared|cli|cni|bench|sim|infra|scripts)/', pathNot: '^shared/app/' },
    },
    {
      name: 'cli-through-composition',
      comment:
        'the CLI keeps flags and printing; what it runs is built by shared/app/ (or the simulator, a host of its own). One exception: `manifests --cni` bundles berth-cni with cni/build.ts, the bundler scripts/build-cni.ts uses too; shared/app/ lies below cni/ and cannot, so the entry point hands the bundle to the command shared/app/ built',
      severity: 'error',
      from: { path: '^cli/' },
      to: {
        path: '^(shared|cni|bench|functions|infra|scripts)/',
        pathNot: ['^shared/app/', '^cni/build\\.ts$'],
      },
    },
    {
      name: 'no-test-from-product',
      comment:
        'test/ is for tests: nothing the product, the simulator or the benchmarks run imports it',
      severity: 'error',
      from: { path: '^(shared|cli|cni|bench|sim|functions|infra|scripts)/' },
      to: { path: '^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
