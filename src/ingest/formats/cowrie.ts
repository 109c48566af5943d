/**
 * Maps Cowrie JSON log lines (`POST /ingest/v1/cowrie`, Cowrie's `output_jsonlog`) to native event inputs.
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
 * (`lineId` in native.ts): a line sent again is a duplicate, and the id is no oracle for the password in the line.
 * (`cowrie:<session>:` + an unkeyed SHA-256 was the form before.)
 */
import {
  ATTACKER_INPUT_MAX_BYTES,
  ATTACKER_INPUT_MAX_KEYS,
  ATTACKER_INPUT_MAX_MASKED,
  cutMark,
} from "../../domain/attackerInput.ts"
import { eventTypeSpec } from "../../domain/eventTypes.ts"
import { isRecord } from "../../domain/json.ts"
import { jsonBytes, truncateCodePoints } from "../../domain/sanitize.ts"
import type { MapResult } from "./native.ts"
import {
  type CowrieSession,
  describe,
  ignored,
  isDefaultCredential,
  lineId,
  mappedLogEvent,
  neverThrowing,
  normalizeIp,
  parseLogTime,
  parsePort,
  putScalar,
  rejected,
} from "./native.ts"

/**
 * What each Cowrie eventid becomes, so every line has a right outcome. Every eventid that Cowrie's sources emit
 * (src/cowrie/core/eventids.py, the catalogue Cowrie checks its emitters against) is listed: `accepted` as an event of
 * the action's type (ssh.* or telnet.* by the session's protocol), `merged` into the session's events when it only
 * describes the attacker's client (its members are listed), or `ignored` with the reason when it records no attacker
 * action. An eventid missing here (a later Cowrie version's) is accepted as `<protocol>.activity`, a generic event
 * without techniques: a line of an attacker's session is kept rather than dropped, and nothing is claimed about it.
 */
export type CowrieOutcome =
  | { readonly outcome: "accepted"; readonly action: string }
  | { readonly outcome: "merged"; readonly what: string }
  | { readonly outcome: "ignored"; readonly reason: string }

const accepted = (action: string): CowrieOutcome => ({ outcome: "accepted", action })
const merged = (what: string): CowrieOutcome => ({ outcome: "merged", what })
const ignoredBecause = (reason: string): CowrieOutcome => ({ outcome: "ignored", reason })

const ENRICHMENT = "an output plugin's own lookup or report, not something the attacker did"

