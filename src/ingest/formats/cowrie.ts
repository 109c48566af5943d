/**
 * D22: maps Cowrie JSON log lines (`POST /ingest/v1/cowrie`, Cowrie's `output_jsonlog`) to native event inputs.
 * Pure, never throws.
 *
 * Every Cowrie line has `eventid`, `message`, `sensor`, `timestamp` (ISO 8601 UTC, microseconds), `src_ip` and
 * `session`; `cowrie.session.connect` adds `src_port`, `dst_ip`, `dst_port` and `protocol` ("ssh" or "telnet"), login
 * events add `username`/`password`, command events `input`, and `cowrie.session.file_download` adds `url`, `shasum`
 * and `outfile`.
 *
 * Only the connect line names the protocol and the ports, so a later line of the session takes them from its
 * session's connect (`CowrieSession`): the caller passes what it knows (`mapCowrieBatch` finds the connect lines of
 * one request; the ingest route also remembers them across requests). A line's own `protocol`, `src_port` and
 * `dst_port`, when present, win. A line whose session is unknown maps as before: protocol ssh (so an ssh.* type),
 * source port 0 and the type's default port (22).
 *
 * `sensorEventId` is `cw:k1:` + the HMAC-SHA256 of the line's canonical JSON under the organization's line-id key
 * (`lineId` in native.ts): a line sent again is a duplicate, and the id is no oracle for the password in the line
 * (D19). (`cowrie:<session>:` + an unkeyed SHA-256 was the form before.)
 */
import { eventTypeSpec } from "../../domain/eventTypes.ts"
import type { MapResult } from "./native.ts"
import {
  describe,
  isDefaultCredential,
  isRecord,
  lineId,
  mappedLogEvent,
  neverThrowing,
  normalizeIp,
  parseLogTime,
  parsePort,
  putScalar,
  rejected,
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

/** The eventid of a session's first line, the only one with the protocol and the ports. */
const COWRIE_CONNECT = "cowrie.session.connect"

/** The prefix of a Cowrie line's `sensorEventId`. */
const COWRIE_ID_PREFIX = "cw:k1:"

/** What a session's connect line told: its protocol and ports (as mapped: unknown ports already defaulted). */
export interface CowrieSession {
  readonly protocol: "ssh" | "telnet"
  readonly sourcePort: number
  readonly port: number
}

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

/** The line's session id when it is a well-formed one, else undefined. Never throws. */
const cowrieSessionOf = (line: unknown): string | undefined => {
  try {
    const session = isRecord(line) ? line.session : undefined
    return typeof session === "string" && SESSION_PATTERN.test(session) ? session : undefined
  } catch {
    return undefined
  }
}

const isConnectLine = (line: unknown): boolean => {
  try {
    return isRecord(line) && line.eventid === COWRIE_CONNECT
  } catch {
    return false
  }
}

const protocolOf = (v: unknown): "ssh" | "telnet" | undefined => (v === "ssh" || v === "telnet" ? v : undefined)

const mapLine = (line: unknown, lineIdKey: Uint8Array, session?: CowrieSession): MapResult => {
  if (!isRecord(line)) return rejected(`a Cowrie log line must be a JSON object, got ${describe(line)}`)

  const eventid = line.eventid
  if (typeof eventid !== "string") return rejected(`missing or invalid eventid: ${describe(eventid)}`)
  const action = COWRIE_EVENTIDS.get(eventid)
  if (action === undefined) return rejected(`unsupported cowrie eventid ${describe(eventid)}`)
  // A connect line is the session's own record: it never takes another's values.
  const known = eventid === COWRIE_CONNECT ? undefined : session
  const service = protocolOf(line.protocol) ?? known?.protocol ?? "ssh"
  const spec = eventTypeSpec(`${service}.${action}`)
  if (spec === undefined) return rejected(`cowrie eventid ${eventid} maps to unknown event type ${service}.${action}`)

  const sessionId = line.session
  if (typeof sessionId !== "string" || !SESSION_PATTERN.test(sessionId)) {
    return rejected(`missing or invalid session: ${describe(sessionId)}`)
  }
  const sourceIp = normalizeIp(line.src_ip)
  if (sourceIp === undefined) return rejected(`missing or invalid src_ip: ${describe(line.src_ip)}`)
  const time = readTime(line)
  if (time === undefined) return rejected(`missing or invalid timestamp: ${describe(line.timestamp ?? line.time)}`)
  const ownSourcePort = parsePort(line.src_port)
  if (ownSourcePort === "invalid") return rejected(`invalid src_port: ${describe(line.src_port)}`)
  const ownDstPort = parsePort(line.dst_port)
  if (ownDstPort === "invalid") return rejected(`invalid dst_port: ${describe(line.dst_port)}`)
  const sourcePort = ownSourcePort === "unknown" && known !== undefined ? known.sourcePort : ownSourcePort
  const dstPort = ownDstPort === "unknown" && known !== undefined ? known.port : ownDstPort

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
    sensorEventId: lineId(COWRIE_ID_PREFIX, lineIdKey, line),
    time,
    sourceIp,
    sourcePort,
    dstPort,
    spec,
    tags,
    attackerInput,
  })
}

