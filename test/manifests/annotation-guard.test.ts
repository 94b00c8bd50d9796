/**
 * The pod guard's CEL, evaluated as the apiserver evaluates a ValidatingAdmissionPolicy's
 * validations (every one must be true) over the requests a user could make.
 */
import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { annotationGuard, GUARD_VALIDATIONS } from '../../shared/manifests/annotation-guard.js';

type Pod = { metadata: { annotations?: Record<string, string>; labels?: Record<string, string> } };

const ID = 'abcdefghijklmnopqrst';
const admitted: Pod = {
  metadata: {
    annotations: {
      'berth.dev/ports': '[{"name":"game","containerPort":7777}]',
      'berth.dev/allocation-id': ID,
      'berth.dev/host-ports': '{"game":7000}',
    },
    labels: { 'berth.dev/game-server': 'true', app: 'arena' },
  },
};

/** The messages of the validations the request fails; none when the policy allows it. */
function refusals(operation: 'CREATE' | 'UPDATE', object: Pod, oldObject?: Pod): string[] {
  const context = { request: { operation }, object, oldObject: oldObject ?? null };
  return GUARD_VALIDATIONS.filter((v) => evaluate(v.expression, context) !== true).map(
    (v) => v.message,
  );
}

const withAnnotations = (pod: Pod, annotations: Record<string, string>): Pod => ({
  metadata: { ...pod.metadata, annotations },
});

describe('the pod guard', () => {
  it('lets berth-admitted pods be created and their other marks change', () => {
    expect(refusals('CREATE', admitted)).toEqual([]);
    expect(refusals('CREATE', { metadata: {} })).toEqual([]);
    const annotated = withAnnotations(admitted, {
      ...admitted.metadata.annotations,
      'berth.dev/state': 'ready',
      'example.com/note': 'x',
    });
    expect(refusals('UPDATE', annotated, admitted)).toEqual([]);
  });

  it('refuses an UPDATE that adds, changes or removes an annotation berth writes', () => {
    const { 'berth.dev/host-ports': _, ...without } = admitted.metadata.annotations ?? {};
    expect(refusals('UPDATE', withAnnotations(admitted, without), admitted)).toHaveLength(1);
    const changed = { ...admitted.metadata.annotations, 'berth.dev/host-ports': '{"game":7001}' };
    expect(refusals('UPDATE', withAnnotations(admitted, changed), admitted)).toHaveLength(1);
    const plain: Pod = { metadata: {} };
    const given = withAnnotations(plain, { 'berth.dev/ports': '[]' });
    expect(refusals('UPDATE', given, plain)[0]).toMatch(/written by berth only/);
  });

  it('refuses an UPDATE that removes the game-server label', () => {
    const unlabelled: Pod = { metadata: { ...admitted.metadata, labels: { app: 'arena' } } };
    expect(refusals('UPDATE', unlabelled, admitted)[0]).toMatch(/berth\.dev\/game-server/);
  });

  it('refuses a pod created with an allocation id but no ports asked of berth', () => {
    const copied = withAnnotations(admitted, { 'berth.dev/allocation-id': ID });
    expect(refusals('CREATE', copied)[0]).toMatch(/allocation id only when it asks/);
  });

  it('is printed as a policy and a binding that denies', () => {
    const [policy, binding] = annotationGuard() as [
      { spec: { validations: unknown[] } },
      { spec: { policyName: string; validationActions: string[] } },
    ];
    expect(policy.spec.validations).toHaveLength(GUARD_VALIDATIONS.length);
    expect(binding.spec).toMatchObject({ validationActions: ['Deny'] });
  });
});