export const COWRIE_EVENTIDS: ReadonlyMap<string, CowrieOutcome> = new Map([
  ["cowrie.session.connect", accepted("session")],
  ["cowrie.login.failed", accepted("login_attempt")], // pubkey_attempt when it carries a key and no password
  ["cowrie.login.success", accepted("login_success")],
  ["cowrie.command.input", accepted("command")],
  // Cowrie logs the whole line as cowrie.command.input, then each command of it that it does not know again: the
  // same activity, not another command (`id; foobarcmd` is one line typed, not two).
  ["cowrie.command.failed", merged("a command of the line cowrie.command.input recorded, unknown to Cowrie")],
  ["cowrie.command.success", accepted("command")], // a line typed into a running command (passwd: a new password)
  ["cowrie.command.chpasswd", accepted("command")],
  ["cowrie.session.input", accepted("command")], // standard input typed into a command (cat, dd, tee, ...)
  ["cowrie.session.file_download", accepted("file_download")],
  ["cowrie.session.file_download.failed", accepted("file_download_failed")],
  ["cowrie.session.file_upload", accepted("file_upload")],
  ["cowrie.direct-tcpip.request", accepted("port_forward")],
  ["cowrie.direct-tcpip.redirect", accepted("port_forward")],
  ["cowrie.direct-tcpip.tunnel", accepted("port_forward")],
  ["cowrie.direct-tcpip.data", accepted("port_forward")],
  ["cowrie.tunnelproxy-tcpip.data", accepted("port_forward")],
  ["cowrie.telnet.exploit_attempt", accepted("exploit_attempt")],
  ["cowrie.telnet.exploit_success", accepted("exploit_success")], // the exploit gave a root shell
  ["cowrie.client.version", merged("SSH client version")],
  ["cowrie.client.kex", merged("SSH key exchange (HASSH)")],
  ["cowrie.client.size", merged("terminal size")],
  ["cowrie.client.var", merged("environment variable")],
  ["cowrie.client.fingerprint", merged("public key offered by the client")],
  ["cowrie.direct-tcpip.ja4", merged("JA4 TLS client fingerprint")],
  ["cowrie.direct-tcpip.ja4h", merged("JA4H HTTP client fingerprint")],
  ["cowrie.session.closed", merged("session duration")],
  ["cowrie.client.malformed_packet", ignoredBecause("a malformed SSH packet: the connection is already recorded")],
  ["cowrie.session.params", ignoredBecause("the emulated system's architecture, not something the attacker sent")],
  ["cowrie.log.open", ignoredBecause("the honeypot opened its TTY recording")],
  ["cowrie.log.closed", ignoredBecause("the honeypot closed its TTY recording")],
  ["cowrie.telnet.option", ignoredBecause("telnet option negotiation")],
  ["cowrie.telnet.error", ignoredBecause("a telnet protocol error of the honeypot")],
  ["cowrie.proxy.backend_connect_error", ignoredBecause("proxy backend plumbing")],
  ["cowrie.proxy.backend_connected", ignoredBecause("proxy backend plumbing")],
  ["cowrie.proxy.backend_disconnected", ignoredBecause("proxy backend plumbing")],
  ["cowrie.proxy.client_disconnect", ignoredBecause("proxy backend plumbing")],
  ["cowrie.proxy.ssh", ignoredBecause("proxy backend plumbing")],
  ["cowrie.backend_pool.libvirtd", ignoredBecause("backend pool plumbing")],
  ["cowrie.abuseipdb.ratelimited", ignoredBecause(ENRICHMENT)],
  ["cowrie.abuseipdb.reportedip", ignoredBecause(ENRICHMENT)],
  ["cowrie.abuseipdb.reportfail", ignoredBecause(ENRICHMENT)],
  ["cowrie.abuseipdb.started", ignoredBecause(ENRICHMENT)],
  ["cowrie.abuseipdb.wakeup", ignoredBecause(ENRICHMENT)],
  ["cowrie.greynoise.result", ignoredBecause(ENRICHMENT)],
  ["cowrie.reversedns.connect", ignoredBecause(ENRICHMENT)],
  ["cowrie.reversedns.forward", ignoredBecause(ENRICHMENT)],
  ["cowrie.urlhaus.submitted", ignoredBecause(ENRICHMENT)],
  ["cowrie.virustotal.scanfile", ignoredBecause(ENRICHMENT)],
  ["cowrie.virustotal.scanurl", ignoredBecause(ENRICHMENT)],
])

/** The action of a line whose eventid this version does not know. */
export const COWRIE_UNKNOWN_ACTION = "activity"

/**
 * The attackerInput members that merged lines give the session's events, in the order they are kept when the
 * size bounds leave no room for all (short ones first, the environment last). Own members of an event never use
 * these names, so the session's members can be added to a stored event at any time without hiding its own, and taken
 * off again when they change. `clientCut` says how much of the session's client details was left out.
 */
export const COWRIE_CLIENT_MEMBERS: ReadonlyArray<string> = [
  "clientVersion",
  "hassh",
  "clientKeyFingerprint",
  "clientKeyType",
  "terminalSize",
  "ja4",
  "ja4h",
  "sessionDurationSeconds",
  "hasshAlgorithms",
  "env",
  "clientCut",
]

/** At most this many environment variables of a session are kept (the earliest by time). */
export const COWRIE_MAX_ENV = 32

/** Each client string (a value or a variable's name) is cut to this many code points (the cut ends with "…"). */
export const COWRIE_CLIENT_STRING_MAX = 256

/**
 * The client members of a session take at most this many bytes (compact JSON, UTF-8) in an event's attackerInput:
 * they never push the attacker's own input (commands, credentials) out of the event's bound (ATTACKER_INPUT_MAX_BYTES).
 */
export const COWRIE_CLIENT_MAX_BYTES = 2048

