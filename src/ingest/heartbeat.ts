import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { problemResponse } from "../api/edge.ts"
import { databaseProblem } from "../api/problems.ts"
import { SensorAuth } from "../auth/SensorAuth.ts"

export const HEARTBEAT_PATH = "/ingest/v1/heartbeat"

/**
 * D43: `POST /ingest/v1/heartbeat` with the sensor's token and an empty body, the one line a timer runs. The token
 * is checked as on every ingest route (401 when missing, wrong or revoked) and the contact recorded (SensorAuth);
 * the answer is 204. A body is not read: nothing in it could change the answer, and an unread body costs nothing.
 */
export const heartbeatRoute = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const auth = yield* SensorAuth
  yield* auth.authenticate(request.headers.authorization)
  return HttpServerResponse.empty({ status: 204 })
}).pipe(
  Effect.catchTag("DatabaseError", databaseProblem),
  Effect.catchAll((e) => Effect.succeed(problemResponse(e))),
)
