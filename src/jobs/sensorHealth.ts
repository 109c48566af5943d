import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Metric, Schedule } from "effect"
import { newId } from "../domain/ids.ts"
import { sensorWebhookTypeOf, serializeSensorWebhookBody } from "../domain/sensorHealthPayload.ts"
import { type SensorStatus, statusOf } from "../domain/sensorStatus.ts"
import { AppConfig } from "../platform/config.ts"
import { SENSOR_STATES, sensorsGauge } from "../platform/metrics.ts"
import { ChannelsRepo } from "../repos/ChannelsRepo.ts"
import { DeliveriesRepo, type NewDelivery } from "../repos/DeliveriesRepo.ts"
import { type SensorRow, SensorsRepo } from "../repos/SensorsRepo.ts"

/** A sweep interval below this (a typo such as "0 seconds") would only spin. */
const MIN_SWEEP_MS = 100

/**
 * Silent-sensor detection (a decoy that stopped reporting looks just like a quiet network, so its silence is
 * announced): a scoped fiber that, every SENSOR_SWEEP_INTERVAL, computes the status of every sensor that expects a
 * heartbeat (domain/sensorStatus.ts statusOf: silent once three intervals passed since its last contact, or since
 * its creation when it was never heard from) at the database's clock, never the process's own, and moves its
 * announced `health` to match. Each move is a compare-and-set that also re-checks the status on the row as it is
 * then, by the same clock (SensorsRepo.setHealthIfStill), so with several processes sweeping one database a change
 * is made, and announced, once. A move to `silent`, or from `silent` back to `alive`, writes one delivery per
 * enabled channel that opted in to sensor-health alerts (`sensor.silent` / `sensor.recovered`) in the same
 * transaction, with its final body: the dispatcher sends, signs, retries and logs them as every webhook. A new
 * sensor's first contact (`unknown` to `alive`) is recorded, not announced.
 *
 * The same sweep sets the `sensors{state}` gauge (every organization's sensors; all four states exist from
 * start-up). A failed sweep is logged and the next one runs; the fiber ends with the layer's scope.
 */
export const SensorHealthSweepLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const sensors = yield* SensorsRepo
    const channelRepo = yield* ChannelsRepo
    const deliveryRepo = yield* DeliveriesRepo
    const config = yield* AppConfig
    const every = Duration.max(config.sensorSweepEvery, Duration.millis(MIN_SWEEP_MS))

    /** One sensor's move, with its announcement, in one transaction; true when this process made it. */
    const move = (row: SensorRow, to: "alive" | "silent", now: Date) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const moved = yield* sensors.setHealthIfStill(row.id, row.health, to)
          if (!moved) return false
          const type = sensorWebhookTypeOf(row.health, to)
          if (type === undefined) return true
          const channels = yield* channelRepo.sensorHealthChannels(row.orgId)
          const deliveries: Array<NewDelivery> = channels.map((channelId) => {
            const id = newId("webhookDelivery", now.getTime())
            return {
              id,
              orgId: row.orgId,
              channelId,
              transitionId: null,
              type,
              incidentId: null,
              body: serializeSensorWebhookBody({
                id,
                type,
                createdAt: now,
                sensor: { id: row.id, name: row.name, profile: row.profile, lastSeenAt: row.lastSeenAt },
              }),
              status: "pending",
              nextAttemptAt: now,
              createdAt: now,
            }
          })
          if (deliveries.length > 0) {
            yield* deliveryRepo.insertDeliveries(deliveries)
            yield* deliveryRepo.notify
          }
          yield* Effect.logInfo(to === "silent" ? "sensor silent" : "sensor heard from").pipe(
            // Ids only: a sensor's name is an administrator's text, but ids are what lead to it.
            Effect.annotateLogs({ sensorId: row.id, orgId: row.orgId, type, channels: deliveries.length }),
          )
          return true
        }),
      )

    const sweep = Effect.gen(function* () {
      // The database's clock, like the compare-and-set's: every process computes the same status at the same moment,
      // whatever its own clock says, so two processes never move a sensor back and forth (each move announced).
      const now = (yield* sql<{ now: Date }>`select now() as now`)[0]?.now ?? new Date(yield* Clock.currentTimeMillis)
      const watched = yield* sensors.listWatched()
      const counts: Record<SensorStatus, number> = { alive: 0, silent: 0, unknown: 0, revoked: 0 }
      for (const row of watched) {
        const status = statusOf(row, now)
        counts[status]++
        if ((status === "alive" || status === "silent") && row.health !== status) {
          // One sensor's failure (a lost connection mid-way) does not keep the others from moving.
          yield* move(row, status, now).pipe(
            Effect.catchAll((e) =>
              Effect.logWarning("sensor health change failed").pipe(
                Effect.annotateLogs({ sensorId: row.id, error: e._tag }),
              ),
            ),
          )
        }
      }
      const rest = yield* sensors.countUnwatched()
      counts.revoked += rest.revoked
      counts.unknown += rest.unknown
      yield* Effect.forEach(SENSOR_STATES, (state) => Metric.set(sensorsGauge(state), counts[state]), {
        discard: true,
      })
    })

    // Every state is a series from start-up (0 until the first sweep says otherwise).
    yield* Effect.forEach(SENSOR_STATES, (state) => Metric.set(sensorsGauge(state), 0), { discard: true })
    yield* Effect.forkScoped(
      sweep.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("sensor health sweep failed", cause)),
        Effect.repeat(Schedule.spaced(every)),
      ),
    )
  }),
)
