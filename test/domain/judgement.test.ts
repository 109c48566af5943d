import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import ipaddr from "ipaddr.js"
import { incidentTexts } from "../../src/domain/narrative.ts"
import {
  classifySource,
  DEFAULT_NETWORKS,
  formatNetworkList,
  type OwnNetwork,
  parseNetworkList,
} from "../../src/domain/networks.ts"
import {
  type Activity,
  activityOfType,
  incidentSeverity,
  judgeActivity,
  stepUp,
} from "../../src/domain/significance.ts"

const runs = { numRuns: Number(process.env.FC_RUNS ?? 200) }
const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join("."))

/** The reference answer: every network holding the address, by ipaddr.js's own CIDR match, longest prefix first. */
const reference = (ip: string, networks: ReadonlyArray<OwnNetwork>): OwnNetwork | null => {
  const address = ipaddr.process(ip)
  const holding = networks
    .map((n, index) => ({ n, index, cidr: ipaddr.parseCIDR(n.cidr) }))
    .filter(({ cidr }) => cidr[0].kind() === address.kind() && address.match(cidr))
    .sort((a, b) => b.cidr[1] - a.cidr[1] || a.index - b.index)
  return holding[0]?.n ?? null
}

describe("inside or outside the organization's networks", () => {
  test("by default the private ranges are inside and everything else outside", () => {
    expect(classifySource("10.20.30.40", DEFAULT_NETWORKS).scope).toBe("internal")
    expect(classifySource("172.31.255.255", DEFAULT_NETWORKS).network?.cidr).toBe("172.16.0.0/12")
    expect(classifySource("172.32.0.1", DEFAULT_NETWORKS).scope).toBe("external")
    expect(classifySource("192.168.1.9", DEFAULT_NETWORKS).network?.cidr).toBe("192.168.0.0/16")
    expect(classifySource("fd12:3456::1", DEFAULT_NETWORKS).network?.cidr).toBe("fc00::/7")
    expect(classifySource("203.0.113.7", DEFAULT_NETWORKS)).toEqual({ scope: "external", network: null })
    expect(classifySource("2001:db8::1", DEFAULT_NETWORKS).scope).toBe("external")
  })

  test("an IPv4 address written as IPv4-mapped IPv6 is judged as the IPv4 address it is", () => {
    for (const spelling of ["::ffff:10.1.2.3", "::FFFF:a01:203", "0:0:0:0:0:ffff:10.1.2.3"]) {
      expect(classifySource(spelling, DEFAULT_NETWORKS).network?.cidr).toBe("10.0.0.0/8")
    }
  })

  test("overlapping networks: the most specific one names the source, whatever the list's order", () => {
    const office: OwnNetwork = { cidr: "10.20.0.0/16", label: "Office LAN" }
    const servers: OwnNetwork = { cidr: "10.20.5.0/24", label: "Server VLAN" }
    const all: OwnNetwork = { cidr: "10.0.0.0/8", label: "Corporate" }
    for (const list of [
      [all, office, servers],
      [servers, office, all],
      [office, all, servers],
    ]) {
      expect(classifySource("10.20.5.9", list).network).toEqual(servers)
      expect(classifySource("10.20.6.9", list).network).toEqual(office)
      expect(classifySource("10.99.0.1", list).network).toEqual(all)
      expect(classifySource("11.0.0.1", list).scope).toBe("external")
    }
  })

  test("property: IPv4 classification agrees with a CIDR match over any list of networks", () => {
    const network = fc
      .tuple(v4, fc.integer({ min: 0, max: 32 }), fc.string({ maxLength: 10 }))
      .map(([ip, prefix, label]): OwnNetwork => {
        const base = ipaddr.IPv4.networkAddressFromCIDR(`${ip}/${prefix}`).toString()
        return { cidr: `${base}/${prefix}`, label: label || "n" }
      })
    fc.assert(
      fc.property(v4, fc.array(network, { maxLength: 8 }), (ip, networks) => {
        const expected = reference(ip, networks)
        const got = classifySource(ip, networks)
        expect(got.network?.cidr ?? null).toBe(expected?.cidr ?? null)
        expect(got.scope).toBe(expected === null ? "external" : "internal")
        // The same address spelled as IPv4-mapped IPv6 gets the same answer.
        expect(classifySource(`::ffff:${ip}`, networks)).toEqual(got)
      }),
      runs,
    )
  })

  test("property: IPv6 classification agrees with a CIDR match, and IPv4 networks never hold IPv6 sources", () => {
    const v6 = fc
      .array(fc.nat(0xffff), { minLength: 8, maxLength: 8 })
      .map((p) => p.map((x) => x.toString(16)).join(":"))
    const network = fc.tuple(v6, fc.integer({ min: 0, max: 128 })).map(([ip, prefix]): OwnNetwork => {
      const base = ipaddr.IPv6.networkAddressFromCIDR(`${ip}/${prefix}`).toString()
      return { cidr: `${base}/${prefix}`, label: "v6" }
    })
    fc.assert(
      fc.property(v6, fc.array(network, { maxLength: 6 }), (ip, networks) => {
        const address = ipaddr.IPv6.parse(ip)
        if (address.isIPv4MappedAddress()) return
        const withV4 = [...networks, { cidr: "0.0.0.0/0", label: "every IPv4" }]
        expect(classifySource(ip, withV4).network?.cidr ?? null).toBe(reference(ip, networks)?.cidr ?? null)
      }),
      runs,
    )
  })

  test("an admin's list is read one `cidr label` a line, host bits cleared, and refused with the line at fault", () => {
    const read = parseNetworkList("10.20.0.7/16 Office LAN\n# a comment\n\n2001:DB8::/32   Lab\n192.0.2.1")
    expect(read).toEqual({
      networks: [
        { cidr: "10.20.0.0/16", label: "Office LAN" },
        { cidr: "2001:db8::/32", label: "Lab" },
        { cidr: "192.0.2.1/32", label: "192.0.2.1/32" },
      ],
    })
    if ("networks" in read) expect(parseNetworkList(formatNetworkList(read.networks))).toEqual(read)
    expect(parseNetworkList("10.0.0.0/8 ok\n10.0.0.0/33 bad")).toEqual({
      problem: { line: 2, reason: expect.stringContaining("not an address or a network") },
    })
    expect(parseNetworkList("10.0.0.0/8 a\u0007b")).toEqual({
      problem: { line: 1, reason: "a label cannot hold control characters" },
    })
  })
})

