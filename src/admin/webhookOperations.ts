import { Clock, Duration, Effect, Option } from "effect"
import { DeliveryStatus, nextState } from "../domain/deliveryRetry.ts"
import { isId, newId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { generateSigningSecret } from "../domain/webhookSignature.ts"
import { AppConfig, parseShortDuration, sealerOf } from "../platform/config.ts"
import { checkAndResolveWebhookUrl, systemLookup } from "../platform/outbound/urlRule.ts"
import { WebhookSender } from "../platform/outbound/WebhookSender.ts"
import { type ChannelRow, WebhooksRepo } from "../repos/WebhooksRepo.ts"
import { sampleIncident, serializeWebhookBody } from "../repos/webhookPayload.ts"
import { AdminError, AdminOperations } from "./operations.ts"

const refuse = (message: string) => Effect.fail(new AdminError({ message }))

/** Deliveries shown by `webhook deliveries` (newest first). */
const DELIVERY_LOG_LIMIT = 50

/**
 * `bun run admin webhook …` (D15–D18, D24): channels, secret rotation, test sends and the delivery log.
 * A secret is returned only by `create` and `rotate`; it is stored sealed (AES-256-GCM under SECRET_KEY).
 */
export class WebhookAdmin extends Effect.Service<WebhookAdmin>()("WebhookAdmin", {
  effect: Effect.gen(function* () {
    const repo = yield* WebhooksRepo
    const admin = yield* AdminOperations
    const sender = yield* WebhookSender
    const config = yield* AppConfig
    const sealer = sealerOf(config)
    const encoder = new TextEncoder()
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const requireChannel = (id: string | undefined) =>
      Effect.gen(function* () {
        const found = id !== undefined && isId("webhookChannel", id) ? yield* repo.findChannel(id) : Option.none()
        if (Option.isNone(found)) return yield* refuse(`unknown webhook channel: ${id ?? ""}`)
        return found.value
      })

    /** D18 at creation: https only, no credentials, every resolved address public (WEBHOOK_ALLOW_PRIVATE aside). */
    const checkUrl = (url: string | undefined) =>
      Effect.gen(function* () {
        if (url === undefined || url.trim() === "") return yield* refuse("--url is required (https://…)")
        const checked = yield* Effect.promise(() =>
          checkAndResolveWebhookUrl(url.trim(), systemLookup, { allowPrivate: config.webhooks.allowPrivate }),
        )
        if (!checked.ok) return yield* refuse(`webhook URL refused: ${checked.reason}`)
        return checked.url.toString()
      })

    /** `sensorHealth`: D43 opt-in to `sensor.silent` / `sensor.recovered` (off unless asked for). */
    const create = (input: {
      orgId: string
      url: string | undefined
      minSeverity: string | undefined
      sensorHealth?: boolean | undefined
    }) =>
      Effect.gen(function* () {
        yield* admin.requireOrg(input.orgId)
        const minSeverity = (input.minSeverity ?? "low") as Severity
        if (!SEVERITIES.includes(minSeverity))
          return yield* refuse(`--min-severity must be one of ${SEVERITIES.join(", ")}`)
        const url = yield* checkUrl(input.url)
        const secret = generateSigningSecret()
        const id = newId("webhookChannel")
        yield* repo.insertChannel({
          id,
          orgId: input.orgId,
          url,
          minSeverity,
          secretEnc: sealer.seal(encoder.encode(secret)),
          enabled: true,
          sensorHealth: input.sensorHealth === true,
          createdAt: yield* now,
        })
        return { id, secret }
      })

    const describe = (c: ChannelRow, at: Date) => ({
      id: c.id,
      url: c.url,
      minSeverity: c.minSeverity,
      enabled: c.enabled,
      sensorHealth: c.sensorHealth,
      createdAt: c.createdAt.toISOString(),
      previousSecretValidUntil:
        c.previousSecretExpiresAt !== null && c.previousSecretExpiresAt > at
          ? c.previousSecretExpiresAt.toISOString()
          : null,
    })

    const list = (orgId: string) =>
      Effect.gen(function* () {
        yield* admin.requireOrg(orgId)
        const at = yield* now
        return (yield* repo.listChannels(orgId)).map((c) => describe(c, at))
      })

    /** D16: a new secret; with a grace period the old one keeps signing too (second v1) until it ends. */
    const rotate = (id: string | undefined, grace: string | undefined) =>
      Effect.gen(function* () {
        const channel = yield* requireChannel(id)
        let ms = 0
        if (grace !== undefined) {
          const parsed = parseShortDuration(grace)
          if (parsed === undefined) return yield* refuse("--grace must be a duration such as 30m, 24h or 7d")
          ms = Duration.toMillis(parsed)
        }
        if (ms > 30 * 86_400_000) return yield* refuse("--grace may be at most 30d")
        const at = yield* now
        const secret = generateSigningSecret()
        yield* repo.rotateSecret(
          channel.id,
          sealer.seal(encoder.encode(secret)),
          ms > 0 ? channel.secretEnc : null,
          ms > 0 ? new Date(at.getTime() + ms) : null,
          at,
        )
        return {
          id: channel.id,
          secret,
          previousSecretValidUntil: ms > 0 ? new Date(at.getTime() + ms).toISOString() : null,
        }
      })

    const setEnabled = (id: string | undefined, enabled: boolean) =>
      Effect.gen(function* () {
        const channel = yield* requireChannel(id)
        yield* repo.setEnabled(channel.id, enabled, yield* now)
        return { id: channel.id, enabled }
      })

    /** D43: opt the channel in to (or out of) sensor-health alerts; later changes of a sensor's health only. */
    const setSensorHealth = (id: string | undefined, on: boolean) =>
      Effect.gen(function* () {
        const channel = yield* requireChannel(id)
        yield* repo.setSensorHealth(channel.id, on, yield* now)
        return { id: channel.id, sensorHealth: on }
      })

    /**
     * D15 `webhook.test`: sent now, through the same sender as every delivery, and logged like one. A test is
     * not retried: if it fails it is dead at once (re-drivable like any delivery).
     */
    const test = (id: string | undefined) =>
      Effect.gen(function* () {
        const channel = yield* requireChannel(id)
        const at = yield* now
        const deliveryId = newId("webhookDelivery", at.getTime())
        const owner = `admin:${process.pid}`
        const body = serializeWebhookBody({
          id: deliveryId,
          type: "webhook.test",
          createdAt: at,
          incident: sampleIncident(at, config.appUrl),
        })
        yield* repo.insertDeliveries([
          {
            id: deliveryId,
            orgId: channel.orgId,
            channelId: channel.id,
            transitionId: null,
            type: "webhook.test",
            incidentId: null,
            body,
            status: "pending",
            nextAttemptAt: at,
            createdAt: at,
            // Ours while we send it: a running dispatcher leaves it alone.
            leaseOwner: owner,
            leaseUntil: new Date(at.getTime() + 60_000),
          },
        ])
        const { startedAt, result } = yield* sender.send({
          url: channel.url,
          body,
          deliveryId,
          attempt: 1,
          channel,
        })
        const next = nextState(result, 0, [], new Date(yield* Clock.currentTimeMillis))
        yield* repo.recordAttempt(owner, {
          attempt: {
            id: newId("deliveryAttempt", startedAt.getTime()),
            deliveryId,
            attempt: 1,
            startedAt,
            durationMs: Math.round(result.durationMs),
            statusCode: result.status,
            error: result.error,
            responseBody: result.responseBody,
          },
          ...next,
        })
        return {
          deliveryId,
          ok: result.ok,
          status: result.status,
          durationMs: Math.round(result.durationMs),
          error: result.error,
        }
      })

    const deliveries = (id: string | undefined, status: string | undefined) =>
      Effect.gen(function* () {
        const channel = yield* requireChannel(id)
        if (status !== undefined && !DeliveryStatus.literals.includes(status as DeliveryStatus)) {
          return yield* refuse(`--status must be one of ${DeliveryStatus.literals.join(", ")}`)
        }
        const rows = yield* repo.listDeliveries(channel.id, status as DeliveryStatus | undefined, DELIVERY_LOG_LIMIT)
        const attempts = yield* repo.attemptsOf(rows.map((r) => r.id))
        return rows.map((r) => ({
          id: r.id,
          type: r.type,
          incidentId: r.incidentId,
          status: r.status,
          attempts: r.attempts,
          lastStatus: r.lastStatus,
          lastError: r.lastError,
          createdAt: r.createdAt.toISOString(),
          nextAttemptAt: r.status === "pending" || r.status === "failed" ? r.nextAttemptAt.toISOString() : null,
          deliveredAt: r.deliveredAt?.toISOString() ?? null,
          log: attempts
            .filter((a) => a.deliveryId === r.id)
            .map((a) => ({
              attempt: a.attempt,
              at: a.startedAt.toISOString(),
              durationMs: a.durationMs,
              status: a.statusCode,
              error: a.error,
              response: a.responseBody,
            })),
        }))
      })

    /** D17: a delivery (dead, failed or even delivered) is queued again now; a running dispatcher is woken. */
    const redeliver = (deliveryId: string | undefined) =>
      Effect.gen(function* () {
        if (deliveryId === undefined || !isId("webhookDelivery", deliveryId)) {
          return yield* refuse(`unknown delivery: ${deliveryId ?? ""}`)
        }
        const queued = yield* repo.redeliver(deliveryId, yield* now)
        if (!queued) return yield* refuse(`unknown delivery: ${deliveryId}`)
        yield* repo.notify
        return { id: deliveryId, status: "pending" as const }
      })

    /** After a SECRET_KEY rotation: channel secrets sealed under an older key are sealed under the current one. */
    const resealChannelSecrets = Effect.gen(function* () {
      let resealed = 0
      const unreadable: Array<string> = []
      for (const channel of yield* repo.allChannels()) {
        const sealed = [channel.secretEnc, channel.previousSecretEnc]
        if (sealed.every((s) => s === null || sealedKeyId(s) === sealer.keyId)) continue
        const [secret, previous] = sealed.map((s) => (s === null ? null : sealer.open(s)))
        if (secret === undefined || previous === undefined || secret === null) {
          unreadable.push(channel.id)
          continue
        }
        yield* repo.setSealedSecrets(channel.id, sealer.seal(secret), previous === null ? null : sealer.seal(previous))
        resealed++
      }
      return { resealed, unreadable }
    })

    return {
      create,
      list,
      rotate,
      setEnabled,
      setSensorHealth,
      test,
      deliveries,
      redeliver,
      resealChannelSecrets,
    } as const
  }),
}) {}
