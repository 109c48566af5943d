/**
 * A complete webhook receiver for the incident service, on `Bun.serve`, with no dependency but the receiver SDK.
 *
 *     WEBHOOK_SECRET=whsec_… bun run examples/receiver.ts
 *
 * or, from your own code:
 *
 *     const receiver = startReceiver({ secret, onIncident: async (event) => { … } })
 *
 * What every receiver must do, in this order (docs/webhooks.md "Verifying a request"):
 * 1. read the raw body bytes, with a size limit (never parse and re-serialise the JSON before verifying);
 * 2. verify `X-Service-Signature` over exactly those bytes, and refuse the request if it fails;
 * 3. only then parse, and drop an event `id` already seen: retries (and replays inside the 300 s window) repeat it;
 * 4. answer 2xx at once (the service waits 5 s, then retries) and do the real work afterwards.
 */

// The package's "exports" map publishes the SDK as `decoy-incident-service/webhooks/verify`. Bun resolves the package's
// own name inside this repository too, so this is exactly the line a receiver that installed the package writes
// (`bun add <path or git URL of this repository>`). The file only needs `node:crypto`: copying it works as well.
import { SIGNATURE_HEADER, type VerifyFailureReason, verifyWebhook } from "decoy-incident-service/webhooks/verify"

export type IncidentWebhookType = "incident.created" | "incident.escalated" | "incident.reopened" | "webhook.test"
export type Severity = "low" | "medium" | "high" | "critical"

/** The webhook body: compact JSON, `{ id, type, createdAt, incident }`. */
export interface IncidentWebhook {
  /** The event id (`whe_…`): the same on every retry of this event, and in the `X-Service-Webhook-Id` header. */
  readonly id: string
  readonly type: IncidentWebhookType
  /** RFC 3339 UTC, e.g. 2026-11-21T15:57:42.053Z. */
  readonly createdAt: string
  readonly incident: {
    readonly id: string
    readonly title: string
    readonly severity: Severity
    readonly narrative: string
    readonly recommendedAction: string
    readonly sensor: { readonly id: string; readonly name: string; readonly profile: string }
    readonly sourceIp: string
    readonly eventCount: number
    readonly firstSeenAt: string
    readonly lastSeenAt: string
    /** A link to the incident in the service's UI. */
    readonly url: string
    /** MITRE ATT&CK: { id: "T1110.001", name: "Brute Force: Password Guessing", tactics: ["credential-access"] } */
    readonly techniques: ReadonlyArray<{ readonly id: string; readonly name: string; readonly tactics: string[] }>
    /** The most recent events, oldest first, at most 20. `attackerInput` in them is attacker-controlled text. */
    readonly events: ReadonlyArray<Readonly<Record<string, unknown>>>
  }
}

/** A sensor-health alert, sent only to channels that opted in: `{ id, type, createdAt, sensor }`. */
export interface SensorHealthWebhook {
  readonly id: string
  readonly type: "sensor.silent" | "sensor.recovered"
  readonly createdAt: string
  readonly sensor: {
    readonly id: string
    readonly name: string
    readonly profile: string
    /** The sensor's last contact (whole seconds), null if it was never heard from. */
    readonly lastSeenAt: string | null
  }
}

export interface ReceiverOptions {
  /** The channel's signing secret (`whsec_…`). Several while you change your own configuration: any one is enough. */
  readonly secret: string | ReadonlyArray<string>
  /** Default 3000; 0 picks a free port. */
  readonly port?: number
  /** Default "0.0.0.0". */
  readonly hostname?: string
  /** PEM text. The service only delivers to `https://` URLs: serve TLS here or behind a TLS-terminating proxy. */
  readonly tls?: { readonly cert: string; readonly key: string }
  /** Called once per event id, after the 2xx was sent, one event at a time in arrival order. */
  readonly onIncident: (event: IncidentWebhook) => Promise<void> | void
  /**
   * Called once per `sensor.silent` / `sensor.recovered` id, in the same queue as `onIncident`. Without it those
   * alerts are acknowledged (so not retried) and dropped, as unknown types are.
   */
  readonly onSensorHealth?: (event: SensorHealthWebhook) => Promise<void> | void
  /** Called when `onIncident` or `onSensorHealth` throws or rejects. Default: log to stderr. */
  readonly onError?: (error: unknown, event: IncidentWebhook | SensorHealthWebhook) => void
  /** Accepted clock difference for the signature's `t`, both directions. Default 300 s. */
  readonly toleranceSeconds?: number
}

export interface ReceiverStats {
  /** Verified, new events queued for `onIncident`. */
  accepted: number
  /** Verified events whose id was already accepted (retries): answered 2xx, not processed again. */
  duplicates: number
  /** Verified events of a type this receiver does not know: answered 2xx so they are not retried, then dropped. */
  ignored: number
  /** Requests refused with 400 (bad signature or unparsable body). */
  rejected: number
  /** `onIncident` calls that completed. */
  processed: number
  /** `onIncident` calls that threw or rejected. */
  failed: number
}