describe("the most significant activity", () => {
  test("the documented order: bait > commands > login success > transfer > exploit > brute force > attempt > scan > connection", () => {
    const ladder: Array<[Record<string, number>, boolean, Activity]> = [
      [{ "telnet.login_attempt": 1, "ssh.command": 3 }, true, "bait_credential"],
      [{ "ssh.command": 1, "ssh.login_success": 1, "ssh.file_download": 1 }, false, "commands"],
      [{ "ssh.login_success": 1, "ssh.file_download": 4 }, false, "login_success"],
      [{ "ssh.file_download": 1, "ssh.exploit_attempt": 3 }, false, "transfer"],
      [{ "ssh.exploit_attempt": 1, "ssh.login_attempt": 30 }, false, "exploit_attempt"],
      [{ "ssh.login_attempt": 2, "portscan.syn": 9 }, false, "brute_force"],
      [{ "ssh.login_attempt": 1, "portscan.syn": 9 }, false, "login_attempt"],
      [{ "portscan.syn": 1, "ssh.session": 40 }, false, "scan"],
      [{ "ssh.session": 2 }, false, "connection"],
    ]
    for (const [counts, bait, activity] of ladder) expect(judgeActivity(counts, bait).activity).toBe(activity)
  })

  test("brute force counts login attempts across services, and the service with the most leads", () => {
    const judged = judgeActivity({ "mysql.login_attempt": 3, "ftp.login_attempt": 30, "telnet.session": 1 }, false)
    expect(judged.activity).toBe("brute_force")
    expect(judged.primary?.type).toBe("ftp.login_attempt")
    expect(judged.otherServices).toEqual(["mysql", "telnet"])
    expect(judgeActivity({ "ssh.login_attempt": 1, "telnet.login_attempt": 1 }, false).activity).toBe("brute_force")
  })

  test("severity: the events' highest, the activity's floor, at least high from inside, one step up when linked", () => {
    const base = { eventsSeverity: "medium" as const, internal: false, linked: false }
    expect(incidentSeverity({ ...base, activity: "brute_force" })).toBe("medium")
    expect(incidentSeverity({ ...base, activity: "commands" })).toBe("high")
    expect(incidentSeverity({ ...base, activity: "bait_credential" })).toBe("critical")
    expect(incidentSeverity({ ...base, activity: "scan", eventsSeverity: "low", internal: true })).toBe("high")
    expect(incidentSeverity({ ...base, activity: "scan", eventsSeverity: "low", linked: true })).toBe("medium")
    expect(incidentSeverity({ ...base, activity: "scan", internal: true, linked: true })).toBe("critical")
    expect(stepUp("critical")).toBe("critical")
  })

  test("every event type has an activity, and only scans and probes are scans", () => {
    expect(activityOfType("portscan.syn")).toBe("scan")
    expect(activityOfType("ssh.session")).toBe("connection")
    expect(activityOfType("tcp.connection")).toBe("connection")
    expect(activityOfType("ssh.port_forward")).toBe("commands")
    expect(activityOfType("no.such_type")).toBe("connection")
  })
})

