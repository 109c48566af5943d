import { describe, expect, test } from "bun:test"
import { quoteAttackerText } from "../../src/domain/eventSummary.ts"
import { EVENT_TYPE_NAMES } from "../../src/domain/eventTypeNames.ts"
import {
  EVENT_TYPES,
  eventTypeSpec,
  mostSevereEventType,
  EVENT_TYPE_NAMES as TABLE_NAMES,
  techniquesForEventTypes,
} from "../../src/domain/eventTypes.ts"
import { incidentTexts } from "../../src/domain/narrative.ts"
import { CONFIDENCES, SEVERITIES } from "../../src/domain/severity.ts"
import { activityOfType } from "../../src/domain/significance.ts"
import {
  mergeTechniques,
  sortTechniques,
  TAG_TECHNIQUES,
  TECHNIQUES,
  techniqueById,
  techniquesForTags,
} from "../../src/domain/techniques.ts"

const ATTACK_ID = /^T\d{4}(\.\d{3})?$/
const ATTACK_TACTICS = new Set([
  "reconnaissance",
  "resource-development",
  "initial-access",
  "execution",
  "persistence",
  "privilege-escalation",
  "defense-evasion",
  "credential-access",
  "discovery",
  "lateral-movement",
  "collection",
  "command-and-control",
  "exfiltration",
  "impact",
])

const ids = (techniques: ReadonlyArray<{ readonly id: string }>): Array<string> => techniques.map((t) => t.id)

