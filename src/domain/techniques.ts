/**
 * The MITRE ATT&CK technique table. This module is the only place where technique data lives: ids, names and
 * tactics are copied from ATT&CK (Enterprise). Sub-technique names are written "Parent: Sub", as the ATT&CK website
 * titles them (its STIX `name` is the bare "SSH", which reads poorly out of context), and tactics use ATT&CK's
 * lowercase short names (x_mitre_shortname).
 *
 * Techniques come from this fixed table, never from AI (spec "Technique"). Event types reference techniques in
 * `eventTypes.ts`; payload tags reference them in `TAG_TECHNIQUES` below. Nothing else hard-codes a technique id.
 */

export interface Technique {
  readonly id: string
  readonly name: string
  readonly tactics: ReadonlyArray<string>
}

/**
 * ATT&CK Enterprise tactics by the short names the table below uses, with their ATT&CK ids and names (OCSF's
 * `tactic` wants both).
 */
export const TACTICS_BY_NAME: ReadonlyMap<string, { readonly uid: string; readonly name: string }> = new Map([
  ["reconnaissance", { uid: "TA0043", name: "Reconnaissance" }],
  ["resource-development", { uid: "TA0042", name: "Resource Development" }],
  ["initial-access", { uid: "TA0001", name: "Initial Access" }],
  ["execution", { uid: "TA0002", name: "Execution" }],
  ["persistence", { uid: "TA0003", name: "Persistence" }],
  ["privilege-escalation", { uid: "TA0004", name: "Privilege Escalation" }],
  ["defense-evasion", { uid: "TA0005", name: "Defense Evasion" }],
  ["credential-access", { uid: "TA0006", name: "Credential Access" }],
  ["discovery", { uid: "TA0007", name: "Discovery" }],
  ["lateral-movement", { uid: "TA0008", name: "Lateral Movement" }],
  ["collection", { uid: "TA0009", name: "Collection" }],
  ["command-and-control", { uid: "TA0011", name: "Command and Control" }],
  ["exfiltration", { uid: "TA0010", name: "Exfiltration" }],
  ["impact", { uid: "TA0040", name: "Impact" }],
])

const INITIAL_ACCESS = "initial-access"
const EXECUTION = "execution"
const PERSISTENCE = "persistence"
const PRIVILEGE_ESCALATION = "privilege-escalation"
const DEFENSE_EVASION = "defense-evasion"
const CREDENTIAL_ACCESS = "credential-access"
const DISCOVERY = "discovery"
const LATERAL_MOVEMENT = "lateral-movement"
const COLLECTION = "collection"
const COMMAND_AND_CONTROL = "command-and-control"
const RECONNAISSANCE = "reconnaissance"

/** ATT&CK lists Valid Accounts and its sub-techniques under these four tactics, in this order. */
const VALID_ACCOUNTS_TACTICS = [DEFENSE_EVASION, PERSISTENCE, PRIVILEGE_ESCALATION, INITIAL_ACCESS] as const

const TABLE: ReadonlyArray<Technique> = [
  { id: "T1021", name: "Remote Services", tactics: [LATERAL_MOVEMENT] },
  { id: "T1021.001", name: "Remote Services: Remote Desktop Protocol", tactics: [LATERAL_MOVEMENT] },
  { id: "T1021.002", name: "Remote Services: SMB/Windows Admin Shares", tactics: [LATERAL_MOVEMENT] },
  { id: "T1021.004", name: "Remote Services: SSH", tactics: [LATERAL_MOVEMENT] },
  { id: "T1021.005", name: "Remote Services: VNC", tactics: [LATERAL_MOVEMENT] },
  { id: "T1033", name: "System Owner/User Discovery", tactics: [DISCOVERY] },
  { id: "T1039", name: "Data from Network Shared Drive", tactics: [COLLECTION] },
  { id: "T1046", name: "Network Service Discovery", tactics: [DISCOVERY] },
  { id: "T1059", name: "Command and Scripting Interpreter", tactics: [EXECUTION] },
  { id: "T1059.004", name: "Command and Scripting Interpreter: Unix Shell", tactics: [EXECUTION] },
  { id: "T1078", name: "Valid Accounts", tactics: VALID_ACCOUNTS_TACTICS },
  { id: "T1078.001", name: "Valid Accounts: Default Accounts", tactics: VALID_ACCOUNTS_TACTICS },
  { id: "T1082", name: "System Information Discovery", tactics: [DISCOVERY] },
  { id: "T1083", name: "File and Directory Discovery", tactics: [DISCOVERY] },
  { id: "T1090", name: "Proxy", tactics: [COMMAND_AND_CONTROL] },
  { id: "T1105", name: "Ingress Tool Transfer", tactics: [COMMAND_AND_CONTROL] },
  { id: "T1110", name: "Brute Force", tactics: [CREDENTIAL_ACCESS] },
  { id: "T1110.001", name: "Brute Force: Password Guessing", tactics: [CREDENTIAL_ACCESS] },
  { id: "T1110.003", name: "Brute Force: Password Spraying", tactics: [CREDENTIAL_ACCESS] },
  { id: "T1110.004", name: "Brute Force: Credential Stuffing", tactics: [CREDENTIAL_ACCESS] },
  { id: "T1133", name: "External Remote Services", tactics: [PERSISTENCE, INITIAL_ACCESS] },
  { id: "T1190", name: "Exploit Public-Facing Application", tactics: [INITIAL_ACCESS] },
  { id: "T1213", name: "Data from Information Repositories", tactics: [COLLECTION] },
  {
    id: "T1213.003",
    name: "Data from Information Repositories: Code Repositories",
    tactics: [COLLECTION],
  },
  { id: "T1210", name: "Exploitation of Remote Services", tactics: [LATERAL_MOVEMENT] },
  { id: "T1557", name: "Adversary-in-the-Middle", tactics: [CREDENTIAL_ACCESS, COLLECTION] },
  {
    id: "T1557.001",
    name: "Adversary-in-the-Middle: LLMNR/NBT-NS Poisoning and SMB Relay",
    tactics: [CREDENTIAL_ACCESS, COLLECTION],
  },
  { id: "T1572", name: "Protocol Tunneling", tactics: [COMMAND_AND_CONTROL] },
  { id: "T1505", name: "Server Software Component", tactics: [PERSISTENCE] },
  { id: "T1505.003", name: "Server Software Component: Web Shell", tactics: [PERSISTENCE] },
  { id: "T1595", name: "Active Scanning", tactics: [RECONNAISSANCE] },
  { id: "T1595.001", name: "Active Scanning: Scanning IP Blocks", tactics: [RECONNAISSANCE] },
  { id: "T1595.002", name: "Active Scanning: Vulnerability Scanning", tactics: [RECONNAISSANCE] },
]