/** The eventid of a session's first line, the only one with the protocol and the ports. */
const COWRIE_CONNECT = "cowrie.session.connect"

/** The prefix of a Cowrie line's `sensorEventId`. */
const COWRIE_ID_PREFIX = "cw:k1:"

export type { CowrieSession } from "./native.ts"

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

/** A Cowrie session's protocol, when the value is one. */
export const protocolOf = (v: unknown): "ssh" | "telnet" | undefined => (v === "ssh" || v === "telnet" ? v : undefined)

/** What Cowrie's `escape_nonprintable` writes: printable ASCII, `\\` for a backslash, `\xNN` for any other byte. */
const ESCAPED_FORM = /^(?:[\x20-\x5b\x5d-\x7e]|\\\\|\\x[0-9a-fA-F]{2})*$/
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * Cowrie writes usernames, passwords and client versions (and the proxy's variables) through
 * `escape_nonprintable` (src/cowrie/core/utils.py): every byte outside printable ASCII becomes `\xNN`, a backslash
 * `\\`. When the whole string has that form and its bytes are UTF-8, the characters they encode are returned
 * (`r\xc3\xa9mi` → `rémi`); otherwise the string is returned unchanged (bytes that are not UTF-8 stay escaped). A
 * field Cowrie does not escape, such as a typed command, is never passed here: its `\x41` is what was typed.
 */
export const unescapeCowrie = (s: string): string => {
  if (!s.includes("\\") || s.length > 65536 || !ESCAPED_FORM.test(s)) return s
  const bytes: Array<number> = []
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c !== 0x5c) {
      bytes.push(c)
    } else if (s[i + 1] === "\\") {
      bytes.push(0x5c)
      i += 1
    } else {
      bytes.push(Number.parseInt(s.slice(i + 2, i + 4), 16))
      i += 3
    }
  }
  try {
    return strictUtf8.decode(new Uint8Array(bytes))
  } catch {
    return s
  }
}

const escapedField = (v: unknown): unknown => (typeof v === "string" ? unescapeCowrie(v) : v)

const finiteNumber = (v: unknown): number | undefined => {
  const n = typeof v === "string" && /^\d{1,12}(?:\.\d{1,9})?$/.test(v) ? Number(v) : v
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined
}

/** The members a merged line gives its session's events (COWRIE_CLIENT_MEMBERS), from the line. */
const clientDetails = (eventid: string, line: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  switch (eventid) {
    case "cowrie.client.version":
      putScalar(out, "clientVersion", escapedField(line.version))
      break
    case "cowrie.client.kex":
      putScalar(out, "hassh", line.hassh)
      putScalar(out, "hasshAlgorithms", line.hasshAlgorithms)
      break
    case "cowrie.client.size": {
      const width = finiteNumber(line.width)
      const height = finiteNumber(line.height)
      if (width !== undefined && height !== undefined) out.terminalSize = `${width}x${height}`
      break
    }
    case "cowrie.client.var": {
      const name = escapedField(line.name)
      if (typeof name === "string" && name.length > 0 && name.length <= 256) {
        const env: Record<string, unknown> = {}
        putScalar(env, name, escapedField(line.value))
        if (Object.keys(env).length > 0) out.env = env
      }
      break
    }
    case "cowrie.client.fingerprint":
      putScalar(out, "clientKeyFingerprint", line.fingerprint)
      putScalar(out, "clientKeyType", line.type)
      break
    case "cowrie.direct-tcpip.ja4":
      putScalar(out, "ja4", line.ja4)
      break
    case "cowrie.direct-tcpip.ja4h":
      putScalar(out, "ja4h", line.ja4h)
      break
    case "cowrie.session.closed": {
      // Cowrie writes duration_ms (milliseconds) today, duration (seconds) before.
      const ms = finiteNumber(line.duration_ms)
      const seconds = ms !== undefined ? ms / 1000 : finiteNumber(line.duration)
      if (seconds !== undefined) out.sessionDurationSeconds = Math.round(seconds * 1000) / 1000
      break
    }
  }
  return out
}

