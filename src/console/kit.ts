import { Effect } from "effect"
import { makeAction } from "./csrf.ts"
import { makeFlash } from "./flash.ts"
import { makeSessions } from "./session.ts"

/** What every route module is given: the page and action guards (session, CSRF, role) and the flash. */
export const makeKit = Effect.gen(function* () {
  const sessions = yield* makeSessions
  const flashes = yield* makeFlash
  const action = yield* makeAction(sessions)
  return { ...sessions, ...flashes, action } as const
})
export type Kit = Effect.Effect.Success<typeof makeKit>