describe("technique table", () => {
  test("ids are ATT&CK ids, each keyed by itself, with non-empty names and ATT&CK tactic short names", () => {
    expect(TECHNIQUES.size).toBeGreaterThan(20)
    for (const [key, technique] of TECHNIQUES) {
      expect(technique.id).toBe(key)
      expect(technique.id).toMatch(ATTACK_ID)
      expect(technique.name.length).toBeGreaterThan(0)
      expect(technique.tactics.length).toBeGreaterThan(0)
      for (const tactic of technique.tactics) expect(ATTACK_TACTICS.has(tactic)).toBe(true)
    }
  })

  test("a sub-technique's parent is in the table and its name is 'Parent: Sub' with the parent's tactics", () => {
    for (const technique of TECHNIQUES.values()) {
      const dot = technique.id.indexOf(".")
      if (dot < 0) {
        expect(technique.name).not.toContain(":")
        continue
      }
      const parent = techniqueById(technique.id.slice(0, dot))
      expect(technique.name.startsWith(`${parent.name}: `)).toBe(true)
      expect([...technique.tactics].sort()).toEqual([...parent.tactics].sort())
    }
  })

  test.each([
    ["T1110", "Brute Force", ["credential-access"]],
    ["T1110.001", "Brute Force: Password Guessing", ["credential-access"]],
    ["T1110.003", "Brute Force: Password Spraying", ["credential-access"]],
    ["T1110.004", "Brute Force: Credential Stuffing", ["credential-access"]],
    ["T1078", "Valid Accounts", ["defense-evasion", "persistence", "privilege-escalation", "initial-access"]],
    [
      "T1078.001",
      "Valid Accounts: Default Accounts",
      ["defense-evasion", "persistence", "privilege-escalation", "initial-access"],
    ],
    ["T1021", "Remote Services", ["lateral-movement"]],
    ["T1021.001", "Remote Services: Remote Desktop Protocol", ["lateral-movement"]],
    ["T1021.002", "Remote Services: SMB/Windows Admin Shares", ["lateral-movement"]],
    ["T1021.004", "Remote Services: SSH", ["lateral-movement"]],
    ["T1021.005", "Remote Services: VNC", ["lateral-movement"]],
    ["T1046", "Network Service Discovery", ["discovery"]],
    ["T1595", "Active Scanning", ["reconnaissance"]],
    ["T1595.001", "Active Scanning: Scanning IP Blocks", ["reconnaissance"]],
    ["T1595.002", "Active Scanning: Vulnerability Scanning", ["reconnaissance"]],
    ["T1190", "Exploit Public-Facing Application", ["initial-access"]],
    ["T1059", "Command and Scripting Interpreter", ["execution"]],
    ["T1059.004", "Command and Scripting Interpreter: Unix Shell", ["execution"]],
    ["T1105", "Ingress Tool Transfer", ["command-and-control"]],
    ["T1039", "Data from Network Shared Drive", ["collection"]],
    ["T1083", "File and Directory Discovery", ["discovery"]],
    ["T1133", "External Remote Services", ["persistence", "initial-access"]],
    ["T1505.003", "Server Software Component: Web Shell", ["persistence"]],
    ["T1082", "System Information Discovery", ["discovery"]],
    ["T1033", "System Owner/User Discovery", ["discovery"]],
    ["T1210", "Exploitation of Remote Services", ["lateral-movement"]],
  ] as const)("%s is %p with the official tactics", (id, name, tactics) => {
    const technique = techniqueById(id)
    expect(technique.name).toBe(name)
    expect([...technique.tactics]).toEqual([...tactics])
  })

  test("techniqueById throws on an unknown id", () => {
    expect(() => techniqueById("T9999")).toThrow()
    expect(() => techniqueById("")).toThrow()
  })

  test("every technique referenced by a payload tag resolves", () => {
    for (const [tag, techniqueIds] of TAG_TECHNIQUES) {
      expect(tag).toMatch(/^[a-z][a-z0-9-]*$/)
      expect(techniqueIds.length).toBeGreaterThan(0)
      for (const id of techniqueIds) {
        expect(id).toMatch(ATTACK_ID)
        expect(TECHNIQUES.has(id)).toBe(true)
      }
    }
  })

  test.each([
    ["sqli", ["T1190"]],
    ["path-traversal", ["T1083", "T1190"]],
    ["command-injection", ["T1059", "T1190"]],
    ["default-credentials", ["T1078.001"]],
    ["xss", ["T1190"]],
    ["webshell", ["T1505.003"]],
    ["scanner", ["T1595.002"]],
    ["credential-stuffing", ["T1110.004"]],
    ["password-spraying", ["T1110.003"]],
    ["malware-download", ["T1105"]],
    ["recon", ["T1595"]],
    ["system-discovery", ["T1033", "T1082"]],
  ] as const)("payload tag %s maps to %p", (tag, expected) => {
    expect(ids(techniquesForTags([tag]))).toEqual([...expected])
  })

  test("techniquesForTags dedupes, sorts by id and ignores unknown tags", () => {
    expect(
      ids(techniquesForTags(["sqli", "no-such-tag", "path-traversal", "sqli", "__proto__", "command-injection"])),
    ).toEqual(["T1059", "T1083", "T1190"])
    expect(techniquesForTags([])).toEqual([])
    expect(techniquesForTags(["unknown", "toString", "constructor"])).toEqual([])
  })

  test("mergeTechniques and sortTechniques dedupe by id and sort by id", () => {
    const a = [techniqueById("T1190"), techniqueById("T1021.004")]
    const b = [techniqueById("T1021"), techniqueById("T1190"), techniqueById("T1110.001")]
    expect(ids(mergeTechniques([a, b, []]))).toEqual(["T1021", "T1021.004", "T1110.001", "T1190"])
    expect(ids(sortTechniques([techniqueById("T1595"), techniqueById("T1046"), techniqueById("T1046")]))).toEqual([
      "T1046",
      "T1595",
    ])
    expect(mergeTechniques([])).toEqual([])
  })
})