/** The event's own attackerInput members and tags for an accepted line; the action may be refined (pubkey). */
const ownMembers = (
  eventid: string,
  action: string,
  line: Record<string, unknown>,
): { action: string; attackerInput: Record<string, unknown>; tags: Array<string> } => {
  const attackerInput: Record<string, unknown> = {}
  const tags: Array<string> = []
  switch (action) {
    case "login_attempt":
    case "login_success": {
      const username = escapedField(line.username)
      const password = escapedField(line.password)
      putScalar(attackerInput, "username", username)
      putScalar(attackerInput, "password", password)
      putScalar(attackerInput, "keyFingerprint", line.fingerprint)
      putScalar(attackerInput, "keyType", line.type)
      // A public-key attempt carries the key and no password.
      const pubkey = line.password === undefined && (line.fingerprint !== undefined || line.key !== undefined)
      // Techniques say what happened: default credentials are a technique only when they let the attacker in.
      const user = typeof username === "string" ? username : undefined
      const pass = typeof password === "string" ? password : undefined
      if (action === "login_success" && isDefaultCredential(user, pass)) tags.push("default-credentials")
      return { action: pubkey && action === "login_attempt" ? "pubkey_attempt" : action, attackerInput, tags }
    }
    case "command": {
      if (eventid === "cowrie.command.chpasswd") {
        putScalar(attackerInput, "targetUser", line.username)
      } else if (eventid === "cowrie.command.success" && line.realm === "passwd") {
        putScalar(attackerInput, "password", line.input) // a new password typed into passwd
      } else if (eventid === "cowrie.session.input" || eventid === "cowrie.command.success") {
        putScalar(attackerInput, "input", line.input)
        putScalar(attackerInput, "realm", line.realm)
      } else {
        putScalar(attackerInput, "command", line.input)
        if (typeof line.input === "string") tags.push(...commandTags(line.input))
      }
      break
    }
    case "file_download":
      putScalar(attackerInput, "url", line.url)
      putScalar(attackerInput, "shasum", line.shasum)
      tags.push("malware-download")
      break
    case "file_download_failed":
      putScalar(attackerInput, "url", line.url)
      break
    case "file_upload":
      putScalar(attackerInput, "fileName", line.filename)
      putScalar(attackerInput, "path", line.destfile)
      putScalar(attackerInput, "shasum", line.shasum)
      break
    case "port_forward":
      // direct-tcpip lines put the forward's target in dst_ip/dst_port (not the decoy's address).
      putScalar(attackerInput, "targetHost", line.dst_ip)
      putScalar(attackerInput, "targetPort", line.dst_port)
      putScalar(attackerInput, "originHost", line.orig_ip)
      putScalar(attackerInput, "originPort", line.orig_port)
      putScalar(attackerInput, "redirectHost", line.new_ip)
      putScalar(attackerInput, "redirectPort", line.new_port)
      putScalar(attackerInput, "data", line.data)
      break
    case "exploit_attempt":
    case "exploit_success":
      putScalar(attackerInput, "cve", line.cve)
      putScalar(attackerInput, "username", line.username)
      putScalar(attackerInput, "variable", line.name)
      putScalar(attackerInput, "value", line.value)
      // exploit_success: the login name typed before the exploit took over, and the text sent as the password
      putScalar(attackerInput, "originalUsername", line.original_username)
      putScalar(attackerInput, "attemptedCommand", line.attempted_command)
      break
    case COWRIE_UNKNOWN_ACTION:
      putScalar(attackerInput, "eventid", line.eventid)
      putScalar(attackerInput, "message", line.message)
      break
  }
  return { action, attackerInput, tags }
}

