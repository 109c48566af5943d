import type { AlertMessage } from "../alertMessage.ts"
import type { SensorWebhookBody } from "../sensorHealthPayload.ts"

/**
 * A channel has a kind. A kind is one descriptor (`ChannelKindSpec`, one module per kind in this folder, listed
 * in registry.ts): its formatter (pure: the stored message in, the receiver's bytes out), the transport it uses (in
 * platform/outbound), the credential it takes, its address rule and its wording. The outbox stores every delivery in
 * the native shape (the spec's webhook body, or a sensor-health body); the kind's formatter renders it at send time,
 * so a retry renders the same bytes from the same stored row.
 */

/** The body a channel may send: the native shape, or OCSF Detection Finding (for SIEMs). */
export const CHANNEL_FORMATS = ["native", "ocsf"] as const
export type ChannelFormat = (typeof CHANNEL_FORMATS)[number]

/** A stored delivery body, parsed: an incident message (`incident.*`, `webhook.test`) or a sensor-health one. */
export type ChannelMessage = AlertMessage | SensorWebhookBody

export const isSensorMessage = (m: ChannelMessage): m is SensorWebhookBody =>
  m.type === "sensor.silent" || m.type === "sensor.recovered"

/** What every formatter may use besides the message. */
export interface FormatContext {
  /** APP_URL without a trailing slash: the only place chat messages link to. */
  readonly appUrl: string
  /** The product's name and version, for OCSF `metadata.product` and syslog APP-NAME. */
  readonly product: {
    readonly name: string
    readonly vendor: string
    readonly version: string
    /** A token form of the name: syslog APP-NAME, HEC `source`. */
    readonly id: string
  }
  /** The sending host's name (syslog HOSTNAME, HEC `host`). */
  readonly hostname: string
  /** The channel and its organization's name, for a message that says why its reader gets it (email's footer). */
  readonly channel?: { readonly id: string; readonly organization: string } | undefined
}

/**
 * The transports platform/outbound has: one HTTPS POST through the address rule (`send.ts`), one RFC 5424 message
 * over TLS (`syslogSend.ts`), or one email through the operator's SMTP server (`mailSend.ts`; the kind renders the
 * JSON of an `EmailContent`, emailText.ts). A kind that needs another adds it there and here.
 */
export type ChannelTransport = "https" | "syslog-tls" | "smtp"

/** What a webhook's signature headers are made from at send time. */
export interface SigningInput {
  /** The current secret, then the previous one while a rotation grace lasts. */
  readonly secrets: ReadonlyArray<string>
  readonly at: Date
  /** The exact bytes sent. */
  readonly body: string
  readonly deliveryId: string
  readonly attempt: number
}

/**
 * What a channel keeps secret, stored sealed under SECRET_KEY (the service must use it again to sign or send):
 * - `none`: nothing (the transport checks the server's certificate); nothing to rotate.
 * - `signingSecret`: made by the service, shown once; rotating makes a new one, the old one also signing during a
 *   grace period.
 * - `sealedUrl`: the whole address is the credential (`--url`, the form's `url`); only its origin is kept in view.
 *   Rotating takes the receiver's new URL, at once.
 * - `sealedToken`: a token the receiver made (`flag`, the form's `field`), sent in `headers`; rotating takes the new
 *   one, at once.
 */
export type ChannelCredential =
  | { readonly type: "none" }
  | {
      readonly type: "signingSecret"
      readonly generate: () => string
      readonly headers: (input: SigningInput) => Record<string, string>
    }
  | { readonly type: "sealedUrl" }
  | {
      readonly type: "sealedToken"
      /** The CLI flag that carries it. */
      readonly flag: "--token"
      /** The console form's field. */
      readonly field: "token"
      /** How texts name it: "HEC token". */
      readonly label: string
      readonly maxLength: number
      /** A refusal for a token that cannot be one, or undefined. */
      readonly refusal: (token: string) => string | undefined
      readonly headers: (token: string) => Record<string, string>
    }

/**
 * Who reads a kind's messages, and so whether its channels settle. People read a chat message once: an attack that goes
 * created → escalated → escalated within seconds should be one message carrying the final state, so their kinds wait a
 * settle window after an incident's first message to a channel (`defaultSeconds` for a new channel; each channel may
 * change it, 0 turning it off) and send the incident as it stands when the window ends; later changes are new messages
 * at once. Machines (a receiver, a SIEM) get every transition as the webhook spec says: their window is always 0.
 */
export type ChannelSettle =
  | { readonly readers: "people"; readonly defaultSeconds: number }
  | { readonly readers: "machines" }

/**
 * The longest settle window, in seconds: an hour. The window exists to merge a burst of changes that comes within
 * seconds; a first alert held longer than an hour is no longer an alert, and the bound caps what a mistyped value can
 * delay.
 */
export const MAX_SETTLE_SECONDS = 3600

/** A new channel's settle window: its kind's default for people, 0 for machines. */
export const defaultSettleSeconds = (settle: ChannelSettle): number =>
  settle.readers === "people" ? settle.defaultSeconds : 0

/** One piece of a hint: text, or text shown as code. */
export type HintPart = string | { readonly code: string }

/** A channel kind: everything the sender, the admin service, the CLI and the console need to know of it. */
export interface ChannelKindSpec<Name extends string = string> {
  /** As stored, and as `--kind` and the form's `kind` take it. */
  readonly name: Name
  /** How the console names it ("Microsoft Teams"). */
  readonly label: string
  /** How refusals and lists in a sentence name it ("Teams"). */
  readonly shortLabel: string
  /** What it may send: native, and OCSF for machine receivers. */
  readonly formats: ReadonlyArray<ChannelFormat>
  /** The console's Format fact when it is always the same ("Adaptive Card"); otherwise the format's own. */
  readonly formatLabel?: string
  /** The stored bytes are sent as they are in this format (not rendered). */
  readonly sendsStored?: ChannelFormat
  /**
   * The bytes sent for a stored message (`message` decoded, `stored` the same body as plain parsed JSON). The HTTPS
   * transport sends them as application/json; syslog as the message of one RFC 5424 frame.
   */
  readonly render: (format: ChannelFormat, message: ChannelMessage, stored: unknown, context: FormatContext) => string
  readonly transport: ChannelTransport
  readonly credential: ChannelCredential
  /** Whether its channels wait a settle window before an incident's first message, and how long by default. */
  readonly settle: ChannelSettle
  /**
   * Where it sends (every address passes the same public-address rule): `https` URLs or `syslog+tls://host[:port]`, how
   * texts name it, the path given to a URL without one, and who sees it whole in the console (`admins`: analysts see
   * the origin only; `everyone`: nothing in it is secret; a sealed URL's origin is all anyone sees).
   */
  readonly address: {
    /** `mailto`: the channel has no address of its own; it mails its confirmed recipients (`url` is `mailto:`). */
    readonly scheme: "https" | "syslog+tls" | "mailto"
    readonly noun: "URL" | "destination" | "recipients"
    readonly defaultPath?: string
    readonly shownWhole: "admins" | "everyone"
    /** The Add channel form's hint for this kind's address. */
    readonly hint: ReadonlyArray<HintPart>
  }
  /** The console's notice after Add channel. */
  readonly added: (id: string) => string
  /** The console's notice after its credential is replaced (sealed URL or token). */
  readonly replaced?: string
}

/** "a", "a and b", "a, b and c". */
export const listed = (items: ReadonlyArray<string>): string =>
  items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`
