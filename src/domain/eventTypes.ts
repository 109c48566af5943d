/**
 * The event-type table. Each event type a sensor can report, with its decoy service, default port, action,
 * default severity and confidence, ATT&CK techniques (ids into `techniques.ts`), its label and incident title,
 * and its recommended action (`recommendedActions.ts`). How an event is worded is `eventSummary.ts`; how an incident's
 * title, narrative and advice are written from these rows is `narrative.ts`.
 */
import { eventSummary, type SummaryInput } from "./eventSummary.ts"
import {
  DB_ACTION,
  ISOLATE_SOURCE,
  LOGIN_ACTION,
  PATCH_ACTION,
  REDIS_ACTION,
  SCAN_ACTION,
  SHELL_ACTION,
  SMB_ACTION,
  SUCCESS_ACTION,
  WEB_ACTION,
} from "./recommendedActions.ts"
import type { Confidence, Severity } from "./severity.ts"
import { CONFIDENCES, severityRank } from "./severity.ts"
import type { Technique } from "./techniques.ts"
import { sortTechniques, techniqueById } from "./techniques.ts"

export interface EventTypeSpec {
  /** e.g. "ssh.login_attempt"; always `<service>.<something>`. */
  readonly type: string
  /** Decoy service, e.g. "ssh". */
  readonly service: string
  /** Default decoy port (0 when the type is not tied to one port, as for port scans). */
  readonly port: number
  /** e.g. "login_attempt". */
  readonly action: string
  /** Default severity. */
  readonly severity: Severity
  /** Default confidence. */
  readonly confidence: Confidence
  /** ATT&CK technique ids, each present in TECHNIQUES. */
  readonly techniques: ReadonlyArray<string>
  /** Short human label of one event, e.g. "SSH login attempt". */
  readonly label: string
  /** Start of an incident title when this is the incident's primary type and it has several events. */
  readonly incidentTitle: string
  /** One line per event. */
  readonly summary: (e: SummaryInput) => string
  /** Per-type advice used for incidents. */
  readonly recommendedAction: string
}

interface Row {
  readonly type: string
  readonly port: number
  readonly action?: string
  readonly severity: Severity
  readonly confidence: Confidence
  readonly techniques: ReadonlyArray<string>
  readonly label: string
  readonly incidentTitle: string
  /** How the detail is introduced in the summary, e.g. "command"; without it the detail is not shown. */
  readonly detailNoun?: string
  readonly recommendedAction: string
}

const spec = (row: Row): EventTypeSpec => {
  const dot = row.type.indexOf(".")
  const service = row.type.slice(0, dot)
  const action = row.action ?? row.type.slice(dot + 1)
  const { detailNoun } = row
  return {
    type: row.type,
    service,
    port: row.port,
    action,
    severity: row.severity,
    confidence: row.confidence,
    techniques: row.techniques,
    label: row.label,
    incidentTitle: row.incidentTitle,
    recommendedAction: row.recommendedAction,
    summary: (e) => eventSummary(row.label, detailNoun, e),
  }
}

