/**
 * Maps one OpenCanary JSON log line (`POST /ingest/v1/opencanary`) to a native event input. Pure, never throws.
 *
 * An OpenCanary line looks like
 *   {"dst_host": "10.0.0.5", "dst_port": 22, "local_time": "2026-11-21 15:57:42.053123",
 *    "local_time_adjusted": "2026-11-21 16:57:42.053201", "logdata": {"LOCALVERSION": "SSH-2.0-OpenSSH_5.1p1 Debian-5",
 *    "PASSWORD": "123456", "REMOTEVERSION": "SSH-2.0-libssh_0.9.6", "USERNAME": "root"}, "logtype": 4002,
 *    "node_id": "opencanary-1", "src_host": "203.0.113.7", "src_port": 51234, "utc_time": "2026-11-21 15:57:42.053123"}
 * with `logtype` one of the LOG_* constants of opencanary/logger.py and `logdata` written by the module that logged
 * it (`USERNAME`, `PASSWORD`, `PATH`, `USERAGENT`, ... and a few mixed-case or spaced names such as MSSQL's `UserName`
 * or VNC's `VNC Password`).
 *
 * OpenCanary lines carry no event id, so `sensorEventId` is `oc:k1:` + the HMAC-SHA256 of the line's canonical JSON
 * under the organization's line-id key (`lineId`, `lineIdKey` in native.ts): a line sent again is recognised as a
 * duplicate, and the id tells nothing about the password inside the line to anyone without the key. (`oc:` +
 * an unkeyed SHA-256 was the form before; `k1` names the keyed one.)
 */
import { eventTypeSpec } from "../../domain/eventTypes.ts"
import { isRecord } from "../../domain/json.ts"
import type { MapResult } from "./native.ts"
import {
  camelCaseKey,
  describe,
  ignored,
  lineId,
  mappedLogEvent,
  neverThrowing,
  normalizeIp,
  parseLogTime,
  parsePort,
  putScalar,
  rejected,
} from "./native.ts"

/** opencanary/logger.py LoggerBase.LOG_* constants, by value (used to name a logtype in a rejection). */
const LOGTYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [1000, "LOG_BASE_BOOT"],
  [1001, "LOG_BASE_MSG"],
  [1002, "LOG_BASE_DEBUG"],
  [1003, "LOG_BASE_ERROR"],
  [1004, "LOG_BASE_PING"],
  [1005, "LOG_BASE_CONFIG_SAVE"],
  [1006, "LOG_BASE_EXAMPLE"],
  [2000, "LOG_FTP_LOGIN_ATTEMPT"],
  [2001, "LOG_FTP_AUTH_ATTEMPT_INITIATED"],
  [3000, "LOG_HTTP_GET"],
  [3001, "LOG_HTTP_POST_LOGIN_ATTEMPT"],
  [3002, "LOG_HTTP_UNIMPLEMENTED_METHOD"],
  [3003, "LOG_HTTP_REDIRECT"],
  [4000, "LOG_SSH_NEW_CONNECTION"],
  [4001, "LOG_SSH_REMOTE_VERSION_SENT"],
  [4002, "LOG_SSH_LOGIN_ATTEMPT"],
  [5000, "LOG_SMB_FILE_OPEN"],
  [5001, "LOG_PORT_SYN"],
  [5002, "LOG_PORT_NMAPOS"],
  [5003, "LOG_PORT_NMAPNULL"],
  [5004, "LOG_PORT_NMAPXMAS"],
  [5005, "LOG_PORT_NMAPFIN"],
  [6001, "LOG_TELNET_LOGIN_ATTEMPT"],
  [6002, "LOG_TELNET_CONNECTION_MADE"],
  [7001, "LOG_HTTPPROXY_LOGIN_ATTEMPT"],
  [8001, "LOG_MYSQL_LOGIN_ATTEMPT"],
  [9001, "LOG_MSSQL_LOGIN_SQLAUTH"],
  [9002, "LOG_MSSQL_LOGIN_WINAUTH"],
  [9003, "LOG_MYSQL_CONNECTION_MADE"],
  [10001, "LOG_TFTP"],
  [11001, "LOG_NTP_MONLIST"],
  [12001, "LOG_VNC"],
  [13001, "LOG_SNMP_CMD"],
  [14001, "LOG_RDP"],
  [15001, "LOG_SIP_REQUEST"],
  [16001, "LOG_GIT_CLONE_REQUEST"],
  [17001, "LOG_REDIS_COMMAND"],
  [18001, "LOG_TCP_BANNER_CONNECTION_MADE"],
  [18002, "LOG_TCP_BANNER_KEEP_ALIVE_CONNECTION_MADE"],
  [18003, "LOG_TCP_BANNER_KEEP_ALIVE_SECRET_RECEIVED"],
  [18004, "LOG_TCP_BANNER_KEEP_ALIVE_DATA_RECEIVED"],
  [18005, "LOG_TCP_BANNER_DATA_RECEIVED"],
  [19001, "LOG_LLMNR_QUERY_RESPONSE"],
  [20001, "LOG_MONGODB_LOGIN_ATTEMPT"],
  ...Array.from({ length: 10 }, (_, i) => [99000 + i, `LOG_USER_${i}`] as const),
])

