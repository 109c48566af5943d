import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { readBodyCapped } from "../platform/http/body.ts"
import { databaseProblem } from "../platform/http/problems.ts"
import { payloadTooLarge, problemResponse } from "../platform/http/responses.ts"
import { SensorAuth } from "./SensorAuth.ts"

/** The largest heartbeat body taken: the body is meant to be empty; a little room for a client that sends `{}`. */
export const MAX_HEARTBEAT_BODY_BYTES = 1024

const tooLarge = () =>
  payloadTooLarge(`A heartbeat body may hold at most ${MAX_HEARTBEAT_BODY_BYTES} bytes; send it empty.`)

/**
 * `POST /ingest/v1/heartbeat` (so a silent sensor can be noticed) with the sensor's token and an empty body, the one
 * line a timer runs. The token is checked as on every ingest route (401 when missing, wrong or revoked) and the contact
 * recorded (SensorAuth); the answer is 204. Nothing in the body could change the answer, but it is bounded all the
 * same: a declared length over MAX_HEARTBEAT_BODY_BYTES is refused (413) before the token is looked up, and a body
 * without one (chunked) is counted while it is read and refused once it passes the bound, so no heartbeat holds the
 * listener with megabytes.
 */
export const heartbeatRoute = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > MAX_HEARTBEAT_BODY_BYTES) return tooLarge()
  const auth = yield* SensorAuth
  yield* auth.authenticate(request.headers.authorization)
  const hasBody = (request.source as { body?: unknown }).body != null
  if (hasBody) {
    const read = yield* readBodyCapped(request.stream, MAX_HEARTBEAT_BODY_BYTES).pipe(
      Effect.orElseSucceed(() => undefined),
    )
    if (read === undefined) return tooLarge()
  }
  return HttpServerResponse.empty({ status: 204 })
}).pipe(
  Effect.catchTag("DatabaseError", databaseProblem),
  Effect.catchAll((e) => Effect.succeed(problemResponse(e))),
)
