import type { HttpServerRequest } from "@effect/platform"
import { Duration, Effect, Metric, Option } from "effect"
import { AppConfig } from "../platform/config.ts"
import { MAX_BODY_BYTES } from "../platform/http/body.ts"
import { bodyEncodingOf } from "./pipeline.ts"

/** Below this, a request is counted as this many bytes: a one-event post still holds a transaction and its rows. */
const MIN_WEIGHT = 16 * 1024

/** How long a request waits for room before it is answered busy (503, Retry-After): a sensor resends it. */
export const ADMISSION_WAIT = Duration.seconds(10)

/** The room's state on /metrics: how full it is, and how many requests wait at its door. */
const inflightGauge = Metric.gauge("ingest_inflight_bytes", {
  description:
    "Request bodies the ingest listener has let in and not finished, in bytes (INGEST_INFLIGHT_MIB bounds it)",
})
const waitingGauge = Metric.gauge("ingest_waiting_requests", {
  description: "Requests waiting for room before their body is read (answered busy after 10 s)",
})

/**
 * What the ingest listener takes in at once, by body size (INGEST_INFLIGHT_MIB). A batch of 1,000 events is about
 * 250 KB on the wire and 25 to 40 times that while it is parsed, mapped and written; sixteen sensors posting such
 * batches at once took the process past 300 MiB though two cores cannot work on more than a few at a time. A request
 * waits here, before its body is read, until the bodies already in the pipeline leave room for its own; the bytes it
 * has not read stay in the socket. A request that declares no length (chunked) or a compressed one counts as the
 * largest body allowed, since that is what it may become.
 */
export class IngestAdmission extends Effect.Service<IngestAdmission>()("IngestAdmission", {
  effect: Effect.gen(function* () {
    const { ingestInflightBytes: capacity } = yield* AppConfig
    const room = weightedRoom(Math.max(capacity, MAX_BODY_BYTES), (inUse, waiting) => {
      inflightGauge.unsafeUpdate(inUse, [])
      waitingGauge.unsafeUpdate(waiting, [])
    })

    const weightOf = (request: HttpServerRequest.HttpServerRequest): number => {
      const declared = Number(request.headers["content-length"])
      // The body reader's own reading of Content-Encoding: anything but identity may inflate up to the bound.
      if (bodyEncodingOf(request.headers["content-encoding"]) !== "identity" || !Number.isSafeInteger(declared)) {
        return MAX_BODY_BYTES
      }
      return Math.min(MAX_BODY_BYTES, Math.max(MIN_WEIGHT, declared))
    }

    return {
      /**
       * Runs `work` (which reads the body) once there is room for this request's body; None when there was none
       * within ADMISSION_WAIT. The room is given back when `work` ends, however it ends.
       */
      admit: <A, E, R>(
        request: HttpServerRequest.HttpServerRequest,
        work: Effect.Effect<A, E, R>,
      ): Effect.Effect<Option.Option<A>, E, R> => {
        const weight = weightOf(request)
        // The wait ends by its own timer, never by interruption: room granted to an interrupted fiber could
        // otherwise be lost for good. A client gone meanwhile is noticed once `work` starts.
        return Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(room.enter(weight, Duration.toMillis(ADMISSION_WAIT)), (entered) =>
            entered
              ? restore(work).pipe(Effect.map(Option.some), Effect.ensuring(Effect.sync(() => room.leave(weight))))
              : Effect.succeed(Option.none<A>()),
          ),
        )
      },
    }
  }),
}) {}

/**
 * A first-come first-served room of `capacity` units: a large request is never passed over by smaller ones.
 * `changed` hears every change of what is taken and of how many wait.
 */
export const weightedRoom = (capacity: number, changed: (inUse: number, waiting: number) => void = () => {}) => {
  let used = 0
  const queue: Array<{ weight: number; grant: () => void }> = []
  changed(used, queue.length)
  const admitWaiting = () => {
    for (let head = queue[0]; head !== undefined && used + head.weight <= capacity; head = queue[0]) {
      queue.shift()
      used += head.weight
      head.grant()
    }
    changed(used, queue.length)
  }
  return {
    /** True once `weight` units are taken; false when `waitMs` passed first (nothing taken). */
    enter: (weight: number, waitMs: number): Effect.Effect<boolean> =>
      Effect.async<boolean>((resume) => {
        const units = Math.min(weight, capacity)
        if (queue.length === 0 && used + units <= capacity) {
          used += units
          changed(used, queue.length)
          return resume(Effect.succeed(true))
        }
        const waiter = {
          weight: units,
          grant: () => {
            clearTimeout(timer)
            resume(Effect.succeed(true))
          },
        }
        const timer = setTimeout(() => {
          const at = queue.indexOf(waiter)
          if (at >= 0) queue.splice(at, 1)
          // The head may have been the one that did not fit: those behind it may fit now.
          admitWaiting()
          resume(Effect.succeed(false))
        }, waitMs)
        queue.push(waiter)
        changed(used, queue.length)
      }),
    leave: (weight: number) => {
      used -= Math.min(weight, capacity)
      admitWaiting()
    },
    inUse: () => used,
  }
}
