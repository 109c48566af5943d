import {
  type AlertEventSource,
  type AlertMessage,
  alertIncident,
  INCIDENT_MESSAGE_TYPES,
  sampleIncident,
} from "../../../src/domain/alertMessage.ts"
import type { ChannelMessage, FormatContext } from "../../../src/domain/channels/kinds.ts"
import { eventSummary, quoteAttackerText } from "../../../src/domain/eventSummary.ts"
import { incidentTexts } from "../../../src/domain/narrative.ts"
import type { SensorWebhookBody } from "../../../src/domain/sensorHealthPayload.ts"

/** Chat-formatter fixtures: messages built by the service's own builders, with attacker text where it can be. */

export const APP_URL = "https://decoys.example.com"

export const CTX: FormatContext = {
  appUrl: APP_URL,
  product: { name: "Decoys", vendor: "Example", version: "1.0.0", id: "decoys" },
  hostname: "decoys-1",
}

const T0 = new Date("2026-11-26T12:00:00.000Z")

export interface Attack {
  /** Usernames the attacker tried (quoted in title/narrative/summaries as the service does). */
  readonly usernames?: ReadonlyArray<string>
  /** Commands (quoted in summaries, whole, not cut to 64, to reach 256-character values). */
  readonly details?: ReadonlyArray<string>
  readonly sensorName?: string
  readonly profile?: string
  /** Service text that carries attacker text unquoted: a bug elsewhere; the formatter must stay inert anyway. */
  readonly rawTitle?: string
  readonly events?: number
}

export const incidentMessage = (type: AlertMessage["type"], attack: Attack = {}): AlertMessage => {
  const usernames = attack.usernames ?? ["root"]
  const details = attack.details ?? ["uname -a"]
  const sensorName = attack.sensorName ?? "web-01"
  const count = attack.events ?? 3
  const events: Array<AlertEventSource> = Array.from({ length: count }, (_, k) => {
    const username = usernames[k % usernames.length] ?? "root"
    const detail = details[k % details.length] ?? ""
    const base = eventSummary("SSH shell command", "command", {
      sourceIp: "203.0.113.7",
      port: 22,
      service: "ssh",
      username,
    })
    return {
      id: `evt_${String(k).padStart(26, "0")}`,
      time: new Date(T0.getTime() + k * 1000),
      type: "ssh.command",
      action: "command",
      service: "ssh",
      port: 22,
      sourcePort: 50000 + k,
      severity: "high",
      confidence: "normal",
      tags: [],
      // quoteAttackerText cuts to 64; the whole detail is quoted too, as a longer template might.
      summary: `${base}, command ${JSON.stringify(detail)} (${quoteAttackerText(detail)})`,
      attackerInput: { username, command: detail },
    }
  })
  const texts = incidentTexts({
    eventTypes: ["ssh.command", "ssh.login_attempt"],
    typeCounts: { "ssh.command": count, "ssh.login_attempt": 1 },
    sensorName,
    sourceIp: "203.0.113.7",
    eventCount: count,
    usernames,
  })
  const incident = alertIncident(
    {
      id: "inc_01ARZ3NDEKTSV4RRFFQ69G5FAV",
      title: attack.rawTitle ?? texts.title,
      severity: "critical",
      narrative: texts.narrative,
      recommendedAction: texts.recommendedAction,
      sensorId: "sen_01ARZ3NDEKTSV4RRFFQ69G5FAV",
      sensorName,
      sourceIp: "203.0.113.7",
      eventCount: count,
      firstSeenAt: T0,
      lastSeenAt: new Date(T0.getTime() + count * 1000),
      eventTypes: ["ssh.command", "ssh.login_attempt"],
      tags: [],
    },
    attack.profile ?? "linux-server",
    events,
    APP_URL,
  )
  return { id: "del_1", type, createdAt: T0, incident }
}

export const sensorMessage = (
  type: SensorWebhookBody["type"],
  name = "web-01",
  profile = "linux-server",
  lastSeenAt: Date | null = T0,
): SensorWebhookBody => ({
  id: "del_2",
  type,
  createdAt: T0,
  sensor: { id: "sen_01ARZ3NDEKTSV4RRFFQ69G5FAV", name, profile, lastSeenAt },
})

/** One message of every type a channel may be given, the test message with the service's own sample incident. */
export const everyMessage = (): ReadonlyArray<ChannelMessage> => [
  ...INCIDENT_MESSAGE_TYPES.filter((t) => t !== "webhook.test").map((t) => incidentMessage(t)),
  { id: "del_t", type: "webhook.test", createdAt: T0, incident: sampleIncident(T0, APP_URL) },
  sensorMessage("sensor.silent"),
  sensorMessage("sensor.silent", "edge-2", "windows-server", null),
  sensorMessage("sensor.recovered"),
]

const long = (seed: string, n: number): string => seed.repeat(Math.ceil(n / seed.length)).slice(0, n)

/** A long title and 20 events with 256-character attacker strings. */
export const hugeMessage = (): AlertMessage =>
  incidentMessage("incident.escalated", {
    usernames: Array.from({ length: 20 }, (_, k) => long(`user${k}&<>\``, 256)),
    details: Array.from({ length: 20 }, (_, k) => long(`cat /etc/passwd #${k} <&> `, 256)),
    sensorName: long("sensor-with-a-long-name-", 256),
    profile: long("profile-", 64),
    events: 20,
  })

/** Attacker strings that would notify, link, format or hide text if a formatter let them through. */
export const HOSTILE: ReadonlyArray<string> = [
  "<!channel>",
  "<!here>",
  "<!everyone>",
  "<@U123ABC>",
  "<#C123|general>",
  "@here",
  "@channel",
  "@everyone",
  "<http://evil.example|click me>",
  "[click](http://evil.example)",
  "http://evil.example/x?y=1",
  "https://evil.example",
  "evil.example",
  "www.evil.example",
  "mailto:root@evil.example",
  "*bold*",
  "_italic_",
  "~strike~",
  "`code`",
  "```block```",
  "> quote",
  "- item",
  "1. item",
  "# heading",
  "**bold**",
  "<!date^1392734382^{date}|x>",
  "{{DATE(2017-02-14T06:08:39Z, SHORT)}}",
  "<at>Everyone</at>",
  "&amp; &lt; &",
  "line1\nline2\r\n\tx",
  "\u0000\u0007\u001b[31mred\u007f\u0085",
  "abc\u202Eevil.exe\u202Ctxt",
  "zero\u200Bwidth\u200C\u200D\u2060\uFEFF",
  "lone\uD800surrogate",
  "   leading and trailing   ",
  "",
  'quote " inside \\ backslash',
]

/** A message carrying `s` everywhere attacker text can be. */
export const hostileMessage = (s: string): AlertMessage =>
  incidentMessage("incident.created", { usernames: [s, "root"], details: [s], sensorName: s, profile: s })

/** Fragments that must never appear outside code (Slack) or outside monospace runs (Teams). */
export const HOSTILE_FRAGMENTS: ReadonlyArray<RegExp> = [
  /evil/i,
  /@(channel|here|everyone)\b/i,
  /<[!@#]/,
  /\*bold\*|_italic_|~strike~/,
  /click/,
  /\{\{/,
]