/** Every technique the service can report, keyed by ATT&CK id. */
export const TECHNIQUES: ReadonlyMap<string, Technique> = new Map(TABLE.map((t) => [t.id, t]))

/**
 * The technique with this ATT&CK id. Throws on an unknown id: the table and every reference to it are static, and the
 * catalog tests prove that each reference resolves, so a throw here is a programming error.
 */
export const techniqueById = (id: string): Technique => {
  const technique = TECHNIQUES.get(id)
  if (technique === undefined) throw new Error(`unknown ATT&CK technique id ${JSON.stringify(id)}`)
  return technique
}

/**
 * Payload tags (set by a sensor or by an ingest mapper on a single event) and the techniques they indicate. On a
 * single incident these add to the techniques derived from its event types (spec "Technique").
 */
export const TAG_TECHNIQUES: ReadonlyMap<string, ReadonlyArray<string>> = new Map<string, ReadonlyArray<string>>([
  // A login with a credential the organization planted: set by ingestion (OpenCanary's honeycred, a registered bait
  // pair), or by a sensor of the organization's own that knows its planted credentials.
  ["bait-credential", ["T1078"]],
  ["command-injection", ["T1190", "T1059"]],
  ["credential-stuffing", ["T1110.004"]],
  ["default-credentials", ["T1078.001"]],
  ["malware-download", ["T1105"]],
  ["password-spraying", ["T1110.003"]],
  ["path-traversal", ["T1190", "T1083"]],
  ["recon", ["T1595"]],
  ["scanner", ["T1595.002"]],
  ["sqli", ["T1190"]],
  ["system-discovery", ["T1082", "T1033"]],
  ["webshell", ["T1505.003"]],
  ["xss", ["T1190"]],
])

/** The payload tags that map to techniques, sorted (for documentation and validation messages). */
export const KNOWN_TAGS: ReadonlyArray<string> = [...TAG_TECHNIQUES.keys()].sort()

const byId = (a: Technique, b: Technique): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Techniques from several lists, each id once, sorted by id ("T1021" < "T1021.001" < "T1039"). */
export const mergeTechniques = (lists: Iterable<Iterable<Technique>>): ReadonlyArray<Technique> => {
  const seen = new Map<string, Technique>()
  for (const list of lists) {
    for (const technique of list) {
      if (!seen.has(technique.id)) seen.set(technique.id, technique)
    }
  }
  return [...seen.values()].sort(byId)
}

/** One list of techniques, each id once, sorted by id. */
export const sortTechniques = (techniques: Iterable<Technique>): ReadonlyArray<Technique> =>
  mergeTechniques([techniques])

/** The techniques indicated by these payload tags, each once, sorted by id. Tags without techniques are ignored. */
export const techniquesForTags = (tags: Iterable<string>): ReadonlyArray<Technique> => {
  const out: Array<Technique> = []
  for (const tag of tags) {
    for (const id of TAG_TECHNIQUES.get(tag) ?? []) out.push(techniqueById(id))
  }
  return sortTechniques(out)
}