/**
 * What each OpenCanary logtype becomes, so every line has a right outcome. Every LOG_* constant of opencanary/logger.py
 * is listed: `accepted` as an event of the type named, or `ignored` with the reason when the line records no attacker
 * action (the daemon's own boot, service and error messages). MongoDB (20001) logs all its lines under one logtype:
 * `logdata.action` decides (MONGODB_ACTIONS). A logtype missing here (a later version's module, or a user module's
 * 99000–99009 when not listed) is accepted as `decoy.activity`, a generic event without techniques, with its logdata's
 * scalar fields: a line from a decoy service is kept rather than dropped, and nothing is claimed about it.
 */
export type OpenCanaryOutcome =
  | { readonly outcome: "accepted"; readonly type: string }
  /** Another line of an event already recorded (`type`): its details join that event (one connection, one event). */
  | { readonly outcome: "merged"; readonly type: string; readonly what: string }
  | { readonly outcome: "ignored"; readonly reason: string }

const acceptedAs = (type: string): OpenCanaryOutcome => ({ outcome: "accepted", type })
const ignoredBecause = (reason: string): OpenCanaryOutcome => ({ outcome: "ignored", reason })
const DAEMON = "a message of the OpenCanary daemon itself, not something an attacker did"

export const OPENCANARY_LOGTYPES: ReadonlyMap<number, OpenCanaryOutcome> = new Map([
  [1000, ignoredBecause(DAEMON)], // LOG_BASE_BOOT
  [1001, ignoredBecause(DAEMON)], // LOG_BASE_MSG: "Added service from class ...", start-up errors
  [1002, ignoredBecause(DAEMON)], // LOG_BASE_DEBUG
  [1003, ignoredBecause(DAEMON)], // LOG_BASE_ERROR
  [1004, ignoredBecause(DAEMON)], // LOG_BASE_PING
  [1005, ignoredBecause(DAEMON)], // LOG_BASE_CONFIG_SAVE
  [1006, ignoredBecause("the example module's test line")], // LOG_BASE_EXAMPLE
  [2000, acceptedAs("ftp.login_attempt")], // LOG_FTP_LOGIN_ATTEMPT
  [2001, acceptedAs("ftp.session")], // LOG_FTP_AUTH_ATTEMPT_INITIATED: a client reached the password step
  [3000, acceptedAs("http.request")], // LOG_HTTP_GET
  [3001, acceptedAs("http.login_attempt")], // LOG_HTTP_POST_LOGIN_ATTEMPT
  [3002, acceptedAs("http.request")], // LOG_HTTP_UNIMPLEMENTED_METHOD
  [3003, acceptedAs("http.request")], // LOG_HTTP_REDIRECT
  [4000, acceptedAs("ssh.session")], // LOG_SSH_NEW_CONNECTION
  // LOG_SSH_REMOTE_VERSION_SENT: the same connection as its 4000 line, not a second one. Merged into it (the client
  // version becomes the connection event's clientVersion), so one connection is one event (mapLine below).
  [4001, { outcome: "merged", type: "ssh.session", what: "the client version of the connection its 4000 line opened" }],
  [4002, acceptedAs("ssh.login_attempt")], // LOG_SSH_LOGIN_ATTEMPT
  [5000, acceptedAs("smb.file_open")], // LOG_SMB_FILE_OPEN
  [5001, acceptedAs("portscan.syn")], // LOG_PORT_SYN
  [5002, acceptedAs("portscan.nmap_os")], // LOG_PORT_NMAPOS
  [5003, acceptedAs("portscan.nmap_null")], // LOG_PORT_NMAPNULL
  [5004, acceptedAs("portscan.nmap_xmas")], // LOG_PORT_NMAPXMAS
  [5005, acceptedAs("portscan.nmap_fin")], // LOG_PORT_NMAPFIN
  [6001, acceptedAs("telnet.login_attempt")], // LOG_TELNET_LOGIN_ATTEMPT
  [6002, acceptedAs("telnet.session")], // LOG_TELNET_CONNECTION_MADE
  [7001, acceptedAs("httpproxy.login_attempt")], // LOG_HTTPPROXY_LOGIN_ATTEMPT
  [8001, acceptedAs("mysql.login_attempt")], // LOG_MYSQL_LOGIN_ATTEMPT
  [9001, acceptedAs("mssql.login_attempt")], // LOG_MSSQL_LOGIN_SQLAUTH
  [9002, acceptedAs("mssql.login_attempt")], // LOG_MSSQL_LOGIN_WINAUTH
  [9003, acceptedAs("mysql.session")], // LOG_MYSQL_CONNECTION_MADE
  [10001, acceptedAs("tftp.request")], // LOG_TFTP
  [11001, acceptedAs("ntp.monlist")], // LOG_NTP_MONLIST
  [12001, acceptedAs("vnc.login_attempt")], // LOG_VNC
  [13001, acceptedAs("snmp.request")], // LOG_SNMP_CMD
  [14001, acceptedAs("rdp.login_attempt")], // LOG_RDP
  [15001, acceptedAs("sip.request")], // LOG_SIP_REQUEST
  [16001, acceptedAs("git.clone_request")], // LOG_GIT_CLONE_REQUEST
  [17001, acceptedAs("redis.command")], // LOG_REDIS_COMMAND
  [18001, acceptedAs("tcp.connection")], // LOG_TCP_BANNER_CONNECTION_MADE
  [18002, acceptedAs("tcp.connection")], // LOG_TCP_BANNER_KEEP_ALIVE_CONNECTION_MADE
  [18003, acceptedAs("tcp.data")], // LOG_TCP_BANNER_KEEP_ALIVE_SECRET_RECEIVED
  [18004, acceptedAs("tcp.data")], // LOG_TCP_BANNER_KEEP_ALIVE_DATA_RECEIVED
  [18005, acceptedAs("tcp.data")], // LOG_TCP_BANNER_DATA_RECEIVED
  [19001, acceptedAs("llmnr.poisoning")], // LOG_LLMNR_QUERY_RESPONSE: a host answered the decoy's bait name
  [20001, acceptedAs("mongodb.session")], // LOG_MONGODB_LOGIN_ATTEMPT (refined by logdata.action)
])