const mapLine = (line: unknown, lineIdKey: Uint8Array, session?: CowrieSession): MapResult => {
  if (!isRecord(line)) return rejected(`a Cowrie log line must be a JSON object, got ${describe(line)}`)

  const eventid = line.eventid
  if (typeof eventid !== "string" || !/^[\x21-\x7e]{1,128}$/.test(eventid)) {
    return rejected(`missing or invalid eventid: ${describe(eventid)}`)
  }
  const outcome = COWRIE_EVENTIDS.get(eventid) ?? accepted(COWRIE_UNKNOWN_ACTION)
  if (outcome.outcome === "ignored") return ignored(`${eventid}: ${outcome.reason}; nothing stored`)

  const sessionId = line.session
  if (typeof sessionId !== "string" || !SESSION_PATTERN.test(sessionId)) {
    return rejected(`missing or invalid session: ${describe(sessionId)}`)
  }
  const sourceIp = normalizeIp(line.src_ip)
  if (sourceIp === undefined) return rejected(`missing or invalid src_ip: ${describe(line.src_ip)}`)
  const time = readTime(line)
  if (time === undefined) return rejected(`missing or invalid timestamp: ${describe(line.timestamp ?? line.time)}`)
  const id = lineId(COWRIE_ID_PREFIX, lineIdKey, line)

  if (outcome.outcome === "merged") {
    return {
      _tag: "Merged",
      reason: `${eventid}: ${outcome.what}, added to the attackerInput of this session's events`,
      merge: { session: sessionId, sourceIp, time, lineId: id, details: clientDetails(eventid, line) },
    }
  }

  // A connect line is the session's own record: it never takes another's values.
  const isConnect = eventid === COWRIE_CONNECT
  const known = isConnect ? undefined : session
  const ownProtocol = protocolOf(line.protocol)
  const protocol = ownProtocol ?? known?.protocol ?? "ssh"
  const own = ownMembers(eventid, outcome.action, line)
  const spec =
    eventTypeSpec(`${protocol}.${own.action}`) ??
    eventTypeSpec(`ssh.${own.action}`) ??
    eventTypeSpec(`${protocol}.${COWRIE_UNKNOWN_ACTION}`)
  if (spec === undefined) return rejected(`cowrie eventid ${eventid} maps to no event type`)

  const ownSourcePort = parsePort(line.src_port)
  if (ownSourcePort === "invalid") return rejected(`invalid src_port: ${describe(line.src_port)}`)
  // direct-tcpip lines name the forward's target in dst_port: the decoy's port comes from the session.
  const ownDstPort = own.action === "port_forward" ? "unknown" : parsePort(line.dst_port)
  if (ownDstPort === "invalid") return rejected(`invalid dst_port: ${describe(line.dst_port)}`)
  const sourcePort = ownSourcePort === "unknown" && known !== undefined ? known.sourcePort : ownSourcePort
  const dstPort = ownDstPort === "unknown" && known !== undefined ? known.port : ownDstPort

  const result = mappedLogEvent({
    sensorEventId: id,
    time,
    sourceIp,
    sourcePort,
    dstPort,
    spec,
    tags: own.tags,
    attackerInput: own.attackerInput,
  })
  if (result._tag !== "Mapped") return result
  const teaches =
    isConnect || (ownProtocol !== undefined && ownSourcePort !== "unknown" && ownDstPort !== "unknown")
      ? { protocol, sourcePort: result.event.sourcePort, port: result.event.port }
      : undefined
  return {
    ...result,
    cowrie: {
      session: sessionId,
      action: own.action,
      ownProtocol: ownProtocol !== undefined || known !== undefined,
      ownSourcePort: ownSourcePort !== "unknown" || known !== undefined,
      ownPort: ownDstPort !== "unknown" || known !== undefined,
      teaches,
    },
  }
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

// ---------------------------------------------------------------------------------------------------------------
// A session's client members, kept per session (cowrie_sessions.client) and bounded on their own

/**
 * What is kept of a session's merged lines: for each member the earliest line's value, for the environment the
 * COWRIE_MAX_ENV variables first set (each with its earliest value). `at` orders lines: the line's time, then its id.
 * Values are already cleaned and masked (prepareAttackerInput) and cut to COWRIE_CLIENT_STRING_MAX code points, so
 * the state of a session is bounded however many lines it has; once full, a later line changes nothing. The earliest
 * lines win whatever order they arrived in: the same lines give the same state.
 */
export interface CowrieClientState {
  readonly members: ReadonlyArray<{ readonly name: string; readonly at: string; readonly value: unknown }>
  readonly env: ReadonlyArray<{ readonly name: string; readonly at: string; readonly value: unknown }>
}

export const EMPTY_CLIENT_STATE: CowrieClientState = { members: [], env: [] }

const isMaskedShape = (v: unknown): boolean =>
  isRecord(v) && typeof v.masked === "string" && typeof v.length === "number" && typeof v.fingerprint === "string"

/** A client value as kept: a string cut, a finite number or boolean, a masked secret; anything else is not kept. */
const clientValue = (v: unknown): unknown => {
  if (typeof v === "string") return truncateCodePoints(v, COWRIE_CLIENT_STRING_MAX)
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined
  if (typeof v === "boolean") return v
  if (isMaskedShape(v)) {
    const m = v as { masked: string; length: number; fingerprint: string }
    return { masked: m.masked.slice(0, 32), length: m.length, fingerprint: m.fingerprint.slice(0, 64) }
  }
  return undefined
}

const byAt = (a: { readonly at: string }, b: { readonly at: string }) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)

