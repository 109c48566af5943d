import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import { sampleIncident, serializeAlertMessage } from "../domain/alertMessage.ts"
import { EMAIL_CHANNEL_URL, MAX_EMAIL_RECIPIENTS } from "../domain/channels/email.ts"
import {
  CHANNEL_FORMATS,
  type ChannelFormat,
  type ChannelKindSpec,
  defaultSettleSeconds,
  listed,
  MAX_SETTLE_SECONDS,
} from "../domain/channels/kinds.ts"
import { CHANNEL_KINDS, isChannelKind, kindSpec, kindsWhere } from "../domain/channels/registry.ts"
import { DeliveryStatus, nextState } from "../domain/deliveryRetry.ts"
import { isId, newId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { AppConfig, parseShortDuration } from "../platform/config.ts"
import { Keys } from "../platform/keys.ts"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { normalizeAddress } from "../platform/outbound/mailSend.ts"
import { checkSyslogDestination } from "../platform/outbound/syslogSend.ts"
import { checkAndResolveWebhookUrl, systemLookup } from "../platform/outbound/urlRule.ts"
import { type ChannelRow, ChannelsRepo } from "../repos/ChannelsRepo.ts"
import { DeliveriesRepo } from "../repos/DeliveriesRepo.ts"
import { EmailRecipientsRepo } from "../repos/EmailRecipientsRepo.ts"
import { AdminActor, requireAdmin, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { emailInvitations, parseRecipients } from "./emailRecipients.ts"
import { Forbidden, invalid, malformed, missing, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"

/** The kinds whose credential is of this type, as a refusal names them ("splunk_hec"). */
const kindsWith = (type: ChannelKindSpec["credential"]["type"]) =>
  kindsWhere((spec) => spec.credential.type === type).join(", ")

/** Deliveries shown by the delivery log (newest first). */
const DELIVERY_LOG_LIMIT = 50
const MAX_GRACE_MS = 30 * 86_400_000

/**
 * Never a secret in the audit log. Incoming-webhook URLs often carry a token in their path or query (and
 * the URL rule refuses credentials in the authority), so only scheme://host[:port] is recorded, beside the channel id.
 */
export const originOf = (url: string | undefined): string => {
  try {
    const parsed = new URL(url ?? "")
    // `origin` is "null" for a scheme URL does not know (syslog+tls:); such a destination is host and port only.
    return parsed.origin === "null" ? `${parsed.protocol}//${parsed.host}` : parsed.origin
  } catch {
    return "(invalid URL)"
  }
}

/** How the audit log and the CLI word a settle window: "settle 30 s", "settle off". */
export const settleWording = (seconds: number) => (seconds === 0 ? "settle off" : `settle ${seconds} s`)

/** Health alerts are native messages: an OCSF channel carries incidents only. */
const ocsfHealth = invalid({
  field: "sensorHealth",
  reason: "notApplicable",
  detail: "an OCSF channel carries incidents only: sensor-health alerts need a native channel",
})

/**
 * A settle window as given (the CLI's `--settle`, the form's field): whole seconds, 0 to MAX_SETTLE_SECONDS; only
 * kinds read by people may have one other than 0 (machine receivers get every transition, as the webhook spec says).
 * Undefined (or an empty field) is the kind's default.
 */
const settleOf = (spec: ChannelKindSpec, given: string | number | undefined) =>
  Effect.gen(function* () {
    const text = typeof given === "number" ? String(given) : given?.trim()
    if (text === undefined || text === "") return defaultSettleSeconds(spec.settle)
    if (!/^\d{1,7}$/.test(text) || Number(text) > MAX_SETTLE_SECONDS) {
      return yield* malformed(
        "settle",
        `must be a whole number of seconds from 0 to ${MAX_SETTLE_SECONDS} (0: every change at once)`,
      )
    }
    const seconds = Number(text)
    if (seconds > 0 && spec.settle.readers === "machines") {
      return yield* invalid({
        field: "settle",
        reason: "notApplicable",
        rule: `is for ${listed(kindsWhere((s) => s.settle.readers === "people"))} channels: a ${spec.name} channel's receiver gets every transition, so its window stays 0`,
      })
    }
    return seconds
  })

const describe = (c: ChannelRow, at: Date) => ({
  id: c.id,
  kind: c.kind,
  format: c.format,
  url: c.url,
  minSeverity: c.minSeverity,
  enabled: c.enabled,
  sensorHealth: c.sensorHealth,
  settleSeconds: c.settleSeconds,
  createdAt: c.createdAt.toISOString(),
  previousSecretValidUntil:
    c.previousSecretExpiresAt !== null && c.previousSecretExpiresAt > at
      ? c.previousSecretExpiresAt.toISOString()
      : null,
})
export type ChannelView = ReturnType<typeof describe>

/**
 * Webhook channels and their deliveries: a signing secret is returned only by `create` and `rotate`,
 * stored sealed (AES-256-GCM under SECRET_KEY), never audited; test sends and re-deliveries; the delivery log.
 */
export class ChannelAdmin extends Effect.Service<ChannelAdmin>()("ChannelAdmin", {
  effect: Effect.gen(function* () {
    const channelRepo = yield* ChannelsRepo
    const deliveryRepo = yield* DeliveriesRepo
    const orgAdmin = yield* OrgAdmin
    const sender = yield* ChannelSender
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing
    const { sealer } = yield* Keys
    const recipientsRepo = yield* EmailRecipientsRepo
    const invitations = yield* emailInvitations
    const encoder = new TextEncoder()
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /** Another organization's channel is the same "unknown" as one that does not exist, so none is revealed. */
    const find = Effect.fn("ChannelAdmin.find")(function* (channelId: string) {
      const found = isId("webhookChannel", channelId) ? yield* channelRepo.findChannel(channelId) : Option.none()
      if (Option.isNone(found)) return yield* notFound("channel", channelId)
      yield* requireScope(found.value.orgId, "channel", channelId)
      return found.value
    })

    /**
     * The address rule at creation (so a channel cannot aim at the service's own network), the same check as every
     * send. An `https` URL: no credentials, every resolved address public (WEBHOOK_ALLOW_PRIVATE aside); a syslog
     * destination: `syslog+tls://host[:port]`.
     */
    const checkAddress = (spec: ChannelKindSpec, address: string | undefined) =>
      Effect.gen(function* () {
        if (address === undefined || address.trim() === "") return yield* missing("url")
        const policy = { allowPrivate: config.webhooks.allowPrivate }
        const refused = (reason: string) =>
          invalid({
            field: "url",
            reason: "refused",
            detail: `${spec.shortLabel} ${spec.address.noun} refused: ${reason}`,
          })
        if (spec.address.scheme === "syslog+tls") {
          const checked = yield* Effect.promise(() => checkSyslogDestination(address.trim(), systemLookup, policy))
          if (!checked.ok) return yield* refused(checked.reason)
          return checked.canonical
        }
        const checked = yield* Effect.promise(() => checkAndResolveWebhookUrl(address.trim(), systemLookup, policy))
        if (!checked.ok) return yield* refused(checked.reason)
        const url = new URL(checked.url.toString())
        if (spec.address.defaultPath !== undefined && (url.pathname === "/" || url.pathname === "")) {
          url.pathname = spec.address.defaultPath
        }
        return url.toString()
      })

    /**
     * Where a channel sends and what it keeps sealed, as its kind's credential says: a signing secret (made
     * here, shown once), a token the receiver made, or a URL that is itself the credential (sealed, with only its
     * origin kept in view).
     */
    const destinationOf = (
      spec: ChannelKindSpec,
      input: { readonly url: string | undefined; readonly token?: string | undefined },
    ) =>
      Effect.gen(function* () {
        // An email channel has no address of its own: it mails its confirmed recipients through the server's SMTP.
        if (spec.address.scheme === "mailto") {
          if (input.url !== undefined && input.url.trim() !== "") {
            return yield* invalid({
              field: "url",
              reason: "notApplicable",
              rule: "an email channel has recipients, not a URL",
            })
          }
          return { url: EMAIL_CHANNEL_URL, sealed: undefined, secret: undefined }
        }
        const url = yield* checkAddress(spec, input.url)
        const credential = spec.credential
        switch (credential.type) {
          case "signingSecret": {
            const secret = credential.generate()
            return { url, sealed: secret, secret }
          }
          case "sealedUrl":
            return { url: `${new URL(url).origin}/…`, sealed: url, secret: undefined }
          case "sealedToken": {
            if (input.token === undefined || input.token.trim() === "") return yield* missing("token")
            const token = input.token.trim()
            const refusal = credential.refusal(token)
            if (refusal !== undefined) return yield* invalid({ field: "token", reason: "malformed", detail: refusal })
            return { url, sealed: token, secret: undefined }
          }
          case "none":
            return { url, sealed: undefined, secret: undefined }
        }
      })

    /**
     * `kind` (default webhook) and `format` (default native; ocsf for webhook, syslog and splunk_hec).
     * `sensorHealth`: opt-in to `sensor.silent` / `sensor.recovered` (off unless asked for; not for OCSF, whose
     * findings are incidents). Only a webhook returns a secret: the others' secrets were given by the admin.
     */
    const create = Effect.fn("ChannelAdmin.create")(function* (
      org: string,
      input: {
        readonly kind?: string | undefined
        readonly format?: string | undefined
        readonly url: string | undefined
        readonly token?: string | undefined
        readonly minSeverity: string | undefined
        readonly sensorHealth?: boolean | undefined
        /** Seconds (text as given, or a number); undefined or empty: the kind's default. */
        readonly settle?: string | number | undefined
        /** An email channel's recipients: addresses, or text of addresses separated by commas, spaces or lines. */
        readonly recipients?: string | ReadonlyArray<string> | undefined
      },
    ) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      const kind = input.kind ?? "webhook"
      if (!isChannelKind(kind)) return yield* malformed("kind", `must be one of ${CHANNEL_KINDS.join(", ")}`)
      const spec = kindSpec(kind)
      const format = (input.format ?? "native") as ChannelFormat
      if (!CHANNEL_FORMATS.includes(format)) {
        return yield* malformed("format", `must be one of ${CHANNEL_FORMATS.join(", ")}`)
      }
      if (!spec.formats.includes(format)) {
        return yield* invalid({
          field: "format",
          reason: "notApplicable",
          rule: `${format} is for ${kindsWhere((s) => s.formats.includes(format)).join(", ")} channels; ${kind} sends a message for people`,
        })
      }
      if (format === "ocsf" && input.sensorHealth === true) {
        return yield* ocsfHealth
      }
      if (input.token !== undefined && spec.credential.type !== "sealedToken")
        return yield* invalid({
          field: "token",
          reason: "notApplicable",
          rule: `is for ${kindsWith("sealedToken")} channels`,
        })
      const minSeverity = (input.minSeverity ?? "low") as Severity
      if (!SEVERITIES.includes(minSeverity))
        return yield* malformed("minSeverity", `must be one of ${SEVERITIES.join(", ")}`)
      const settleSeconds = yield* settleOf(spec, input.settle)
      const mails = spec.transport === "smtp"
      const givenRecipients =
        input.recipients !== undefined && (typeof input.recipients !== "string" || input.recipients.trim() !== "")
      if (givenRecipients && !mails) {
        return yield* invalid({ field: "recipients", reason: "notApplicable", rule: "is for email channels" })
      }
      if (mails) yield* invitations.requireEmail
      const recipients = mails ? yield* parseRecipients(input.recipients) : []
      // The address is resolved outside any transaction (a slow resolver must not hold one open).
      const destination = yield* destinationOf(spec, input)
      const id = newId("webhookChannel")
      const at = yield* now
      yield* sql.withTransaction(
        Effect.zipRight(
          channelRepo.insertChannel({
            id,
            orgId,
            kind,
            format,
            url: destination.url,
            minSeverity,
            secretEnc: destination.sealed === undefined ? null : sealer.seal(encoder.encode(destination.sealed)),
            enabled: true,
            sensorHealth: input.sensorHealth === true,
            settleSeconds,
            createdAt: at,
          }),
          audited(
            orgId,
            "webhook.create",
            id,
            `${kind}${format === "ocsf" ? " (OCSF)" : ""} ${mails ? `${recipients.length} ${recipients.length === 1 ? "recipient" : "recipients"}` : originOf(destination.url)} (min ${minSeverity}${input.sensorHealth === true ? ", sensor health" : ""}${settleSeconds > 0 ? `, ${settleWording(settleSeconds)}` : ""})`,
          ),
        ),
      )
      if (mails) {
        // Each recipient is mailed a confirmation link (outside the transaction: a slow mail server holds none open).
        const invited = yield* invitations.invite({ id, orgId }, recipients)
        return { id, kind, format, settleSeconds, recipients: invited }
      }
      return destination.secret === undefined
        ? { id, kind, format, settleSeconds }
        : { id, kind, format, settleSeconds, secret: destination.secret }
    })

    /** An email channel of the actor's organization, or the refusal. */
    const findEmail = (channelId: string) =>
      Effect.gen(function* () {
        const channel = yield* find(channelId)
        if (kindSpec(channel.kind).transport !== "smtp") {
          return yield* invalid({
            field: "recipients",
            reason: "notApplicable",
            rule: `is for email channels; ${channel.id} is a ${channel.kind} channel`,
          })
        }
        return channel
      })

    /** An email channel's recipients: confirmed, or waiting for their link (until when). */
    const recipients = Effect.fn("ChannelAdmin.recipients")(function* (channelId: string) {
      const channel = yield* findEmail(channelId)
      return (yield* recipientsRepo.list(channel.id)).map((r) => ({
        address: r.address,
        state: r.confirmedAt !== null ? ("confirmed" as const) : ("waiting" as const),
        invitedAt: r.invitedAt.toISOString(),
        confirmedAt: r.confirmedAt?.toISOString() ?? null,
        linkValidUntil: r.confirmExpiresAt?.toISOString() ?? null,
      }))
    })

    /**
     * Adds recipients to an email channel, or mails a waiting one a fresh link (the old one stops working); a confirmed
     * recipient is left as they are. Each new or waiting one gets only the confirmation mail until they confirm.
     */
    const inviteRecipients = Effect.fn("ChannelAdmin.inviteRecipients")(function* (
      channelId: string,
      given: string | ReadonlyArray<string> | undefined,
    ) {
      yield* requireAdmin
      const channel = yield* findEmail(channelId)
      yield* invitations.requireEmail
      const addresses = yield* parseRecipients(given)
      const known = new Set((yield* recipientsRepo.list(channel.id)).map((r) => r.address))
      const added = addresses.filter((a) => !known.has(a)).length
      if (known.size + added > MAX_EMAIL_RECIPIENTS) {
        return yield* malformed(
          "recipients",
          `may hold at most ${MAX_EMAIL_RECIPIENTS} addresses per channel (it has ${known.size})`,
        )
      }
      const outcomes = yield* invitations.invite(channel, addresses)
      yield* audited(
        channel.orgId,
        "email.invite",
        channel.id,
        outcomes
          .map(
            (o) =>
              `${o.address} ${o.state === "confirmed" ? "already confirmed" : o.state === "recent" ? "mailed less than 10 minutes ago, not again" : o.mailed ? "mailed" : "not mailed"}`,
          )
          .join(", "),
      )
      return outcomes
    })

    const removeRecipient = Effect.fn("ChannelAdmin.removeRecipient")(function* (channelId: string, given: string) {
      yield* requireAdmin
      const channel = yield* findEmail(channelId)
      const address = normalizeAddress(given) ?? given.trim().toLowerCase()
      const removed = yield* recipientsRepo.remove(channel.id, address)
      if (!removed) {
        return yield* invalid({
          field: "recipients",
          reason: "unknown",
          rule: `${JSON.stringify(address.slice(0, 80))} is not a recipient of this channel`,
        })
      }
      yield* audited(channel.orgId, "email.remove", channel.id, address)
      return { id: channel.id, removed: address }
    })

    const list = Effect.fn("ChannelAdmin.list")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      const at = yield* now
      return (yield* channelRepo.listChannels(orgId)).map((c) => describe(c, at))
    })

    /**
     * A webhook gets a new signing secret; with a grace period the old one keeps signing too (second v1) until
     * it ends, so receivers can switch. A HEC channel takes the new token and a Slack or Teams channel its new URL
     * (`replacement`) at once: the receiver made them, so the old one is already void there. Syslog has no secret.
     */
    const rotate = Effect.fn("ChannelAdmin.rotate")(function* (
      channelId: string,
      grace: string | undefined,
      replacement?: string | undefined,
    ) {
      yield* requireAdmin
      const channel = yield* find(channelId)
      const spec = kindSpec(channel.kind)
      const credential = spec.credential
      if (credential.type === "none")
        return yield* invalid({ reason: "notApplicable", detail: `a ${channel.kind} channel has no secret to rotate` })
      if (credential.type !== "signingSecret") {
        if (grace !== undefined)
          return yield* invalid({
            field: "grace",
            reason: "notApplicable",
            rule: `is for ${kindsWith("signingSecret")} channels`,
          })
        const next = yield* destinationOf(
          spec,
          credential.type === "sealedToken" ? { url: channel.url, token: replacement } : { url: replacement },
        )
        // Resolved above, outside the transaction (a slow resolver must not hold one open).
        const at = yield* now
        yield* sql.withTransaction(
          Effect.zipRight(
            channelRepo.replaceDestination(channel.id, next.url, sealer.seal(encoder.encode(next.sealed ?? "")), at),
            audited(
              channel.orgId,
              "webhook.rotate",
              channel.id,
              credential.type === "sealedToken" ? "new token" : "new URL",
            ),
          ),
        )
        return { id: channel.id, secret: undefined, previousSecretValidUntil: null }
      }
      let ms = 0
      if (grace !== undefined) {
        const parsed = parseShortDuration(grace)
        if (parsed === undefined) return yield* malformed("grace", "must be a duration such as 30m, 24h or 7d")
        ms = Duration.toMillis(parsed)
      }
      if (ms > MAX_GRACE_MS) return yield* malformed("grace", "may be at most 30d")
      const at = yield* now
      const secret = credential.generate()
      yield* sql.withTransaction(
        Effect.zipRight(
          channelRepo.rotateSecret(
            channel.id,
            sealer.seal(encoder.encode(secret)),
            ms > 0 ? channel.secretEnc : null,
            ms > 0 ? new Date(at.getTime() + ms) : null,
            at,
          ),
          audited(channel.orgId, "webhook.rotate", channel.id, grace ? `grace ${grace}` : null),
        ),
      )
      return {
        id: channel.id,
        secret,
        previousSecretValidUntil: ms > 0 ? new Date(at.getTime() + ms).toISOString() : null,
      }
    })

    const setEnabled = Effect.fn("ChannelAdmin.setEnabled")(function* (channelId: string, enabled: boolean) {
      yield* requireAdmin
      const channel = yield* find(channelId)
      yield* channelRepo.setEnabled(channel.id, enabled, yield* now)
      yield* audited(channel.orgId, enabled ? "webhook.enable" : "webhook.disable", channel.id, null)
      return { id: channel.id, enabled }
    }, sql.withTransaction)

    /** Sensor-health alerts on or off for a channel (later changes of a sensor's health only). */
    const setSensorHealth = Effect.fn("ChannelAdmin.setSensorHealth")(function* (channelId: string, on: boolean) {
      yield* requireAdmin
      const channel = yield* find(channelId)
      if (on && channel.format === "ocsf") {
        return yield* ocsfHealth
      }
      yield* channelRepo.setSensorHealth(channel.id, on, yield* now)
      yield* audited(channel.orgId, "webhook.sensor_health", channel.id, on ? "on" : "off")
      return { id: channel.id, sensorHealth: on }
    }, sql.withTransaction)

    /**
     * A channel's settle window (seconds as given): audited with the old and new value. A shorter window also brings
     * forward the incidents' first messages still waiting (0 sends them now); dispatchers are woken for them.
     */
    const setSettle = Effect.fn("ChannelAdmin.setSettle")(function* (
      channelId: string,
      settle: string | number | undefined,
    ) {
      yield* requireAdmin
      const channel = yield* find(channelId)
      if (settle === undefined || (typeof settle === "string" && settle.trim() === "")) {
        return yield* missing("settle")
      }
      const seconds = yield* settleOf(kindSpec(channel.kind), settle)
      yield* channelRepo.setSettle(channel.id, seconds, yield* now)
      if (seconds < channel.settleSeconds) yield* deliveryRepo.notify
      yield* audited(
        channel.orgId,
        "webhook.settle",
        channel.id,
        `${settleWording(seconds)} (was ${channel.settleSeconds === 0 ? "off" : `${channel.settleSeconds} s`})`,
      )
      return { id: channel.id, settleSeconds: seconds }
    }, sql.withTransaction)

    /**
     * `webhook.test`: sent now, through the same sender as every delivery, and logged like one; outside any
     * transaction (a slow receiver must not hold one open), then audited. Not retried: if it fails it is dead at
     * once (re-drivable like any delivery).
     */
    const test = Effect.fn("ChannelAdmin.test")(function* (channelId: string) {
      yield* requireAdmin
      const channel = yield* find(channelId)
      const at = yield* now
      const deliveryId = newId("webhookDelivery", at.getTime())
      const owner = `admin:${process.pid}`
      const body = serializeAlertMessage({
        id: deliveryId,
        type: "webhook.test",
        createdAt: at,
        incident: sampleIncident(at, config.appUrl),
      })
      yield* deliveryRepo.insertDeliveries([
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
      // An email channel mails its confirmed recipients, and its footer names the channel and the organization.
      const mails = kindSpec(channel.kind).transport === "smtp"
      const email = mails
        ? {
            recipients: yield* recipientsRepo.confirmed(channel.id),
            mailedFor: { id: channel.id, organization: (yield* orgAdmin.require(channel.orgId)).name },
          }
        : {}
      const { startedAt, result } = yield* sender.send({
        url: channel.url,
        body,
        deliveryId,
        attempt: 1,
        channel: { ...channel, ...email },
      })
      const next = nextState(result, 0, [], new Date(yield* Clock.currentTimeMillis))
      yield* deliveryRepo.recordAttempt(owner, {
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
      yield* audited(
        channel.orgId,
        "webhook.test",
        channel.id,
        `${result.ok ? "delivered" : "failed"}${result.status === null ? "" : ` HTTP ${result.status}`}`,
      )
      return {
        deliveryId,
        ok: result.ok,
        status: result.status,
        durationMs: Math.round(result.durationMs),
        error: result.error,
      }
    })

    const deliveries = Effect.fn("ChannelAdmin.deliveries")(function* (channelId: string, status: string | undefined) {
      const channel = yield* find(channelId)
      if (status !== undefined && !DeliveryStatus.literals.includes(status as DeliveryStatus)) {
        return yield* malformed("status", `must be one of ${DeliveryStatus.literals.join(", ")}`)
      }
      const rows = yield* deliveryRepo.listDeliveries(
        channel.id,
        status as DeliveryStatus | undefined,
        DELIVERY_LOG_LIMIT,
      )
      const attempts = yield* deliveryRepo.attemptsOf(rows.map((r) => r.id))
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

    /** Re-drive: a delivery (dead, failed or even delivered) is queued again now; a running dispatcher is woken. */
    const redeliver = Effect.fn("ChannelAdmin.redeliver")(function* (deliveryId: string) {
      yield* requireAdmin
      const found = isId("webhookDelivery", deliveryId) ? yield* deliveryRepo.findDelivery(deliveryId) : Option.none()
      if (Option.isNone(found)) return yield* notFound("delivery", deliveryId)
      const delivery = found.value
      yield* requireScope(delivery.orgId, "delivery", deliveryId)
      yield* sql.withTransaction(
        Effect.gen(function* () {
          if (!(yield* deliveryRepo.redeliver(deliveryId, yield* now))) {
            return yield* notFound("delivery", deliveryId)
          }
          yield* deliveryRepo.notify
          yield* audited(delivery.orgId, "webhook.redeliver", deliveryId, delivery.channelId)
        }),
      )
      return { id: deliveryId, status: "pending" as const }
    })

    /** After a SECRET_KEY rotation: channel secrets sealed under an older key are sealed under the current one. */
    const resealSecrets = Effect.fn("ChannelAdmin.resealSecrets")(function* () {
      const actor = yield* AdminActor
      if (actor._tag !== "Operator") {
        return yield* new Forbidden({ reason: "operatorOnly" })
      }
      let resealed = 0
      const unreadable: Array<string> = []
      for (const channel of yield* channelRepo.allChannels()) {
        const sealed = [channel.secretEnc, channel.previousSecretEnc]
        if (sealed.every((s) => s === null || sealedKeyId(s) === sealer.keyId)) continue
        const [secret, previous] = sealed.map((s) => (s === null ? null : sealer.open(s)))
        if (secret === undefined || previous === undefined || secret === null) {
          unreadable.push(channel.id)
          continue
        }
        yield* channelRepo.setSealedSecrets(
          channel.id,
          sealer.seal(secret),
          previous === null ? null : sealer.seal(previous),
        )
        resealed++
      }
      return { resealed, unreadable }
    })

    return {
      find,
      create,
      recipients,
      inviteRecipients,
      removeRecipient,
      list,
      rotate,
      setEnabled,
      setSensorHealth,
      setSettle,
      test,
      deliveries,
      redeliver,
      resealSecrets,
    } as const
  }),
}) {}
