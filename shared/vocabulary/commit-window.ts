/**
 * How long after an admission the apiserver may still be working on its request: it gives a
 * request 60 s (kube-apiserver `--request-timeout`, default 1m0s:
 * https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/) and a
 * webhook at most 30 s (`timeoutSeconds`, 1 to 30:
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#timeouts),
 * so 90 s is past any call of a request berth admitted, a re-invocation included, and past any
 * write it could still commit. Whatever berth claimed for an object less than this long ago may
 * belong to one the apiserver has not stored yet: the settle step waits it out before freeing,
 * the repair pass never suspects it, and only within it can a CREATE be a re-invocation.
 */
export const COMMIT_WINDOW_MS = 90_000;