/** A stored state (any jsonb) read back; anything malformed is left out. Never throws. */
export const readClientState = (stored: unknown): CowrieClientState => {
  if (!isRecord(stored)) return EMPTY_CLIENT_STATE
  const list = (v: unknown, max: number) =>
    (Array.isArray(v) ? v : [])
      .flatMap((e: unknown) =>
        isRecord(e) && typeof e.name === "string" && typeof e.at === "string" && e.name !== ""
          ? [{ name: truncateCodePoints(e.name, COWRIE_CLIENT_STRING_MAX), at: e.at, value: clientValue(e.value) }]
          : [],
      )
      .filter((e) => e.value !== undefined)
      .slice(0, max)
  return {
    members: list(stored.members, COWRIE_CLIENT_MEMBERS.length).filter((m) => COWRIE_CLIENT_MEMBERS.includes(m.name)),
    env: list(stored.env, COWRIE_MAX_ENV),
  }
}

/**
 * The state with these merged lines' details added (`at`: the line's time and id; `details`: prepared members). The
 * earliest value of each member and each variable wins; past COWRIE_MAX_ENV variables, the one first set latest is
 * dropped. Pure; the input state is not changed.
 */
export const addClientDetails = (
  state: CowrieClientState,
  lines: ReadonlyArray<{ readonly at: string; readonly details: Record<string, unknown> }>,
): CowrieClientState => {
  const members = new Map(state.members.map((m) => [m.name, m]))
  const env = new Map(state.env.map((e) => [e.name, e]))
  for (const { at, details } of lines) {
    for (const [name, raw] of Object.entries(details)) {
      if (!COWRIE_CLIENT_MEMBERS.includes(name) || name === "clientCut") continue
      if (name === "env") {
        if (!isRecord(raw)) continue
        for (const [rawName, v] of Object.entries(raw)) {
          const value = clientValue(v)
          const varName = truncateCodePoints(rawName, COWRIE_CLIENT_STRING_MAX)
          if (value === undefined || varName === "") continue
          const seen = env.get(varName)
          if (seen === undefined || at < seen.at) env.set(varName, { name: varName, at, value })
        }
        continue
      }
      const value = clientValue(raw)
      if (value === undefined) continue
      const seen = members.get(name)
      if (seen === undefined || at < seen.at) members.set(name, { name, at, value })
    }
  }
  const order = (a: { readonly name: string }, b: { readonly name: string }) =>
    COWRIE_CLIENT_MEMBERS.indexOf(a.name) - COWRIE_CLIENT_MEMBERS.indexOf(b.name)
  const byTime = (
    a: { readonly name: string; readonly at: string },
    b: { readonly name: string; readonly at: string },
  ) => byAt(a, b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  return {
    members: [...members.values()].sort(order),
    env: [...env.values()].sort(byTime).slice(0, COWRIE_MAX_ENV),
  }
}

/** A client cut mark never takes more than this (`"clientCut":"cut: … more members, … bytes"` and a comma). */
const CLIENT_CUT_ROOM = 72

/** A session's client members as they join its events, and how much of them was left out to keep the bound. */
export interface CowrieClientMembers {
  readonly members: Record<string, unknown>
  readonly leftOut: number
  readonly leftOutBytes: number
}

/**
 * The members a session's state gives its events: in COWRIE_CLIENT_MEMBERS order, the environment's variables
 * earliest first, each kept whole while the members stay within COWRIE_CLIENT_MAX_BYTES; what does not fit is left
 * out and counted in a visible `clientCut` member. Pure.
 */
export const clientMembersOf = (state: CowrieClientState): CowrieClientMembers => {
  const members: Record<string, unknown> = {}
  let size = 2 // {}
  let leftOut = 0
  let leftOutBytes = 0
  const budget = COWRIE_CLIENT_MAX_BYTES - CLIENT_CUT_ROOM
  const entryBytes = (name: string, value: unknown) => jsonBytes(name) + 1 + jsonBytes(value) + 1
  for (const m of state.members) {
    const bytes = entryBytes(m.name, m.value)
    if (size + bytes > budget) {
      leftOut++
      leftOutBytes += bytes
      continue
    }
    members[m.name] = m.value
    size += bytes
  }
  if (state.env.length > 0) {
    const env: Array<[string, unknown]> = []
    let envSize = entryBytes("env", {}) // "env":{}
    for (const e of state.env) {
      const bytes = entryBytes(e.name, e.value)
      if (size + envSize + bytes > budget) {
        leftOut++
        leftOutBytes += bytes
        continue
      }
      env.push([e.name, e.value])
      envSize += bytes
    }
    if (env.length > 0) {
      // fromEntries defines own properties: a variable named "__proto__" stays a variable.
      members.env = Object.fromEntries(env)
      size += envSize
    }
  }
  if (leftOut > 0) members.clientCut = cutMark(leftOut, leftOutBytes)
  return { members, leftOut, leftOutBytes }
}

const countMasked = (v: unknown, depth = 0): number => {
  if (depth > 16 || typeof v !== "object" || v === null) return 0
  if (isMaskedShape(v)) return 1
  let n = 0
  for (const x of Array.isArray(v) ? v : Object.values(v)) n += countMasked(x, depth + 1)
  return n
}

/** An event's own members: its stored attackerInput without the session's client members. Pure. */
export const ownMembersOf = (stored: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(stored).filter(([k]) => !COWRIE_CLIENT_MEMBERS.includes(k)))

/**
 * Merged client members within the bound of every stored attackerInput: an event's own members (already prepared,
 * within ATTACKER_INPUT_MAX_BYTES) first, then the session's client members, each kept whole while the whole stays
 * within ATTACKER_INPUT_MAX_BYTES, ATTACKER_INPUT_MAX_KEYS members and ATTACKER_INPUT_MAX_MASKED masked secrets. What
 * is left out is counted in `clientCut` (with what the session's own bound left out); the event's own members and its
 * own cut mark are never touched. Pure.
 */
export const withClientMembers = (
  own: Record<string, unknown>,
  client: CowrieClientMembers | undefined,
): Record<string, unknown> => {
  if (client === undefined) return own
  const out: Record<string, unknown> = { ...own }
  let size = jsonBytes(own)
  let keys = Object.keys(own).length
  let masked = countMasked(own)
  let leftOut = client.leftOut
  let leftOutBytes = client.leftOutBytes
  for (const [name, value] of Object.entries(client.members)) {
    if (name === "clientCut" || Object.hasOwn(out, name)) continue
    const bytes = jsonBytes(name) + 1 + jsonBytes(value) + 1
    const secrets = countMasked(value)
    if (
      size + bytes > ATTACKER_INPUT_MAX_BYTES - CLIENT_CUT_ROOM ||
      keys + 2 > ATTACKER_INPUT_MAX_KEYS ||
      masked + secrets > ATTACKER_INPUT_MAX_MASKED
    ) {
      leftOut += name === "env" && isRecord(value) ? Object.keys(value).length : 1
      leftOutBytes += bytes
      continue
    }
    out[name] = value
    size += bytes
    keys++
    masked += secrets
  }
  if (leftOut > 0) {
    const mark = cutMark(leftOut, leftOutBytes)
    // Within the bound whenever the event's own members were (they were cut short of it to leave room for a mark).
    if (size + jsonBytes("clientCut") + 1 + jsonBytes(mark) + 1 <= ATTACKER_INPUT_MAX_BYTES) out.clientCut = mark
  }
  return out
}