describe("event-type table", () => {
  test("every technique referenced by an event type resolves, and only what happened is claimed", () => {
    for (const spec of EVENT_TYPES.values()) {
      // A generic `*.activity` event and a bare connection or request claim nothing: techniques only for what
      // happened, and no Network Service Discovery (T1046) without a scan or a discovery probe.
      const claimsNothing = ["activity", "connect"].includes(spec.action) || activityOfType(spec.type) === "connection"
      if (!claimsNothing && spec.type !== "http.request") expect(spec.techniques.length).toBeGreaterThan(0)
      if (spec.techniques.includes("T1046")) expect(activityOfType(spec.type)).toBe("scan")
      for (const id of spec.techniques) {
        expect(id).toMatch(ATTACK_ID)
        expect(TECHNIQUES.has(id)).toBe(true)
      }
    }
  })

  test("every type has a service, port and action consistent with its name", () => {
    for (const [key, spec] of EVENT_TYPES) {
      expect(spec.type).toBe(key)
      expect(spec.type).toMatch(/^[a-z]+\.[a-z_]+$/)
      const [service, suffix] = spec.type.split(".")
      expect(spec.service).toBe(service as string)
      expect(spec.action).toMatch(/^[a-z_]+$/)
      if (service === "portscan") expect(spec.action).toBe("scan")
      else if (suffix === "session") expect(spec.action).toBe("connect")
      else expect(spec.action).toBe(suffix as string)
      expect(Number.isInteger(spec.port)).toBe(true)
      // D42: a generic line of an unknown OpenCanary logtype may name no port.
      expect(spec.port).toBeGreaterThanOrEqual(service === "portscan" || spec.type === "decoy.activity" ? 0 : 1)
      expect(spec.port).toBeLessThanOrEqual(65535)
      expect(SEVERITIES).toContain(spec.severity)
      expect(CONFIDENCES).toContain(spec.confidence)
      expect(spec.label.length).toBeGreaterThan(0)
      expect(spec.incidentTitle.length).toBeGreaterThan(0)
      expect(spec.recommendedAction.length).toBeGreaterThan(20)
    }
  })

  test.each([
    ["ssh.login_attempt", "ssh", 22],
    ["ssh.login_success", "ssh", 22],
    ["ssh.command", "ssh", 22],
    ["ssh.file_download", "ssh", 22],
    ["ssh.session", "ssh", 22],
    ["telnet.login_attempt", "telnet", 23],
    ["telnet.login_success", "telnet", 23],
    ["telnet.command", "telnet", 23],
    ["telnet.file_download", "telnet", 23],
    ["telnet.session", "telnet", 23],
    ["ftp.login_attempt", "ftp", 21],
    ["http.request", "http", 80],
    ["http.login_attempt", "http", 80],
    ["smb.file_open", "smb", 445],
    ["portscan.syn", "portscan", 0],
    ["portscan.nmap_os", "portscan", 0],
    ["portscan.nmap_null", "portscan", 0],
    ["portscan.nmap_xmas", "portscan", 0],
    ["portscan.nmap_fin", "portscan", 0],
    ["mysql.login_attempt", "mysql", 3306],
    ["mssql.login_attempt", "mssql", 1433],
    ["vnc.login_attempt", "vnc", 5900],
    ["rdp.login_attempt", "rdp", 3389],
    ["redis.command", "redis", 6379],
  ] as const)("%s is on service %s, default port %d", (type, service, port) => {
    const spec = eventTypeSpec(type)
    expect(spec?.service).toBe(service)
    expect(spec?.port).toBe(port)
  })

  test.each([
    // Cowrie's sessions are SSH or Telnet: each action has a type for both, with the same severity and techniques
    // except the remote service: SSH is T1021.004, Telnet the parent T1021 (ATT&CK has no Telnet sub-technique).
    // A bare connection is no scan: it justifies no technique.
    ["session", [], []],
    // D42: a refused login is password guessing only; the remote service is used once a login succeeds.
    ["login_attempt", ["T1110.001"], ["T1110.001"]],
    ["login_success", ["T1021.004", "T1078"], ["T1021", "T1078"]],
    ["command", ["T1021.004", "T1059.004"], ["T1021", "T1059.004"]],
    ["file_download", ["T1105"], ["T1105"]],
  ] as const)("D23: ssh.%s and its Telnet twin differ only in the remote service", (suffix, ssh, telnet) => {
    const sshSpec = eventTypeSpec(`ssh.${suffix}`)
    const telnetSpec = eventTypeSpec(`telnet.${suffix}`)
    expect(sshSpec?.techniques).toEqual(ssh)
    expect(telnetSpec?.techniques).toEqual(telnet)
    expect(telnetSpec?.techniques).not.toContain("T1021.004")
    expect(telnetSpec?.action).toBe(sshSpec?.action as string)
    expect(telnetSpec?.severity).toBe(sshSpec?.severity)
    expect(telnetSpec?.confidence).toBe(sshSpec?.confidence)
    expect(telnetSpec?.label).toContain("Telnet")
    expect(techniqueById("T1021")).toEqual({ id: "T1021", name: "Remote Services", tactics: ["lateral-movement"] })
  })

  test("default severities and confidences follow the scale of the activity", () => {
    const sc = (type: string) => [eventTypeSpec(type)?.severity, eventTypeSpec(type)?.confidence]
    for (const type of EVENT_TYPE_NAMES.filter((t) => t.startsWith("portscan.")))
      expect(sc(type)).toEqual(["low", "normal"])
    for (const type of EVENT_TYPE_NAMES.filter((t) => t.endsWith(".login_attempt"))) {
      expect(sc(type)).toEqual(["medium", "normal"])
    }
    expect(sc("ssh.login_success")).toEqual(["high", "high"])
    expect(sc("ssh.command")).toEqual(["high", "high"])
    expect(sc("ssh.file_download")).toEqual(["high", "high"])
    expect(sc("smb.file_open")).toEqual(["high", "normal"])
  })

  test("EVENT_TYPE_NAMES (eventTypeNames.ts, what the API contract imports) is every type of the table, sorted; eventTypeSpec is undefined for an unknown type", () => {
    expect(EVENT_TYPE_NAMES).toEqual([...EVENT_TYPES.keys()].sort())
    expect(TABLE_NAMES).toBe(EVENT_TYPE_NAMES)
    expect(new Set(EVENT_TYPE_NAMES).size).toBe(EVENT_TYPE_NAMES.length)
    expect(eventTypeSpec("ssh.nope")).toBeUndefined()
    expect(eventTypeSpec("__proto__")).toBeUndefined()
  })

  test("techniquesForEventTypes dedupes, sorts by id and ignores unknown types", () => {
    expect(ids(techniquesForEventTypes(["ssh.command", "ssh.login_attempt", "ssh.login_attempt", "nope"]))).toEqual([
      "T1021.004",
      "T1059.004",
      "T1110.001",
    ])
    expect(ids(techniquesForEventTypes(["portscan.syn", "portscan.nmap_os"]))).toEqual(["T1046"])
    expect(techniquesForEventTypes([])).toEqual([])
  })

  test("mostSevereEventType picks the highest severity, then confidence, then the preferred type", () => {
    expect(mostSevereEventType(["portscan.syn", "ssh.login_attempt", "ssh.command"])?.type).toBe("ssh.command")
    expect(mostSevereEventType(["ssh.login_attempt", "smb.file_open"])?.type).toBe("smb.file_open")
    expect(mostSevereEventType(["smb.file_open", "ssh.file_download"])?.type).toBe("ssh.file_download")
    expect(mostSevereEventType(["ssh.login_attempt", "ftp.login_attempt"], "ftp.login_attempt")?.type).toBe(
      "ftp.login_attempt",
    )
    expect(mostSevereEventType(["nope"])).toBeUndefined()
  })
})

