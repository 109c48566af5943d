/**
 * What the edge learns about a request from the layers inside it (the caller's organization and key), keyed by
 * the underlying request object, so the access log and rate-limit headers can name them.
 */
export interface RequestFacts {
  orgId?: string
  keyId?: string
}

const facts = new WeakMap<object, RequestFacts>()

export const requestFacts = (request: { readonly source: unknown }): RequestFacts => {
  const source = request.source as object
  let entry = facts.get(source)
  if (!entry) {
    entry = {}
    facts.set(source, entry)
  }
  return entry
}