/** opencanary/modules/mongodb.py LOG_ACTION_*: what a MongoDB line (logtype 20001) becomes. */
export const MONGODB_ACTIONS: ReadonlyMap<string, OpenCanaryOutcome> = new Map([
  ["mongodb.connection", acceptedAs("mongodb.session")],
  ["mongodb.auth_attempt", acceptedAs("mongodb.login_attempt")],
  ["mongodb.command", acceptedAs("mongodb.command")],
  ["mongodb.error", ignoredBecause("a MongoDB protocol error of the decoy; the connection is already recorded")],
  ["mongodb.disconnect", ignoredBecause("the client disconnected; the connection is already recorded")],
])

/** The event type of a logtype this version does not know. */
export const OPENCANARY_UNKNOWN_TYPE = "decoy.activity"

/**
 * logdata field names whose attackerInput name is not simply their lower camel case: the names OpenCanary's modules
 * write (HTTP, SSH, FTP, telnet, MySQL: USERNAME/PASSWORD/...; SMB: USER, FILENAME, SHARENAME, ...; MSSQL: UserName,
 * Password, HostName, ...; VNC: "VNC Password"; Redis: CMD, ARGS).
 */
const KEY_NAMES: ReadonlyMap<string, string> = new Map([
  ["USERNAME", "username"],
  ["USER", "username"],
  ["UserName", "username"],
  ["PASSWORD", "password"],
  ["Password", "password"],
  ["VNC Password", "password"],
  ["PATH", "path"],
  ["USERAGENT", "userAgent"],
  ["HOSTNAME", "hostname"],
  ["HostName", "hostname"],
  ["LOCALVERSION", "localVersion"],
  ["REMOTEVERSION", "remoteVersion"],
  ["FILENAME", "fileName"],
  ["SHARENAME", "shareName"],
  ["REMOTENAME", "remoteName"],
  ["LOCALNAME", "localName"],
  ["SMBVER", "smbVersion"],
  ["SMBARCH", "smbArch"],
  ["AUDITACTION", "auditAction"],
  ["DOMAINNAME", "domainName"],
  ["CMD", "command"],
  ["ARGS", "args"],
  ["REPO", "repository"],
  ["HOST", "host"],
  ["COMMUNITY_STRING", "communityString"],
  ["NTP CMD", "ntpCommand"],
  ["auth_data", "authData"],
  ["query_hostname", "queryHostname"],
])

