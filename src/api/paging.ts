import { PAGE_MAX_BYTES, rememberSerialized, serializeWithin } from "../repos/present.ts"

/** Room left in a page's byte bound for its envelope and the longest cursor or token. */
const ENVELOPE_BYTES = 1024

/**
 * What a list page and a feed page both show, from `limit + 1` rows read (the extra row only says that more
 * exist): the first rows, presented, while the answer stays within `maxBytes` (at least one row is shown); `last` is
 * the last row shown (where the next page starts, so a walk never skips one), and `more` says whether anything was
 * left out, by the limit or by the byte bound.
 */
export const fitPage = <Row, Out>(
  rows: ReadonlyArray<Row>,
  limit: number,
  present: (row: Row) => Out,
  maxBytes: number,
): {
  readonly items: ReadonlyArray<Out>
  readonly texts: ReadonlyArray<string>
  readonly last: Row | undefined
  readonly more: boolean
} => {
  const candidates = rows.slice(0, limit)
  const fitted = serializeWithin(candidates.map(present), maxBytes - ENVELOPE_BYTES)
  const shown = fitted.items.length
  return {
    items: fitted.items,
    texts: fitted.texts,
    last: candidates[shown - 1],
    more: rows.length > limit || shown < candidates.length,
  }
}

/**
 * A page answer `{"data":[…], <fields>}`, remembered with its text: the shown rows' JSON as fitPage made it, so the
 * API sends it without serializing the rows again. `fields` are serialized in their order.
 */
export const pageAnswer = <Out, Fields extends Record<string, unknown>>(
  fitted: { readonly items: ReadonlyArray<Out>; readonly texts: ReadonlyArray<string> },
  fields: Fields,
): { data: Array<Out> } & Fields => {
  const rest = Object.entries(fields)
    .map(([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`)
    .join("")
  return rememberSerialized({ data: [...fitted.items], ...fields }, `{"data":[${fitted.texts.join(",")}]${rest}}`)
}

/**
 * One list page from `limit + 1` rows (fitPage): bounded in bytes too (PAGE_MAX_BYTES),
 * with a cursor pointing right after the last row shown when anything was left out, so a walk never skips one.
 */
export const page = <Row extends { readonly id: string }, Out>(
  rows: ReadonlyArray<Row>,
  limit: number,
  position: (row: Row) => Date,
  present: (row: Row) => Out,
  next: (at: { time: Date; id: string }) => string,
  maxBytes: number = PAGE_MAX_BYTES,
) => {
  const fitted = fitPage(rows, limit, present, maxBytes)
  const { last } = fitted
  return pageAnswer(fitted, { nextCursor: fitted.more && last ? next({ time: position(last), id: last.id }) : null })
}
