import { Command } from "@effect/cli"
import { Effect } from "effect"
import { type ChannelCredential, defaultSettleSeconds, MAX_SETTLE_SECONDS } from "../../domain/channels/kinds.ts"
import { CHANNEL_KIND_SPECS, CHANNEL_KINDS, kindSpec } from "../../domain/channels/registry.ts"
import { ChannelAdmin, settleWording } from "../ChannelAdmin.ts"
import type { InviteOutcome } from "../emailRecipients.ts"
import {
  argument,
  asAdmin,
  credential,
  flag,
  json,
  optionalFlag,
  print,
  required,
  STDIN,
  switchFlag,
  table,
  usage,
} from "./shared.ts"

/** What --settle is, from the kinds' descriptors: which kinds settle and their default. */
const SETTLE_USAGE = (() => {
  const people = CHANNEL_KIND_SPECS.filter((spec) => spec.settle.readers === "people")
  const defaults = [...new Set(people.map((spec) => defaultSettleSeconds(spec.settle)))]
  return (
    `${people.map((spec) => spec.name).join(", ")} only: seconds an incident's first message waits so that ` +
    `changes within them make one message (default ${defaults.join(" or ")}, 0 to ${MAX_SETTLE_SECONDS}, 0: off)`
  )
})()

/** How messages name what a kind keeps sealed that the admin gave: "HEC token", "URL"; undefined for none. */
const sealedName = (credential: ChannelCredential): string | undefined =>
  credential.type === "sealedToken" ? credential.label : credential.type === "sealedUrl" ? "URL" : undefined

/** At most one flag of a command reads standard input. */
const oneFromStdin = (values: { readonly url?: string | undefined; readonly token?: string | undefined }) =>
  values.url === STDIN && values.token === STDIN
    ? Effect.fail(usage("only one of --url and --token can be read from standard input (-)"))
    : Effect.void

const org = flag("org", "<org-id>", "the organization")
const channelId = argument("channel-id", "the channel")

const create = Command.make(
  "create",
  {
    org,
    kind: optionalFlag("kind", CHANNEL_KINDS.join("|"), "the kind of channel (default: webhook)"),
    format: optionalFlag("format", "native|ocsf", "native (default) or ocsf: webhook, syslog, splunk_hec only"),
    url: optionalFlag(
      "url",
      "<url|->",
      "where it sends (every kind but email): https://… or syslog+tls://host[:6514]; a Slack or Teams URL is a credential: - reads it from standard input (one line)",
    ),
    recipients: optionalFlag(
      "recipients",
      "<address,…>",
      "email only: who it mails, separated by commas; each is mailed a confirmation link and gets alerts once confirmed",
    ),
    token: optionalFlag("token", "<HEC token>|-", "a HEC token (a credential): - reads it from standard input"),
    minSeverity: optionalFlag("min-severity", "low|medium|high|critical", "the least severity it sends"),
    sensorHealth: switchFlag("sensor-health", "also sensor.silent / sensor.recovered (native)"),
    settle: optionalFlag("settle", "<seconds>", SETTLE_USAGE),
    json,
  },
  (input) =>
    asAdmin(
      Effect.gen(function* () {
        const orgId = yield* required(input.org, "--org")
        const mails = kindSpec(input.kind ?? "webhook")?.transport === "smtp"
        if (mails && input.recipients === undefined)
          return yield* usage("--recipients is required for an email channel")
        if (!mails) yield* required(input.url, "--url")
        yield* oneFromStdin(input)
        const created = yield* (yield* ChannelAdmin).create(orgId, {
          kind: input.kind,
          format: input.format,
          url: input.url === undefined ? undefined : yield* credential(input.url, "--url"),
          recipients: input.recipients,
          // Read only for a kind that takes a token: any other refuses --token before a terminal is asked for it.
          token:
            kindSpec(input.kind ?? "webhook")?.credential.type === "sealedToken"
              ? yield* credential(input.token, "--token")
              : input.token,
          minSeverity: input.minSeverity,
          sensorHealth: input.sensorHealth,
          settle: input.settle,
        })
        const result = {
          id: created.id,
          kind: created.kind,
          format: input.format ?? "native",
          settleSeconds: created.settleSeconds,
          secret: created.secret,
          recipients: created.recipients,
        }
        const sealed = sealedName(kindSpec(created.kind).credential)
        const settle = created.settleSeconds > 0 ? ` (${settleWording(created.settleSeconds)})` : ""
        return yield* print(input.json, result, () =>
          created.recipients !== undefined
            ? `${created.kind} channel ${created.id} created${settle}.\n${invitedLines(created.recipients)}`
            : created.secret !== undefined
              ? `${created.kind} channel ${created.id} created${settle}. Its signing secret, shown only now:\n${created.secret}`
              : `${created.kind} channel ${created.id} created${settle}` +
                (sealed === undefined ? "" : `; its ${sealed} is stored sealed and not shown again`),
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "create a channel (default: webhook, native); a webhook's signing secret is printed only here; a Slack or " +
      "Teams URL and a HEC token are credentials, stored sealed and not shown again: --url - or --token - reads it " +
      "from standard input (one line), out of shell history and ps",
  ),
)

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* ChannelAdmin).list(yield* required(org, "--org"))
      return yield* print(json, rows, () => table(rows))
    }),
  ),
).pipe(
  Command.withDescription(
    "channels with kind and format (never a secret, a token or the path of a Slack or Teams URL)",
  ),
)