/**
 * Maps one Cowrie log line (already JSON-parsed); `lineIdKey` is the organization's (`lineIdKey` in native.ts) and
 * `session` what is known of the line's session (ignored by a connect line, which carries its own). Never throws:
 * anything unusable is Rejected with a reason.
 */
export const mapCowrie = neverThrowing("Cowrie", mapLine)

/**
 * The sessions whose protocol and ports must come from elsewhere (the remembered connects, CowrieSessionsRepo): the
 * sessions of this request's non-connect lines that have no connect line in the request. Each once, in first-seen
 * order. Never throws.
 */
export const cowrieSessionsToLookUp = (lines: ReadonlyArray<unknown>): ReadonlyArray<string> => {
  const connected = new Set<string>()
  const wanted = new Set<string>()
  for (const line of lines) {
    const session = cowrieSessionOf(line)
    if (session === undefined) continue
    if (isConnectLine(line)) connected.add(session)
    else wanted.add(session)
  }
  return [...wanted].filter((session) => !connected.has(session))
}

export interface CowrieBatch {
  /** One result per line, in the lines' order. */
  readonly results: ReadonlyArray<MapResult>
  /** The sessions whose connect line is in this batch (and mapped), to remember for later requests. */
  readonly connects: ReadonlyMap<string, CowrieSession>
}

/**
 * Maps one request's Cowrie lines. A line takes its session's protocol and ports from the session's connect line
 * in the same request (the first one that maps, wherever it stands in the request: a session has one connect, and a
 * shipper may reorder lines within a batch), else from `remembered` (connects of earlier requests), else the
 * defaults (ssh, source port 0, the type's default port). Pure, never throws.
 */
export const mapCowrieBatch = (
  lines: ReadonlyArray<unknown>,
  lineIdKey: Uint8Array,
  remembered: ReadonlyMap<string, CowrieSession>,
): CowrieBatch => {
  const results: Array<MapResult | undefined> = lines.map(() => undefined)
  const connects = new Map<string, CowrieSession>()
  for (const [index, line] of lines.entries()) {
    if (!isConnectLine(line)) continue
    const result = mapCowrie(line, lineIdKey)
    results[index] = result
    const session = cowrieSessionOf(line)
    if (result._tag !== "Mapped" || session === undefined || connects.has(session)) continue
    const protocol = protocolOf(result.event.service)
    if (protocol === undefined) continue
    connects.set(session, { protocol, sourcePort: result.event.sourcePort, port: result.event.port })
  }
  return {
    results: lines.map((line, index) => {
      const done = results[index]
      if (done !== undefined) return done
      const session = cowrieSessionOf(line)
      const known = session === undefined ? undefined : (connects.get(session) ?? remembered.get(session))
      return mapCowrie(line, lineIdKey, known)
    }),
    connects,
  }
}
