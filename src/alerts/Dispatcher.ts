import { hostname } from "node:os"
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Duration, Effect, FiberSet, Layer, Metric, Queue } from "effect"
import { nextState } from "../domain/deliveryRetry.ts"
import { type ChannelId, newId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { listenForever } from "../platform/db/listen.ts"
import { webhookAttempts } from "../platform/metrics.ts"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { type ClaimedDelivery, DELIVERIES_NOTIFY_CHANNEL, DeliveriesRepo } from "../repos/DeliveriesRepo.ts"

/** Attempt log: a receiver's answer is kept, cut to this many characters. */
export const MAX_LOGGED_RESPONSE = 65_536

/**
 * The alert dispatcher: a scoped layer whose claimer fiber takes due deliveries of every channel kind from the outbox
 * (FOR UPDATE SKIP LOCKED, with a lease, so several server processes share the work and a crashed one's
 * deliveries are resent after the lease) and runs each send in a supervised FiberSet, bounded globally and per
 * channel, so a slow or dead receiver only ever holds its own channel's slots. A defect in one delivery is
 * recorded as a failed attempt and never stops the pool.
 *
 * It wakes on NOTIFY (PostgreSQL; its own LISTEN connection survives restarts) and polls every
 * WEBHOOK_POLL_INTERVAL anyway (the embedded database may not notify). On shutdown (SIGTERM) it stops claiming,
 * lets in-flight sends finish (they are bounded by the 5 s time-out) and gives back the leases of whatever is
 * left, so another process sends it at once.
 *
 * Its log lines say "webhook" for every kind ("webhook delivered", "webhook attempt failed"): operators search for
 * those words, and docs/operators.md names them.
 */
export const AlertDispatcherLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* DeliveriesRepo
    const sender = yield* ChannelSender
    const pg = yield* PgClient.PgClient
    const settings = (yield* AppConfig).webhooks
    const owner = `${hostname()}:${process.pid}:${newId("deliveryAttempt").slice(-8)}`
    const scheduleMs = settings.retrySchedule.map(Duration.toMillis)
    const leaseMs = Duration.toMillis(settings.lease)
    const inflight = new Map<ChannelId, number>()
    let total = 0
    let stopping = false
    const wake = yield* Queue.sliding<void>(1)
    const signal = Queue.offer(wake, undefined).pipe(Effect.asVoid)

    // Runs last (finalizers run in reverse): the leases of sends that did not finish go back to the pool.
    yield* Effect.addFinalizer(() =>
      repo
        .releaseLeases(owner)
        .pipe(
          Effect.catchAll((e) => Effect.logWarning("webhook dispatcher could not release its leases", e.cause._tag)),
        ),
    )
    const sends = yield* FiberSet.make<void, never>()
    // Runs before the FiberSet interrupts what is left: stop claiming, give in-flight sends up to 5 s.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        stopping = true
        yield* FiberSet.awaitEmpty(sends).pipe(Effect.timeout(Duration.seconds(5)), Effect.ignore)
      }),
    )

    const logAttempt = (
      row: ClaimedDelivery,
      attempt: number,
      status: string,
      result: { status: number | null; error: string | null },
    ) =>
      // A failed attempt is a WARN with its reason (a refused address, a timeout, the receiver's status), so an
      // operator sees why without opening the delivery log.
      (status === "succeeded" ? Effect.logInfo("webhook delivered") : Effect.logWarning("webhook attempt failed")).pipe(
        // Never the URL (receivers put tokens in paths) nor the secret; the delivery id leads to the log.
        Effect.annotateLogs({
          deliveryId: row.id,
          channelId: row.channelId,
          type: row.type,
          attempt,
          httpStatus: result.status,
          state: status,
          ...(status === "succeeded" ? {} : { reason: result.error ?? `HTTP ${result.status}` }),
        }),
      )

    const deliver = (row: ClaimedDelivery) =>
      Effect.gen(function* () {
        const attempt = row.attempts + 1
        const { startedAt, result } = yield* sender.send({
          url: row.url,
          body: row.body,
          deliveryId: row.id,
          attempt,
          channel: row,
        })
        const next = nextState(result, row.retryIndex, scheduleMs, new Date(yield* Clock.currentTimeMillis))
        yield* repo.recordAttempt(owner, {
          attempt: {
            id: newId("deliveryAttempt", startedAt.getTime()),
            deliveryId: row.id,
            attempt,
            startedAt,
            durationMs: Math.round(result.durationMs),
            statusCode: result.status,
            error: result.error,
            responseBody: result.responseBody.slice(0, MAX_LOGGED_RESPONSE),
          },
          ...next,
        })
        yield* Metric.increment(Metric.tagged(webhookAttempts, "outcome", next.status))
        yield* logAttempt(row, attempt, next.status, result)
      }).pipe(
        // A defect is a failed attempt like any other (so it backs off); if even that cannot be written, the
        // lease runs out and the delivery is tried again.
        Effect.catchAllCause((cause) =>
          Effect.gen(function* () {
            yield* Effect.logError("webhook delivery failed unexpectedly", Cause.pretty(cause)).pipe(
              Effect.annotateLogs({ deliveryId: row.id }),
            )
            const now = new Date(yield* Clock.currentTimeMillis)
            yield* repo.recordAttempt(owner, {
              attempt: {
                id: newId("deliveryAttempt", now.getTime()),
                deliveryId: row.id,
                attempt: row.attempts + 1,
                startedAt: now,
                durationMs: 0,
                statusCode: null,
                error: "internal error while sending",
                responseBody: null,
              },
              ...nextState({ ok: false, status: null }, row.retryIndex, scheduleMs, now),
            })
          }).pipe(Effect.catchAllCause(() => Effect.void)),
        ),
      )

    const start = (row: ClaimedDelivery) => {
      inflight.set(row.channelId, (inflight.get(row.channelId) ?? 0) + 1)
      total++
      const done = Effect.suspend(() => {
        const left = (inflight.get(row.channelId) ?? 1) - 1
        if (left <= 0) inflight.delete(row.channelId)
        else inflight.set(row.channelId, left)
        total--
        return signal
      })
      return FiberSet.run(sends, deliver(row).pipe(Effect.ensuring(done)))
    }

    /**
     * One round: claims what the free slots allow; true when it may be worth claiming again at once. Rows beyond a
     * channel's bound (the oldest due rows may all be one slow channel's backlog) are given back in one statement and
     * the round is repeated at once: that channel is now at its bound and passed over, so a healthy channel's newer
     * deliveries are claimed without waiting for the next wake-up (each repeat adds a channel to the skipped ones).
     */
    const claimRound = Effect.gen(function* () {
      const free = settings.concurrency - total
      if (stopping || free <= 0) return false
      const busy = [...inflight].filter(([, n]) => n >= settings.channelConcurrency).map(([id]) => id)
      const nowMs = yield* Clock.currentTimeMillis
      const rows = yield* repo.claim({
        owner,
        now: new Date(nowMs),
        leaseUntil: new Date(nowMs + leaseMs),
        limit: free,
        skipChannels: busy,
      })
      const deferred: Array<string> = []
      for (const row of rows) {
        if ((inflight.get(row.channelId) ?? 0) >= settings.channelConcurrency) deferred.push(row.id)
        else yield* start(row)
      }
      // Given back before anything else is claimed, so a second round finds them due again.
      yield* repo.releaseLeasesOf(owner, deferred)
      return rows.length === free || deferred.length > 0
    }).pipe(
      Effect.catchAll((e) =>
        Effect.logWarning("webhook dispatcher could not claim deliveries", e.cause._tag).pipe(Effect.as(false)),
      ),
    )

    const claimer = Effect.gen(function* () {
      while (!stopping) {
        const again = yield* claimRound
        if (!again) yield* Queue.take(wake).pipe(Effect.timeout(settings.pollInterval), Effect.ignore)
      }
    })

    // NOTIFY wakes the claimer at once (also after a database restart); polling covers what LISTEN cannot.
    // It also wakes it right after each (re)connection, since notifications sent while disconnected are lost.
    const listener = listenForever(pg.config, {
      channels: [DELIVERIES_NOTIFY_CHANNEL],
      maxDelay: "5 seconds",
      onNotification: () => Queue.unsafeOffer(wake, undefined),
      whileConnected: (connection) => Effect.zipRight(signal, connection.lost),
    })

    yield* Effect.forkScoped(listener)
    yield* Effect.forkScoped(claimer)
    yield* Effect.logInfo("webhook dispatcher started").pipe(
      Effect.annotateLogs({ concurrency: settings.concurrency, channelConcurrency: settings.channelConcurrency }),
    )
  }),
)
