import { Effect, Either } from "effect"
import {
  decodeFeedToken,
  encodeFeedToken,
  FEED_START,
  type FeedEndpoint,
  type FeedPosition,
} from "../domain/feedToken.ts"
import type { OrgId } from "../domain/ids.ts"
import { parseTimestamp } from "../domain/time.ts"
import type { DatabaseError } from "../platform/db/errors.ts"
import { PAGE_MAX_BYTES } from "../repos/present.ts"
import type { ChangePage, ChangeQuery } from "./ChangesRepo.ts"
import { TokenExpired } from "./errors.ts"
import { fitPage, pageAnswer } from "./paging.ts"
import { InvalidQuery, parseLimit, type QueryError, type RawParam, singleParam } from "./params.ts"

/**
 * One page of a change feed. Query: `after` (a token) or, on a first call, `from` (RFC 3339), and `limit`.
 * The next token is the last change shown while the page is full (hasMore); once the feed has been read to its end it
 * moves on to the horizon the database gave with the rows: everything before it is final and has been shown (or
 * was before `from`), so a follower's next call scans only what is new.
 */
export interface FeedParams {
  readonly after?: RawParam
  readonly from?: RawParam
  readonly limit?: RawParam
}

const TOKEN_ALLOWED = "the nextToken value of a previous response of this endpoint, for this organization"

export const parseFeedParams = (
  key: Uint8Array,
  endpoint: FeedEndpoint,
  orgId: OrgId,
  p: FeedParams,
): Either.Either<{ readonly after: FeedPosition; readonly limit: number; readonly fromToken: boolean }, QueryError> =>
  Either.gen(function* () {
    const limit = yield* parseLimit(p.limit)
    const after = yield* singleParam("after", p.after)
    const fromText = yield* singleParam("from", p.from)
    if (after !== undefined && fromText !== undefined) {
      return yield* Either.left(
        new InvalidQuery({ parameter: "from", allowed: "left out when after is given (after says where to go on)" }),
      )
    }
    if (after !== undefined) {
      const decoded = decodeFeedToken(key, endpoint, orgId, after)
      if (!decoded.ok) return yield* Either.left(new InvalidQuery({ parameter: "after", allowed: TOKEN_ALLOWED }))
      return { after: decoded.position, limit, fromToken: true }
    }
    if (fromText === undefined) return { after: FEED_START, limit, fromToken: false }
    const from = parseTimestamp(fromText)
    if (from === undefined) {
      return yield* Either.left(
        new InvalidQuery({
          parameter: "from",
          allowed: "an RFC 3339 timestamp with a time zone, for example 2026-11-21T15:57:42.053Z",
        }),
      )
    }
    return { after: { ...FEED_START, fromMs: from.getTime() }, limit, fromToken: false }
  })

const later = (a: { xid: string; seq: string }, b: { xid: string; seq: string }) => {
  const ax = BigInt(a.xid)
  const bx = BigInt(b.xid)
  return ax !== bx ? ax > bx : BigInt(a.seq) > BigInt(b.seq)
}

/**
 * The page is bounded in bytes like the lists (PAGE_MAX_BYTES): changes stop being added before the answer would
 * pass it (at least one is shown); hasMore is then true and the token points right after the last change shown, so
 * a follower never skips one. The answer is serialized once (rememberSerialized).
 */
export const feedPage = <Row extends { readonly id: string }, Out>(
  key: Uint8Array,
  endpoint: FeedEndpoint,
  orgId: OrgId,
  params: FeedParams,
  read: (q: ChangeQuery) => Effect.Effect<ChangePage<Row>, DatabaseError>,
  present: (row: Row) => Out,
  maxBytes: number = PAGE_MAX_BYTES,
): Effect.Effect<
  { readonly data: ReadonlyArray<Out>; readonly nextToken: string; readonly hasMore: boolean },
  QueryError | TokenExpired | DatabaseError
> =>
  Effect.gen(function* () {
    const { after, limit, fromToken } = yield* parseFeedParams(key, endpoint, orgId, params)
    const page = yield* read({ orgId, after, fetch: limit + 1 })
    // The retention purge deleted a change after the token's position, which its follower has not seen: it cannot go on
    // without a gap. A first call (no token) just reads what is kept.
    // A mark at or past the horizon cannot be this cluster's (its rows were committed, so their writers ended): it
    // came with a restored backup; the purge clears it, and until then it is not believed.
    const purged = page.purged
    if (fromToken && purged !== undefined && BigInt(purged.xid) < BigInt(page.horizon) && later(purged, after)) {
      return yield* new TokenExpired({ feed: endpoint })
    }
    const fitted = fitPage(page.rows, limit, present, maxBytes)
    const { last, more: hasMore } = fitted
    let next: FeedPosition = last ? { xid: last.changeXid, seq: last.changeSeq, fromMs: after.fromMs } : after
    const horizon = { xid: page.horizon, seq: "0" }
    if (!hasMore && later(horizon, next)) next = { ...horizon, fromMs: null }
    return pageAnswer(fitted, { nextToken: encodeFeedToken(key, endpoint, orgId, next), hasMore })
  })
