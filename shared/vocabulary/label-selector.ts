/** Equality label selectors (`key=value,key=value`), the only form berth's config accepts. */

/** The labels a selector asks for, as a `nodeSelector` map or the labels of a matching object. */
export function selectorLabels(selector: string): Record<string, string> {
  return Object.fromEntries(
    selector
      .split(',')
      .map((pair) => pair.trim())
      .filter(Boolean)
      .map((pair) => {
        const cut = pair.indexOf('=');
        return cut < 0 ? [pair, ''] : [pair.slice(0, cut), pair.slice(cut + 1)];
      }),
  );
}
