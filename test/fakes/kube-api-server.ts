/** The loopback Kubernetes API of `berth sim`, which the tests use as their apiserver fake. */
export {
  applyJsonPatch,
  type FailureRule,
  failureStatus,
  type KubeApiServer,
  type KubeApiServerOptions,
  meetsPreconditions,
  type RecordedRequest,
  selectorMatches,
  startKubeApiServer,
} from '../../sim/kube-api-server.js';