export interface Receiver {
  /** e.g. "http://127.0.0.1:3000/" */
  readonly url: string
  readonly port: number
  /** Live counters. */
  readonly stats: Readonly<ReceiverStats>
  /** Resolves once every accepted event has been through `onIncident`. */
  idle(): Promise<void>
  /** Stops listening, then waits for the queued events. */
  stop(): Promise<void>
}

export const MAX_BODY_BYTES = 1024 * 1024
const REMEMBERED_IDS = 10_000
const KNOWN_TYPES: ReadonlySet<string> = new Set<IncidentWebhookType>([
  "incident.created",
  "incident.escalated",
  "incident.reopened",
  "webhook.test",
])

/**
 * The event ids already accepted, bounded: past `capacity` the oldest is forgotten. In memory for the example only:
 * a real receiver uses its database (a unique key on the event id, written in the same transaction as the work),
 * which survives restarts and is shared by every instance behind the URL.
 */
const recentIds = (capacity: number) => {
  const ids = new Set<string>() // a Set iterates in insertion order, so the first id is the oldest
  return {
    /** Remembers `id`; false if it was already there. */
    add(id: string): boolean {
      if (ids.has(id)) return false
      ids.add(id)
      if (ids.size > capacity) {
        for (const oldest of ids) {
          ids.delete(oldest)
          break
        }
      }
      return true
    },
    forget(id: string): void {
      ids.delete(id)
    },
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const SENSOR_HEALTH_TYPES: ReadonlySet<string> = new Set(["sensor.silent", "sensor.recovered"])

/**
 * The verified body as an event, or undefined if it is not JSON of the expected outline: an `id` and a `type`, and
 * the `incident` (or, for a sensor-health alert, the `sensor`) its type carries. A type this receiver does not know
 * is returned as it is, to be acknowledged and dropped.
 */
const parseEvent = (raw: Uint8Array): IncidentWebhook | SensorHealthWebhook | undefined => {
  let body: unknown
  try {
    body = JSON.parse(new TextDecoder().decode(raw))
  } catch {
    return undefined
  }
  if (!isRecord(body) || typeof body.id !== "string" || body.id === "" || typeof body.type !== "string")
    return undefined
  if (KNOWN_TYPES.has(body.type) && !isRecord(body.incident)) return undefined
  if (SENSOR_HEALTH_TYPES.has(body.type) && !isRecord(body.sensor)) return undefined
  // The body is signed by the service, so its shape can be trusted beyond this outline.
  return body as unknown as IncidentWebhook | SensorHealthWebhook
}

const isSensorHealth = (event: IncidentWebhook | SensorHealthWebhook): event is SensorHealthWebhook =>
  SENSOR_HEALTH_TYPES.has(event.type)

const reply = (status: number, text: string, headers?: Record<string, string>): Response =>
  new Response(`${text}\n`, { status, headers: { "Content-Type": "text/plain; charset=utf-8", ...headers } })

export function startReceiver(options: ReceiverOptions): Receiver {
  const secrets = typeof options.secret === "string" ? [options.secret] : [...options.secret]
  if (secrets.length === 0 || secrets.some((secret) => typeof secret !== "string" || secret === "")) {
    throw new TypeError("startReceiver needs the channel's signing secret (whsec_…)")
  }
  const verifyOptions = options.toleranceSeconds === undefined ? {} : { toleranceSeconds: options.toleranceSeconds }
  const onError = options.onError ?? ((error, event) => console.error(`webhook ${event.id}: processing failed:`, error))

  const stats: ReceiverStats = { accepted: 0, duplicates: 0, ignored: 0, rejected: 0, processed: 0, failed: 0 }
  const seen = recentIds(REMEMBERED_IDS)

  /** undefined if one of the secrets verifies, else why not (only a mismatch depends on the secret). */
  const verify = (raw: Uint8Array, header: string | null): VerifyFailureReason | undefined => {
    let reason: VerifyFailureReason = "signature_mismatch"
    for (const secret of secrets) {
      const result = verifyWebhook(raw, header, secret, verifyOptions)
      if (result.ok) return undefined
      reason = result.reason
    }
    return reason
  }

  // The work queue: events are processed one at a time, after their 2xx. In memory, so an event accepted just before
  // a crash is lost; a real receiver writes the event to its database (or a durable queue) before answering.
  let queue: Promise<void> = Promise.resolve()
  const enqueue = (event: IncidentWebhook | SensorHealthWebhook): void => {
    queue = queue
      .then(async () => {
        try {
          if (isSensorHealth(event)) await options.onSensorHealth?.(event)
          else await options.onIncident(event)
          stats.processed++
        } catch (error) {
          stats.failed++
          // Forget the id, so that a redelivery (`bun run admin webhook redeliver <delivery-id>`) is processed again.
          seen.forget(event.id)
          onError(error, event)
        }
      })
      .catch(() => undefined) // an onError that throws must not stop the queue
  }
  const idle = async (): Promise<void> => {
    for (let tail = queue; ; tail = queue) {
      await tail
      if (tail === queue) return
    }
  }

  const server = Bun.serve({
    port: options.port ?? 3000,
    hostname: options.hostname ?? "0.0.0.0",
    ...(options.tls === undefined ? {} : { tls: { cert: options.tls.cert, key: options.tls.key } }),
    // Bun answers 413 itself, without reading further, when a body (announced or chunked) is larger than this.
    maxRequestBodySize: MAX_BODY_BYTES,
    async fetch(request) {
      if (request.method !== "POST") return reply(405, "method not allowed", { Allow: "POST" })

      // 1. The raw bytes, exactly as received.
      const raw = new Uint8Array(await request.arrayBuffer())
      if (raw.byteLength > MAX_BODY_BYTES) return reply(413, "body too large") // for servers without such a limit

      // 2. Verify before looking at the content. The reason code is all the caller learns.
      const failure = verify(raw, request.headers.get(SIGNATURE_HEADER))
      if (failure !== undefined) {
        stats.rejected++
        return reply(400, `invalid signature: ${failure}`)
      }

      // 3. Parse, then deduplicate by the body's id (signed, unlike the X-Service-Webhook-Id header). Checking ids
      //    only after verification means nobody can make us ignore a future event by sending its id first.
      const event = parseEvent(raw)
      if (event === undefined) {
        stats.rejected++
        return reply(400, "invalid body")
      }
      const handled = KNOWN_TYPES.has(event.type) || (isSensorHealth(event) && options.onSensorHealth !== undefined)
      if (!handled) {
        stats.ignored++ // a type added after this receiver was written: acknowledge it, or it would be retried
        return reply(202, "ignored")
      }
      if (!seen.add(event.id)) {
        stats.duplicates++
        return reply(200, "duplicate")
      }

      // 4. Acknowledge now, process afterwards: a slow onIncident never makes the service time out and retry.
      stats.accepted++
      enqueue(event)
      return reply(202, "accepted")
    },
    error(error) {
      console.error("webhook receiver:", error)
      return reply(500, "internal error") // no stack trace or error page to the caller
    },
  })

  return {
    url: server.url.href,
    port: server.port ?? 0,
    stats,
    idle,
    async stop() {
      await server.stop()
      await idle()
    },
  }
}

if (import.meta.main) {
  // Several secrets may be given separated by commas (secrets are base64url, so they never contain one).
  const secrets = (process.env.WEBHOOK_SECRET ?? "").split(",").filter((secret) => secret !== "")
  if (secrets.length === 0) {
    console.error("WEBHOOK_SECRET is required: the channel's signing secret (whsec_…), shown once when it was created.")
    process.exit(1)
  }
  const port = Number(process.env.PORT ?? 3000)
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`PORT must be a port number, not ${process.env.PORT}`)
    process.exit(1)
  }
  // Optional: serve HTTPS directly (the service only delivers to https:// URLs), else put a TLS proxy in front.
  const certFile = process.env.TLS_CERT_FILE
  const keyFile = process.env.TLS_KEY_FILE
  const tls =
    certFile && keyFile ? { cert: await Bun.file(certFile).text(), key: await Bun.file(keyFile).text() } : undefined

  const receiver = startReceiver({
    secret: secrets,
    port,
    ...(tls === undefined ? {} : { tls }),
    onIncident: (event) => {
      const { incident } = event
      console.log(`${event.type} ${event.id} ${incident.severity} ${incident.title}`)
    },
    onSensorHealth: (event) => {
      const { sensor } = event
      console.log(
        `${event.type} ${event.id} ${sensor.name} (${sensor.id}) last heard from ${sensor.lastSeenAt ?? "never"}`,
      )
    },
  })

  console.log(`Receiving webhooks on ${receiver.url}
The service delivers only to https:// URLs that resolve to public addresses. Create a channel for this receiver's
public address (WEBHOOK_SECRET is the secret that command prints, once), then send it a test event:
  bun run admin webhook create --org <org-id> --url https://<your-host>/
  bun run admin webhook test <channel-id>
To try it all on one machine: serve TLS here (TLS_CERT_FILE, TLS_KEY_FILE: a certificate for the IP 127.0.0.1; the
name localhost is refused), start the service with WEBHOOK_ALLOW_PRIVATE=127.0.0.0/8 and WEBHOOK_CA_FILE=<the CA of
that certificate>, and create the channel with --url https://127.0.0.1:${receiver.port}/`)

  const shutdown = async () => {
    await receiver.stop() // finish the queued events first
    process.exit(0)
  }
  process.on("SIGINT", shutdown)
  process.on("SIGTERM", shutdown)
}