const rotate = Command.make(
  "rotate",
  {
    channelId,
    grace: optionalFlag("grace", "24h", "webhook: how long the old secret also signs"),
    url: optionalFlag("url", "<new URL>|-", "slack, teams: the new URL (- reads it from standard input)"),
    token: optionalFlag("token", "<new HEC token>|-", "splunk_hec: the new token (- reads it from standard input)"),
    json,
  },
  (input) =>
    asAdmin(
      Effect.gen(function* () {
        const channels = yield* ChannelAdmin
        const channel = yield* channels.find(yield* required(input.channelId, "<channel-id>"))
        // The flags a kind's credential takes; any other is refused rather than silently dropped.
        const kindCredential = kindSpec(channel.kind).credential
        const type = kindCredential.type
        if (type === "signingSecret" && (input.url !== undefined || input.token !== undefined)) {
          return yield* usage(
            `a ${channel.kind} channel gets a new signing secret: --url and --token are for other kinds`,
          )
        }
        if (type === "sealedToken" && input.url !== undefined) {
          return yield* usage(`a ${channel.kind} channel takes a new ${kindCredential.flag} (its URL stays)`)
        }
        if (type === "sealedUrl" && input.token !== undefined) {
          return yield* usage(`a ${channel.kind} channel takes a new --url, not --token`)
        }
        yield* oneFromStdin(input)
        // Standard input is not read for a rotation the service refuses anyway (no credential given by the admin, or
        // --grace beside a new value).
        const replacement =
          type === "signingSecret" || type === "none" || input.grace !== undefined
            ? undefined
            : type === "sealedToken"
              ? yield* credential(input.token, kindCredential.flag)
              : yield* credential(input.url, "--url")
        const rotated = yield* channels.rotate(channel.id, input.grace, replacement)
        return yield* print(
          input.json,
          { kind: channel.kind, secret: rotated.secret, previousSecretValidUntil: rotated.previousSecretValidUntil },
          () =>
            rotated.secret === undefined
              ? `${channel.kind} channel ${rotated.id}: the new ${sealedName(kindCredential)} is stored sealed and used from now on`
              : `new signing secret of ${rotated.id}, shown only now:\n${rotated.secret}` +
                (rotated.previousSecretValidUntil
                  ? `\nthe old secret also signs until ${rotated.previousSecretValidUntil}`
                  : ""),
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "webhook: new signing secret, printed only here; the old one also signs during the grace; slack, teams: the " +
      "new --url, splunk_hec: the new --token, at once (- reads it from standard input); syslog has nothing to rotate",
  ),
)

const update = Command.make(
  "update",
  // --settle is checked after the channel's id, as the command always has.
  { channelId, settle: optionalFlag("settle", "<seconds>", `0 to ${MAX_SETTLE_SECONDS}; 0: off`), json },
  ({ channelId, settle, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const id = yield* required(channelId, "<channel-id>")
        const result = yield* (yield* ChannelAdmin).setSettle(id, yield* required(settle, "--settle"))
        return yield* print(
          json,
          result,
          () =>
            `channel ${result.id}: ${result.settleSeconds === 0 ? "settle window off: every change is sent at once" : `an incident's first message waits ${result.settleSeconds} s`}`,
        )
      }),
    ),
).pipe(Command.withDescription(`change the channel's settle window (0 to ${MAX_SETTLE_SECONDS}; 0: off)`))

const setEnabled = (name: "disable" | "enable") =>
  Command.make(name, { channelId, json }, ({ channelId, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* ChannelAdmin).setEnabled(
          yield* required(channelId, "<channel-id>"),
          name === "enable",
        )
        return yield* print(json, result, () => `channel ${result.id} ${result.enabled ? "enabled" : "disabled"}`)
      }),
    ),
  ).pipe(Command.withDescription(name === "enable" ? "send on it again" : "stop sending on it"))

const sensorHealth = (group: string) =>
  Command.make(
    "sensor-health",
    { channelId, state: argument("on|off", "on or off"), json },
    ({ channelId, state, json }) =>
      asAdmin(
        Effect.gen(function* () {
          const id = yield* required(channelId, "<channel-id>")
          const on = yield* required(state, "on|off")
          if (on !== "on" && on !== "off") return yield* usage(`${group} sensor-health needs on or off`)
          const result = yield* (yield* ChannelAdmin).setSensorHealth(id, on === "on")
          return yield* print(
            json,
            result,
            () => `channel ${result.id}: sensor-health alerts ${result.sensorHealth ? "on" : "off"}`,
          )
        }),
      ),
  ).pipe(Command.withDescription("sensor.silent / sensor.recovered alerts for this channel"))