const ROWS: ReadonlyArray<Row> = [
  // SSH (Cowrie and OpenCanary)
  {
    type: "ssh.session",
    port: 22,
    action: "connect",
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "SSH connection",
    incidentTitle: "SSH connections",
    detailNoun: "client version",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "ssh.login_attempt",
    port: 22,
    severity: "medium",
    confidence: "normal",
    // Techniques say what happened: a failed attempt is password guessing, not yet use of a remote service.
    techniques: ["T1110.001"],
    label: "SSH login attempt",
    incidentTitle: "SSH brute force",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "ssh.login_success",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1021.004", "T1078"],
    label: "SSH login with valid credentials",
    incidentTitle: "SSH login with valid credentials",
    recommendedAction: SUCCESS_ACTION,
  },
  {
    type: "ssh.command",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1021.004", "T1059.004"],
    label: "SSH shell command",
    incidentTitle: "Shell commands over SSH",
    detailNoun: "command",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "ssh.file_download",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1105"],
    label: "File download in an SSH session",
    incidentTitle: "Tool download over SSH",
    detailNoun: "URL",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "ssh.pubkey_attempt",
    port: 22,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110"],
    label: "SSH public-key login attempt",
    incidentTitle: "SSH public-key login attempts",
    recommendedAction: `${ISOLATE_SOURCE} Check that the offered key (its fingerprint is in the event) is in no authorized_keys file of your real systems.`,
  },
  {
    type: "ssh.file_upload",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1105"],
    label: "File upload in an SSH session",
    incidentTitle: "Tool upload over SSH",
    detailNoun: "file",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "ssh.file_download_failed",
    port: 22,
    severity: "medium",
    confidence: "high",
    // The download did not complete: nothing was transferred (no T1105), but the attacker ran it in a shell.
    techniques: ["T1021.004", "T1059.004"],
    label: "Failed file download in an SSH session",
    incidentTitle: "Tool download attempts over SSH",
    detailNoun: "URL",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "ssh.port_forward",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1572", "T1090"],
    label: "SSH port forwarding through the decoy",
    incidentTitle: "SSH tunnelling through the decoy",
    detailNoun: "target",
    recommendedAction: `${ISOLATE_SOURCE} The attacker tried to use the decoy as a proxy: block the forwarding targets in the event at your edge and look for the same traffic from that address.`,
  },
  {
    type: "ssh.exploit_attempt",
    port: 22,
    severity: "high",
    confidence: "high",
    techniques: ["T1190"],
    label: "Exploit attempt over SSH",
    incidentTitle: "Exploit attempts over SSH",
    recommendedAction: PATCH_ACTION,
  },
  {
    // Cowrie's cowrie.telnet.exploit_success: the exploit (CVE-2026-24061, telnetd's USER "-f root") gave the
    // attacker a root shell without a password.
    type: "ssh.exploit_success",
    port: 22,
    severity: "critical",
    confidence: "high",
    techniques: ["T1190"],
    label: "Successful exploit over SSH",
    incidentTitle: "Successful exploit over SSH",
    recommendedAction: `${PATCH_ACTION} The exploit gave the attacker a shell on the decoy: treat the source as an active intruder.`,
  },
  {
    type: "ssh.activity",
    port: 22,
    severity: "low",
    confidence: "low",
    // Nothing is known of the line but that the source used the decoy's service: no technique is claimed.
    techniques: [],
    label: "SSH session activity",
    incidentTitle: "SSH session activity",
    recommendedAction: ISOLATE_SOURCE,
  },
  // Telnet (Cowrie and OpenCanary). ATT&CK has no Telnet sub-technique of Remote Services: Telnet types carry the
  // parent T1021 where their SSH twins carry T1021.004.
  {
    type: "telnet.session",
    port: 23,
    action: "connect",
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "Telnet connection",
    incidentTitle: "Telnet connections",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "telnet.login_attempt",
    port: 23,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "Telnet login attempt",
    incidentTitle: "Telnet brute force",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "telnet.login_success",
    port: 23,
    severity: "high",
    confidence: "high",
    techniques: ["T1021", "T1078"],
    label: "Telnet login with valid credentials",
    incidentTitle: "Telnet login with valid credentials",
    recommendedAction: SUCCESS_ACTION,
  },
  {
    type: "telnet.command",
    port: 23,
    severity: "high",
    confidence: "high",
    techniques: ["T1021", "T1059.004"],
    label: "Telnet shell command",
    incidentTitle: "Shell commands over Telnet",
    detailNoun: "command",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "telnet.file_download",
    port: 23,
    severity: "high",
    confidence: "high",
    techniques: ["T1105"],
    label: "File download in a Telnet session",
    incidentTitle: "Tool download over Telnet",
    detailNoun: "URL",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "telnet.file_upload",
    port: 23,
    severity: "high",
    confidence: "high",
    techniques: ["T1105"],
    label: "File upload in a Telnet session",
    incidentTitle: "Tool upload over Telnet",
    detailNoun: "file",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "telnet.file_download_failed",
    port: 23,
    severity: "medium",
    confidence: "high",
    techniques: ["T1021", "T1059.004"],
    label: "Failed file download in a Telnet session",
    incidentTitle: "Tool download attempts over Telnet",
    detailNoun: "URL",
    recommendedAction: SHELL_ACTION,
  },
  {
    type: "telnet.exploit_attempt",
    port: 23,
    severity: "high",
    confidence: "high",
    techniques: ["T1190"],
    label: "Exploit attempt over Telnet",
    incidentTitle: "Exploit attempts over Telnet",
    recommendedAction: PATCH_ACTION,
  },
  {
    // Cowrie's cowrie.telnet.exploit_success: the exploit (CVE-2026-24061, telnetd's USER "-f root") gave the
    // attacker a root shell without a password.
    type: "telnet.exploit_success",
    port: 23,
    severity: "critical",
    confidence: "high",
    techniques: ["T1190"],
    label: "Successful exploit over Telnet",
    incidentTitle: "Successful exploit over Telnet",
    recommendedAction: `${PATCH_ACTION} The exploit gave the attacker a shell on the decoy: treat the source as an active intruder.`,
  },
  {
    type: "telnet.activity",
    port: 23,
    severity: "low",
    confidence: "low",
    // Nothing is known of the line but that the source used the decoy's service: no technique is claimed.
    techniques: [],
    label: "Telnet session activity",
    incidentTitle: "Telnet session activity",
    recommendedAction: ISOLATE_SOURCE,
  },
  // FTP, HTTP, SMB
  {
    type: "ftp.session",
    port: 21,
    action: "connect",
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "FTP connection",
    incidentTitle: "FTP connections",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "ftp.login_attempt",
    port: 21,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "FTP login attempt",
    incidentTitle: "FTP brute force",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "http.request",
    port: 80,
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "HTTP request",
    incidentTitle: "Web decoy requests",
    detailNoun: "path",
    recommendedAction: WEB_ACTION,
  },
  {
    type: "http.login_attempt",
    port: 80,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "Web login attempt",
    incidentTitle: "Web login brute force",
    detailNoun: "path",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "smb.file_open",
    port: 445,
    severity: "high",
    confidence: "normal",
    techniques: ["T1021.002", "T1039"],
    label: "SMB file open",
    incidentTitle: "Decoy file share access",
    detailNoun: "file",
    recommendedAction: SMB_ACTION,
  },
  // Port scans (OpenCanary portscan module)
  {
    type: "portscan.syn",
    port: 0,
    action: "scan",
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "Port scan (SYN)",
    incidentTitle: "Port scan",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "portscan.nmap_os",
    port: 0,
    action: "scan",
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "Nmap OS detection probe",
    incidentTitle: "Nmap OS detection scan",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "portscan.nmap_null",
    port: 0,
    action: "scan",
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "Nmap NULL scan probe",
    incidentTitle: "Nmap NULL scan",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "portscan.nmap_xmas",
    port: 0,
    action: "scan",
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "Nmap Xmas scan probe",
    incidentTitle: "Nmap Xmas scan",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "portscan.nmap_fin",
    port: 0,
    action: "scan",
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "Nmap FIN scan probe",
    incidentTitle: "Nmap FIN scan",
    recommendedAction: SCAN_ACTION,
  },
  // Databases, remote desktops, Redis
  {
    type: "mysql.session",
    port: 3306,
    action: "connect",
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "MySQL connection",
    incidentTitle: "MySQL connections",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "mongodb.session",
    port: 27017,
    action: "connect",
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "MongoDB connection",
    incidentTitle: "MongoDB connections",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "mongodb.login_attempt",
    port: 27017,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "MongoDB login attempt",
    incidentTitle: "MongoDB brute force",
    recommendedAction: DB_ACTION,
  },
  {
    type: "mongodb.command",
    port: 27017,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1213"],
    label: "MongoDB command",
    incidentTitle: "MongoDB commands",
    detailNoun: "command",
    recommendedAction: DB_ACTION,
  },
  {
    type: "mysql.login_attempt",
    port: 3306,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "MySQL login attempt",
    incidentTitle: "MySQL brute force",
    recommendedAction: DB_ACTION,
  },
  {
    type: "mssql.login_attempt",
    port: 1433,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "MSSQL login attempt",
    incidentTitle: "MSSQL brute force",
    recommendedAction: DB_ACTION,
  },
  {
    type: "vnc.login_attempt",
    port: 5900,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "VNC login attempt",
    incidentTitle: "VNC brute force",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "rdp.login_attempt",
    port: 3389,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "RDP login attempt",
    incidentTitle: "RDP login attempts",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "redis.command",
    port: 6379,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1210"],
    label: "Redis command",
    incidentTitle: "Redis commands",
    detailNoun: "command",
    recommendedAction: REDIS_ACTION,
  },
  // Other OpenCanary modules
  {
    type: "httpproxy.login_attempt",
    port: 8080,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1110.001"],
    label: "HTTP proxy login attempt",
    incidentTitle: "HTTP proxy brute force",
    recommendedAction: LOGIN_ACTION,
  },
  {
    type: "tftp.request",
    port: 69,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1105"],
    label: "TFTP request",
    incidentTitle: "TFTP requests",
    detailNoun: "file",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "ntp.monlist",
    port: 123,
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "NTP monlist request",
    incidentTitle: "NTP monlist requests",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "snmp.request",
    port: 161,
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "SNMP request",
    incidentTitle: "SNMP requests",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "sip.request",
    port: 5060,
    severity: "low",
    confidence: "normal",
    techniques: ["T1046"],
    label: "SIP request",
    incidentTitle: "SIP requests",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "git.clone_request",
    port: 9418,
    severity: "medium",
    confidence: "normal",
    techniques: ["T1213.003"],
    label: "Git clone request",
    incidentTitle: "Git repository clone requests",
    recommendedAction: `${ISOLATE_SOURCE} Someone asked a decoy for a code repository: check access to your real repositories from that address.`,
  },
  {
    type: "tcp.connection",
    // OpenCanary's default tcpbanner port; the line's own dst_port wins.
    port: 8001,
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "TCP connection",
    incidentTitle: "TCP connections",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "tcp.data",
    port: 8001,
    severity: "low",
    confidence: "normal",
    techniques: [],
    label: "Data sent to a TCP decoy",
    incidentTitle: "Data sent to a TCP decoy",
    recommendedAction: SCAN_ACTION,
  },
  {
    type: "llmnr.poisoning",
    port: 5355,
    severity: "high",
    confidence: "high",
    techniques: ["T1557.001"],
    label: "LLMNR poisoning response",
    incidentTitle: "LLMNR poisoning",
    recommendedAction: `${ISOLATE_SOURCE} The machine answered a name nobody owns, as LLMNR/NBT-NS poisoning tools do: look for Responder-like tools on it and for captured hashes being relayed.`,
  },
  {
    type: "decoy.activity",
    port: 0,
    severity: "low",
    confidence: "low",
    // Nothing is known of the line but that the source used the decoy's service: no technique is claimed.
    techniques: [],
    label: "Decoy activity",
    incidentTitle: "Decoy activity",
    recommendedAction: ISOLATE_SOURCE,
  },
]

