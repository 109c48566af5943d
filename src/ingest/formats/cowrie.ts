/**
 * D22: maps one Cowrie JSON log line (`POST /ingest/v1/cowrie`, Cowrie's `output_jsonlog`) to a native event input.
 * Pure, never throws.
 *
 * Every Cowrie line has `eventid`, `message`, `sensor`, `timestamp` (ISO 8601 UTC, microseconds), `src_ip` and
 * `session`; `cowrie.session.connect` adds `src_port`, `dst_ip`, `dst_port` and `protocol` ("ssh" or "telnet"), login
 * events add `username`/`password`, command events `input`, and `cowrie.session.file_download` adds `url`, `shasum`
 * and `outfile`. Only the connect line names the protocol, so the other lines map to SSH types unless they carry
 * `protocol: "telnet"` themselves.
 *
 * `sensorEventId` is `cowrie:` + session + `:` + the SHA-256 of the line's canonical JSON: a line sent again is a
 * duplicate.
 */
import { eventTypeSpec } from "../../domain/eventTypes.ts"
import type { MapResult } from "./native.ts"
import {
  canonicalJson,
  describe,
  isDefaultCredential,
  isRecord,
  mappedLogEvent,
  neverThrowing,
  normalizeIp,
  parseLogTime,
  parsePort,
  putScalar,
  rejected,
  sha256Hex,
} from "./native.ts"

/** The Cowrie eventids this service understands, and the action part of their event type. */
export const COWRIE_EVENTIDS: ReadonlyMap<string, string> = new Map([
  ["cowrie.session.connect", "session"],
  ["cowrie.login.failed", "login_attempt"],
  ["cowrie.login.success", "login_success"],
  ["cowrie.command.input", "command"],
  ["cowrie.command.failed", "command"],
  ["cowrie.session.file_download", "file_download"],
])

const SESSION_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** Only this much of a command is inspected for payload tags. */
const INSPECT_MAX = 8192

const DOWNLOADER = /\b(?:wget|curl|tftp|ftpget|lwp-download)\b/i
const REMOTE_SOURCE = /\b(?:https?|ftp|tftp):\/\/|\b\d{1,3}(?:\.\d{1,3}){3}\b/i
const SYSTEM_DISCOVERY =
  /\b(?:uname|whoami|lscpu|nproc)\b|\/proc\/(?:cpuinfo|meminfo|version)\b|\/etc\/(?:issue|os-release)\b|(?:^|[;&|]\s*)id(?:\s|;|$)/i

/**
 * Payload tags of a shell command: `malware-download` when it fetches something from a URL or an address (wget,
 * curl, tftp, ...), `system-discovery` when it asks about the system or the user (uname, whoami, /proc/cpuinfo, id).
 */
export const commandTags = (command: string): ReadonlyArray<string> => {
  const text = command.slice(0, INSPECT_MAX)
  const tags: Array<string> = []
  if (DOWNLOADER.test(text) && REMOTE_SOURCE.test(text)) tags.push("malware-download")
  if (SYSTEM_DISCOVERY.test(text)) tags.push("system-discovery")
  return tags
}

const readTime = (line: Record<string, unknown>): string | undefined => {
  const fromTimestamp = parseLogTime(line.timestamp)
  if (fromTimestamp !== undefined || line.timestamp !== undefined) return fromTimestamp
  // Without `timestamp`, fall back to Cowrie's epoch-seconds `time`.
  const t = line.time
  if (typeof t !== "number" || !Number.isFinite(t) || t <= 0 || t > 253402300799) return undefined
  return new Date(Math.floor(t * 1000)).toISOString()
}

const mapLine = (line: unknown): MapResult => {
  if (!isRecord(line)) return rejected(`a Cowrie log line must be a JSON object, got ${describe(line)}`)

  const eventid = line.eventid
  if (typeof eventid !== "string") return rejected(`missing or invalid eventid: ${describe(eventid)}`)
  const action = COWRIE_EVENTIDS.get(eventid)
  if (action === undefined) return rejected(`unsupported cowrie eventid ${describe(eventid)}`)
  const service = line.protocol === "telnet" ? "telnet" : "ssh"
  const spec = eventTypeSpec(`${service}.${action}`)
  if (spec === undefined) return rejected(`cowrie eventid ${eventid} maps to unknown event type ${service}.${action}`)

  const session = line.session
  if (typeof session !== "string" || !SESSION_PATTERN.test(session)) {
    return rejected(`missing or invalid session: ${describe(session)}`)
  }
  const sourceIp = normalizeIp(line.src_ip)
  if (sourceIp === undefined) return rejected(`missing or invalid src_ip: ${describe(line.src_ip)}`)
  const time = readTime(line)
  if (time === undefined) return rejected(`missing or invalid timestamp: ${describe(line.timestamp ?? line.time)}`)
  const sourcePort = parsePort(line.src_port)
  if (sourcePort === "invalid") return rejected(`invalid src_port: ${describe(line.src_port)}`)
  const dstPort = parsePort(line.dst_port)
  if (dstPort === "invalid") return rejected(`invalid dst_port: ${describe(line.dst_port)}`)

  const attackerInput: Record<string, unknown> = {}
  const tags: Array<string> = []
  switch (action) {
    case "login_attempt":
    case "login_success": {
      putScalar(attackerInput, "username", line.username)
      putScalar(attackerInput, "password", line.password)
      const username = typeof line.username === "string" ? line.username : undefined
      const password = typeof line.password === "string" ? line.password : undefined
      if (isDefaultCredential(username, password)) tags.push("default-credentials")
      break
    }
    case "command": {
      putScalar(attackerInput, "command", line.input)
      if (typeof line.input === "string") tags.push(...commandTags(line.input))
      break
    }
    case "file_download": {
      putScalar(attackerInput, "url", line.url)
      putScalar(attackerInput, "shasum", line.shasum)
      tags.push("malware-download")
      break
    }
  }

  return mappedLogEvent({
    sensorEventId: `cowrie:${session}:${sha256Hex(canonicalJson(line))}`,
    time,
    sourceIp,
    sourcePort,
    dstPort,
    spec,
    tags,
    attackerInput,
  })
}

/** Maps one Cowrie log line (already JSON-parsed). Never throws: anything unusable is Rejected with a reason. */
export const mapCowrie = neverThrowing("Cowrie", mapLine)