describe("the texts say what matters first", () => {
  const common = { sensorName: "web-01", usernames: ["admin"] }

  test("a multi-service incident is titled by its most significant activity and says how many other services", () => {
    const texts = incidentTexts({
      ...common,
      sourceIp: "203.0.113.9",
      eventTypes: [
        "ftp.login_attempt",
        "http.login_attempt",
        "mysql.login_attempt",
        "telnet.login_success",
        "ssh.session",
      ],
      typeCounts: {
        "ftp.login_attempt": 20,
        "http.login_attempt": 10,
        "mysql.login_attempt": 5,
        "telnet.login_success": 1,
        "ssh.session": 21,
      },
      eventCount: 57,
    })
    expect(texts.title).toBe(
      'Telnet login with valid credentials and 4 other services from 203.0.113.9 on sensor "web-01"',
    )
  })

  test("single attempts spread over services are no one service's brute force; a bait names its login", () => {
    const spread = incidentTexts({
      ...common,
      sourceIp: "203.0.113.9",
      eventTypes: ["ftp.login_attempt", "mysql.login_attempt", "ssh.login_attempt"],
      typeCounts: { "ftp.login_attempt": 1, "mysql.login_attempt": 1, "ssh.login_attempt": 1 },
      eventCount: 3,
    })
    expect(spread.title).toBe('Login attempts on 3 services from 203.0.113.9 on sensor "web-01"')
    const bait = incidentTexts({
      ...common,
      sourceIp: "203.0.113.9",
      eventTypes: ["ssh.command", "ssh.login_success", "ssh.login_attempt"],
      typeCounts: { "ssh.command": 9, "ssh.login_success": 1, "ssh.login_attempt": 4 },
      eventCount: 14,
      bait: true,
    })
    expect(bait.title).toStartWith("Bait credential used: SSH login with valid credentials from")
  })

  test("a bait credential leads the title, the narrative and the advice", () => {
    const texts = incidentTexts({
      ...common,
      sourceIp: "203.0.113.9",
      eventTypes: ["telnet.login_attempt"],
      typeCounts: { "telnet.login_attempt": 2 },
      eventCount: 2,
      bait: true,
    })
    expect(texts.title).toBe('Bait credential used: Telnet login attempt from 203.0.113.9 on sensor "web-01"')
    expect(texts.narrative.startsWith("A bait credential was used")).toBe(true)
    expect(texts.recommendedAction).toContain("planted")
  })

  test("an inside source is said in the title, the narrative and the advice, with the network's label", () => {
    const texts = incidentTexts({
      ...common,
      sourceIp: "10.20.1.5",
      eventTypes: ["portscan.syn"],
      typeCounts: { "portscan.syn": 12 },
      eventCount: 12,
      insideNetwork: { cidr: "10.20.0.0/16", label: "Office LAN" },
      otherSensors: 2,
    })
    expect(texts.title).toBe('Port scan from inside your network (Office LAN): 10.20.1.5 on sensor "web-01"')
    expect(texts.narrative).toContain("The source is inside your network (Office LAN), 10.20.0.0/16")
    expect(texts.narrative).toContain("2 other decoy sensors")
    expect(texts.recommendedAction.startsWith("The source is one of your own machines (Office LAN)")).toBe(true)
  })
})
