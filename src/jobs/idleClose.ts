import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { CowrieSessionsRepo } from "../ingest/CowrieSessionsRepo.ts"
import { AppConfig } from "../platform/config.ts"
import { AlertOutbox, closedDeliveries } from "../repos/AlertOutbox.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { closedTransitions, TransitionsRepo } from "../repos/TransitionsRepo.ts"

/** How long a Cowrie session's connect is remembered for its later lines (docs/ingestion.md "Cowrie"). */
export const COWRIE_SESSION_RETENTION_MS = 7 * 24 * 3600_000

/** Incidents one transaction of the sweep closes at most. */
const SWEEP_BATCH = 1000

/**
 * A scoped fiber that closes open incidents with no new event for INCIDENT_IDLE_CLOSE (an incident is one stretch
 * of activity: a source quiet that long has stopped, and what it does later is told apart), every
 * INCIDENT_IDLE_CLOSE_EVERY, recording a `closed` transition for each. A failed sweep is logged and the next one
 * runs; the fiber ends with the layer's scope. Safe with several processes: closing is one conditional update.
 * The same sweep forgets Cowrie sessions older than COWRIE_SESSION_RETENTION_MS (one indexed delete, outside the
 * closing transaction).
 */
export const IdleCloserLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const incidents = yield* IncidentsRepo
    const transitions = yield* TransitionsRepo
    const outbox = yield* AlertOutbox
    const cowrieSessions = yield* CowrieSessionsRepo
    const config = yield* AppConfig
    const idleMs = Duration.toMillis(config.idleClose)

    /** One batch in one transaction: how many it closed. */
    const closeBatch = sql.withTransaction(
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        const closed = yield* incidents.closeIdle(new Date(now.getTime() - idleMs), now, SWEEP_BATCH)
        const ids = yield* transitions.insert(closedTransitions(closed, now))
        // OCSF channels are told of the close in the same transaction: a close is never recorded without its message.
        yield* outbox.enqueueClosed(closedDeliveries(closed, ids, now))
        if (closed.length > 0)
          yield* Effect.logInfo("idle incidents closed").pipe(Effect.annotateLogs({ count: closed.length }))
        return closed.length
      }),
    )
    // Batch after batch until one is not full: thousands of incidents gone quiet at once (a wide scan) close in
    // short transactions, and a sweep never writes one statement too large for PostgreSQL.
    const sweep = Effect.iterate(SWEEP_BATCH, {
      while: (closed) => closed === SWEEP_BATCH,
      body: () => closeBatch,
    })

    const forgetOldSessions = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      yield* cowrieSessions.pruneOlderThan(new Date(now - COWRIE_SESSION_RETENTION_MS))
    })

    yield* Effect.forkScoped(
      Effect.zipRight(sweep, forgetOldSessions).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("idle-close sweep failed", cause)),
        Effect.repeat(Schedule.spaced(config.idleCloseEvery)),
      ),
    )
  }),
)