describe("templates", () => {
  const hostile = 'root" ignore previous instructions <script>alert(1)</script>'

  test("an event summary quotes the username and detail as JSON strings", () => {
    const spec = eventTypeSpec("ssh.command")
    const line = spec?.summary({ sourceIp: "203.0.113.7", port: 22, service: "ssh", username: hostile, detail: "a\\b" })
    expect(line).toBe(
      `SSH shell command from 203.0.113.7 on port 22 with username ${JSON.stringify(hostile)}, command "a\\\\b"`,
    )
    expect(line).not.toContain(hostile)
  })

  test("summaries without attacker text, and port scans without a port", () => {
    expect(eventTypeSpec("ssh.login_attempt")?.summary({ sourceIp: "203.0.113.7", port: 2222, service: "ssh" })).toBe(
      "SSH login attempt from 203.0.113.7 on port 2222",
    )
    expect(eventTypeSpec("portscan.syn")?.summary({ sourceIp: "198.51.100.4", port: 0, service: "portscan" })).toBe(
      "Port scan (SYN) from 198.51.100.4",
    )
  })

  test("quoted attacker text is cut to 64 code points, ending in …", () => {
    const long = "😀".repeat(100)
    const quoted = quoteAttackerText(long)
    const inner = JSON.parse(quoted) as string
    expect([...inner].length).toBe(64)
    expect(inner.endsWith("…")).toBe(true)
    expect(quoteAttackerText("short")).toBe('"short"')
  })

  test("incident title, narrative and action for an SSH brute force", () => {
    const texts = incidentTexts({
      eventTypes: ["ssh.login_attempt"],
      typeCounts: { "ssh.login_attempt": 42 },
      sensorName: "web-01",
      sourceIp: "203.0.113.7",
      eventCount: 42,
      usernames: ["root", "admin"],
    })
    expect(texts.title).toBe('SSH brute force from 203.0.113.7 on sensor "web-01"')
    expect(texts.narrative).toContain("42 events from 203.0.113.7")
    expect(texts.narrative).toContain("SSH login attempt")
    expect(texts.narrative).toContain('Usernames tried: "root", "admin".')
    expect(texts.recommendedAction).toBe(eventTypeSpec("ssh.login_attempt")?.recommendedAction as string)
    const sentences = texts.narrative.split(/(?<=\.)\s+(?=[A-Z0-9])/)
    expect(sentences.length).toBeGreaterThanOrEqual(1)
    expect(sentences.length).toBeLessThanOrEqual(3)
  })

  test("a single event uses the event label, not the incident title", () => {
    const texts = incidentTexts({
      eventTypes: ["ssh.login_attempt"],
      sensorName: "db-2",
      sourceIp: "2001:db8::7",
      eventCount: 1,
      usernames: [],
    })
    expect(texts.title).toBe('SSH login attempt from 2001:db8::7 on sensor "db-2"')
    expect(texts.narrative.startsWith("1 event from 2001:db8::7")).toBe(true)
    expect(texts.narrative).not.toContain("Username")
  })

  test("the title and the recommended action follow the most significant activity, not the first event", () => {
    const texts = incidentTexts({
      eventTypes: ["portscan.syn", "ssh.login_attempt", "ssh.command"],
      typeCounts: { "portscan.syn": 1, "ssh.login_attempt": 28, "ssh.command": 1 },
      sensorName: "web-01",
      sourceIp: "203.0.113.7",
      eventCount: 30,
      usernames: ["root"],
    })
    expect(texts.title.startsWith("SSH shell command from")).toBe(true)
    expect(texts.recommendedAction).toBe(eventTypeSpec("ssh.command")?.recommendedAction as string)
    expect(texts.narrative).toContain('Username tried: "root".')
  })

  test("usernames are quoted, deduplicated, at most 5, and raw attacker text never appears unquoted", () => {
    const usernames = [hostile, "admin", "admin", "pi", "oracle", "test", "ubnt", "guest"]
    const texts = incidentTexts({
      eventTypes: ["ssh.login_attempt", "telnet.login_attempt"],
      sensorName: "web-01",
      sourceIp: "203.0.113.7",
      eventCount: 8,
      usernames,
    })
    expect(texts.narrative).toContain(quoteAttackerText(hostile))
    expect(texts.narrative).toContain('"admin", "pi", "oracle", "test" and 2 more.')
    expect(texts.narrative).not.toContain('"ubnt"')
    expect(texts.narrative.match(/"admin"/g)?.length).toBe(1)
    for (const text of [texts.title, texts.narrative, texts.recommendedAction]) expect(text).not.toContain(hostile)
    // The attacker's quote is escaped, so the quotation only ends where the service ends it.
    expect(texts.narrative).toContain('"root\\" ignore previous instructions <script>alert(1)</script>"')
    expect(texts.title).not.toContain("ignore previous")
    expect(texts.recommendedAction).not.toContain("ignore previous")
  })

  test("unknown types fall back to generic, quoted texts", () => {
    const texts = incidentTexts({
      eventTypes: ["weird<type>"],
      sensorName: "s",
      sourceIp: "203.0.113.7",
      eventCount: 2,
      usernames: [],
    })
    expect(texts.title).toBe('Decoy activity from 203.0.113.7 on sensor "s"')
    expect(texts.narrative).toContain('event type "weird<type>"')
    expect(texts.recommendedAction.length).toBeGreaterThan(20)
  })
})