/** Every event type, keyed by type name. */
export const EVENT_TYPES: ReadonlyMap<string, EventTypeSpec> = new Map(ROWS.map((row) => [row.type, spec(row)]))

/**
 * The event type names, sorted (the "allowed values" of validation messages): kept in their own module, without the
 * table's texts, so the API contract and the client bundle built from it carry only the names.
 */
export { EVENT_TYPE_NAMES } from "./eventTypeNames.ts"

export const eventTypeSpec = (type: string): EventTypeSpec | undefined => EVENT_TYPES.get(type)

/** The techniques of these event types, each once, sorted by id. Unknown types are ignored. */
export const techniquesForEventTypes = (types: Iterable<string>): ReadonlyArray<Technique> => {
  const out: Array<Technique> = []
  for (const type of types) {
    for (const id of EVENT_TYPES.get(type)?.techniques ?? []) out.push(techniqueById(id))
  }
  return sortTechniques(out)
}

const confidenceRank = (c: Confidence): number => CONFIDENCES.indexOf(c)

/**
 * The most severe known type among `types` (severity order; ties go to the higher default confidence, then to `preferred`,
 * then to the earlier type). Undefined when no type is known.
 */
export const mostSevereEventType = (types: Iterable<string>, preferred?: string): EventTypeSpec | undefined => {
  let best: EventTypeSpec | undefined
  for (const type of types) {
    const candidate = EVENT_TYPES.get(type)
    if (candidate === undefined) continue
    if (best === undefined) {
      best = candidate
      continue
    }
    const bySeverity = severityRank(candidate.severity) - severityRank(best.severity)
    const byConfidence = confidenceRank(candidate.confidence) - confidenceRank(best.confidence)
    if (bySeverity > 0 || (bySeverity === 0 && (byConfidence > 0 || (byConfidence === 0 && type === preferred)))) {
      best = candidate
    }
  }
  return best
}