/** Placeholders OpenCanary writes instead of a value the attacker did not send; they are not attacker input. */
const PLACEHOLDERS: ReadonlySet<string> = new Set(["<not supplied>", "<Password was not in the common list>"])

/** Only this much of a string is inspected for payload tags. */
const INSPECT_MAX = 8192

/** URL-decodes (twice at most, `+` as space) and lowercases, for pattern matching only. */
const decodeForMatching = (s: string): string => {
  let out = s.slice(0, INSPECT_MAX)
  for (let round = 0; round < 2; round++) {
    let decoded: string
    try {
      decoded = decodeURIComponent(out.replace(/\+/g, " "))
    } catch {
      break
    }
    if (decoded === out) break
    out = decoded
  }
  return out.toLowerCase()
}

const TRAVERSAL_RAW = /\.\.[/\\]|%2e%2e|%252e%252e|\.\.%2f|\.\.%5c|%c0%ae/i
const TRAVERSAL_DECODED = /\.\.[/\\]/

const SQLI: ReadonlyArray<RegExp> = [
  /\bunion\b[^a-z0-9]{1,20}(?:all[^a-z0-9]{1,20})?select\b/,
  /['"`)]\s*(?:or|and)\s+['"(]?\w+['"]?\s*(?:=|<|>|\blike\b)/,
  /\bor\s+1\s*=\s*1\b/,
  /'\s*(?:--|#|\/\*)/,
  /\b(?:sleep|benchmark|pg_sleep)\s*\(/,
  /\bwaitfor\s+delay\b/,
  /\binformation_schema\b/,
  /@@version/,
  /;\s*(?:drop|delete|insert|update|select|shutdown|exec)\b/,
  /\bxp_cmdshell\b/,
  /\bselect\s[^;]{0,100}\sfrom\s/,
]

const XSS = /<\s*script\b|javascript:|<[^>]{0,200}\bon(?:error|load|mouseover|focus)\s*=/
const COMMAND_INJECTION =
  /(?:[;|`]|\$\(|&&)\s*(?:wget|curl|sh|bash|nc|ncat|id|uname|whoami|cat|echo|ping|busybox|chmod|python|perl)\b/

const SCANNER_AGENT =
  /\b(?:nmap|masscan|zgrab|zmap|sqlmap|nikto|nuclei|gobuster|dirbuster|feroxbuster|ffuf|wpscan|acunetix|nessus|openvas)\b/i

/** Payload tags of HTTP text (a path, or a login form value). */
const httpTextTags = (raw: string): Array<string> => {
  const tags: Array<string> = []
  const text = decodeForMatching(raw)
  if (TRAVERSAL_RAW.test(raw.slice(0, INSPECT_MAX)) || TRAVERSAL_DECODED.test(text)) tags.push("path-traversal")
  if (SQLI.some((re) => re.test(text))) tags.push("sqli")
  if (XSS.test(text)) tags.push("xss")
  if (COMMAND_INJECTION.test(text)) tags.push("command-injection")
  return tags
}

const readLogtype = (v: unknown): number | undefined => {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v
  if (typeof v === "string" && /^\d{1,9}$/.test(v)) return Number(v)
  return undefined
}

const logtypeName = (logtype: number): string => {
  const name = LOGTYPE_NAMES.get(logtype)
  return name === undefined ? String(logtype) : `${logtype} (${name})`
}

const stringField = (o: Record<string, unknown>, key: string): string | undefined => {
  const v = o[key]
  return typeof v === "string" && !PLACEHOLDERS.has(v) ? v : undefined
}

/** The prefix of an OpenCanary line's `sensorEventId`. */
const OPENCANARY_ID_PREFIX = "oc:k1:"

const mapLine = (line: unknown, lineIdKey: Uint8Array): MapResult => {
  if (!isRecord(line)) return rejected(`an OpenCanary log line must be a JSON object, got ${describe(line)}`)

  const logtype = readLogtype(line.logtype)
  if (logtype === undefined) return rejected(`missing or invalid logtype: ${describe(line.logtype)}`)
  const mongoAction = logtype === 20001 && isRecord(line.logdata) ? line.logdata.action : undefined
  const outcome =
    (typeof mongoAction === "string" ? MONGODB_ACTIONS.get(mongoAction) : undefined) ??
    OPENCANARY_LOGTYPES.get(logtype) ??
    acceptedAs(OPENCANARY_UNKNOWN_TYPE)
  if (outcome.outcome === "ignored")
    return ignored(`logtype ${logtypeName(logtype)}: ${outcome.reason}; nothing stored`)
  const spec = eventTypeSpec(outcome.type)
  if (spec === undefined) return rejected(`OpenCanary logtype ${logtype} maps to unknown event type ${outcome.type}`)

  const sourceIp = normalizeIp(line.src_host)
  if (sourceIp === undefined) return rejected(`missing or invalid src_host: ${describe(line.src_host)}`)
  const time = parseLogTime(line.utc_time)
  if (time === undefined) return rejected(`missing or invalid utc_time: ${describe(line.utc_time)}`)
  const sourcePort = parsePort(line.src_port)
  if (sourcePort === "invalid") return rejected(`invalid src_port: ${describe(line.src_port)}`)
  const dstPort = parsePort(line.dst_port)
  if (dstPort === "invalid") return rejected(`invalid dst_port: ${describe(line.dst_port)}`)
  const logdata = line.logdata ?? {}
  if (!isRecord(logdata)) return rejected(`logdata must be a JSON object, got ${describe(line.logdata)}`)

  const attackerInput: Record<string, unknown> = {}
  const isRedisAuth = logtype === 17001 && typeof logdata.CMD === "string" && logdata.CMD.toUpperCase() === "AUTH"
  for (const [rawKey, value] of Object.entries(logdata)) {
    if (typeof value === "string" && PLACEHOLDERS.has(value)) continue
    // Redis AUTH's argument is the password the attacker tried: keep it under a name that gets masked.
    const key = isRedisAuth && rawKey === "ARGS" ? "password" : (KEY_NAMES.get(rawKey) ?? camelCaseKey(rawKey))
    if (key !== undefined) putScalar(attackerInput, key, value)
  }
  // The telnet module writes whether the login used one of its bait credentials (telnet.honeycreds) at the line's
  // top level, outside logdata: the attacker knew a planted credential, which the event must keep.
  if (typeof line.honeycred === "boolean") attackerInput.honeycred = line.honeycred

  const tags: Array<string> = []
  const username = stringField(logdata, "USERNAME") ?? stringField(logdata, "UserName")
  // MySQL logs a null PASSWORD when the client sent none (an empty password).
  const password =
    stringField(logdata, "PASSWORD") ??
    stringField(logdata, "Password") ??
    (logtype === 8001 && logdata.PASSWORD === null ? "" : undefined)
  // Techniques say what happened: OpenCanary refuses every login, so default credentials tried there are password
  // guessing (the type's T1110.001), never "Valid Accounts: Default Accounts" (the default-credentials tag).
  if (spec.service === "http") {
    const path = stringField(logdata, "PATH")
    if (path !== undefined) tags.push(...httpTextTags(path))
    for (const formValue of [username, password]) {
      if (formValue !== undefined) tags.push(...httpTextTags(formValue).filter((t) => t !== "path-traversal"))
    }
  }
  const userAgent = stringField(logdata, "USERAGENT")
  if (userAgent !== undefined && SCANNER_AGENT.test(userAgent.slice(0, INSPECT_MAX))) tags.push("scanner")

  const sensorEventId = lineId(OPENCANARY_ID_PREFIX, lineIdKey, line)
  // OpenCanary writes two lines for one SSH connection (4000 when it opens, 4001 with the client's version): both
  // name the same source address and port, which make the connection's session, as Cowrie's session id does.
  const connection = logtype === 4000 || logtype === 4001 ? sshConnection(sourceIp, sourcePort) : undefined
  if (connection !== undefined && outcome.outcome === "merged") {
    return {
      _tag: "Merged",
      reason: `logtype ${logtypeName(logtype)}: ${outcome.what}`,
      merge: {
        session: connection,
        sourceIp,
        time,
        lineId: sensorEventId,
        details: { clientVersion: attackerInput.remoteVersion },
      },
    }
  }
  const result = mappedLogEvent({ sensorEventId, time, sourceIp, sourcePort, dstPort, spec, tags, attackerInput })
  if (connection === undefined || result._tag !== "Mapped" || typeof sourcePort !== "number") return result
  const port = result.event.port ?? spec.port
  return {
    ...result,
    cowrie: {
      session: connection,
      action: "session",
      ownProtocol: true,
      ownSourcePort: true,
      ownPort: true,
      teaches: { protocol: "ssh", sourcePort, port },
    },
  }
}

/** The session key of one OpenCanary SSH connection (source address and port), undefined without a port. */
const sshConnection = (sourceIp: string, sourcePort: number | "unknown"): string | undefined =>
  typeof sourcePort === "number" && sourcePort > 0
    ? `oc-ssh-${sourceIp.replace(/[^0-9A-Za-z]/g, "_")}-${sourcePort}`
    : undefined

/**
 * Maps one OpenCanary log line (already JSON-parsed); `lineIdKey` is the organization's (`lineIdKey` in native.ts).
 * Never throws: anything unusable is Rejected with a reason.
 */
export const mapOpenCanary = neverThrowing("OpenCanary", mapLine)