const test = Command.make("test", { channelId, json }, ({ channelId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const result = yield* (yield* ChannelAdmin).test(yield* required(channelId, "<channel-id>"))
      yield* print(
        json,
        result,
        () =>
          `${result.ok ? "delivered" : "failed"}: ${result.status === null ? "no HTTP status" : `HTTP ${result.status}`} in ${result.durationMs} ms` +
          (result.error ? ` (${result.error})` : "") +
          ` [delivery ${result.deliveryId}]`,
      )
      if (!result.ok) return yield* usage("the test delivery failed")
    }),
  ),
).pipe(Command.withDescription("send a test message now; prints the receiver's status and time"))

const deliveries = Command.make(
  "deliveries",
  { channelId, status: optionalFlag("status", "pending|failed|succeeded|dead", "only deliveries in this state"), json },
  ({ channelId, status, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const rows = yield* (yield* ChannelAdmin).deliveries(yield* required(channelId, "<channel-id>"), status)
        return yield* print(json, rows, () =>
          rows.length === 0
            ? "(none)"
            : rows
                .map(
                  (r) =>
                    `${r.id}  ${r.type}  ${r.status}  attempts=${r.attempts}  created=${r.createdAt}` +
                    (r.nextAttemptAt ? `  next=${r.nextAttemptAt}` : "") +
                    r.log
                      .map(
                        (a) =>
                          `\n    #${a.attempt} ${a.at} ${a.durationMs} ms ${a.status ?? "-"}${a.error ? ` ${a.error}` : ""}`,
                      )
                      .join(""),
                )
                .join("\n"),
        )
      }),
    ),
).pipe(Command.withDescription("the delivery log (attempts, status codes, errors, times)"))

/** One line per recipient asked for: mailed a link, confirmed already, or the mail failed (why). */
const invitedLines = (outcomes: ReadonlyArray<InviteOutcome>) =>
  outcomes
    .map((o) =>
      o.state === "confirmed"
        ? `${o.address}: confirmed already`
        : o.state === "recent"
          ? `${o.address}: mailed a link less than 10 minutes ago; not mailed again yet`
          : o.mailed
            ? `${o.address}: confirmation link mailed (alerts start once they confirm)`
            : `${o.address}: the confirmation link could not be mailed (${o.error ?? "refused"}); try channel invite again`,
    )
    .join("\n")

const recipients = Command.make("recipients", { channelId, json }, ({ channelId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* ChannelAdmin).recipients(yield* required(channelId, "<channel-id>"))
      return yield* print(json, rows, () => (rows.length === 0 ? "(none)" : table(rows)))
    }),
  ),
).pipe(Command.withDescription("an email channel's recipients: confirmed, or waiting for their link (until when)"))

const invite = Command.make(
  "invite",
  {
    channelId,
    recipients: optionalFlag("recipients", "<address,…>", "addresses separated by commas"),
    json,
  },
  ({ channelId, recipients, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const id = yield* required(channelId, "<channel-id>")
        const outcomes = yield* (yield* ChannelAdmin).inviteRecipients(id, yield* required(recipients, "--recipients"))
        yield* print(json, outcomes, () => invitedLines(outcomes))
        if (outcomes.some((o) => o.state === "invited" && !o.mailed)) {
          return yield* usage("a confirmation link could not be mailed")
        }
      }),
    ),
).pipe(
  Command.withDescription(
    "add recipients to an email channel, or mail a waiting one a new link (the old one stops working)",
  ),
)

const removeRecipient = Command.make(
  "remove-recipient",
  { channelId, address: argument("address", "the recipient's address"), json },
  ({ channelId, address, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const id = yield* required(channelId, "<channel-id>")
        const result = yield* (yield* ChannelAdmin).removeRecipient(id, yield* required(address, "<address>"))
        return yield* print(json, result, () => `${result.removed} no longer receives channel ${result.id}'s alerts`)
      }),
    ),
).pipe(Command.withDescription("stop mailing a recipient of an email channel"))

const redeliver = Command.make(
  "redeliver",
  { deliveryId: argument("delivery-id", "the delivery"), json },
  ({ deliveryId, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* ChannelAdmin).redeliver(yield* required(deliveryId, "<delivery-id>"))
        return yield* print(json, result, () => `delivery ${result.id} queued again`)
      }),
    ),
).pipe(Command.withDescription("queue a delivery again now (e.g. a dead one)"))

/**
 * The channel commands under a group's name: `channel`, and `webhook`, its older name (a webhook is one kind of
 * channel), which works exactly the same.
 */
const channelGroup = (name: "channel" | "webhook") =>
  Command.make(name).pipe(
    Command.withDescription(
      name === "channel" ? "alert channels" : "the older name of the channel group: the same commands",
    ),
    Command.withSubcommands([
      create,
      list,
      rotate,
      update,
      setEnabled("disable"),
      setEnabled("enable"),
      sensorHealth(name),
      test,
      deliveries,
      redeliver,
      recipients,
      invite,
      removeRecipient,
    ]),
  )

export const channel = channelGroup("channel")
export const webhook = channelGroup("webhook")
