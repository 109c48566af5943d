import { describe, expect, test } from "bun:test"
import {
  STIX_DESCRIPTION_MAX,
  type StixIncident,
  type StixObject,
  stixObjectsFor,
  TLP2_EXTENSION_ID,
  TLP2_MARKING_IDS,
} from "../../src/domain/stix.ts"
import { techniqueById } from "../../src/domain/techniques.ts"
import { stixSchemaErrors } from "../support/schemas.ts"

/**
 * The STIX 2.1 objects made of an organization's incidents, validated against the OASIS JSON schemas (copied unchanged
 * into test/fixtures/stix2-json-schemas, see its README).
 */

const ORG_ID = "org_01JD000000000000000000000A"
const SENSOR_A = { id: "sen_01JD00000000000000000000SA", name: "dmz-ssh-01" }
const SENSOR_B = { id: "sen_01JD00000000000000000000SB", name: "office-fileshare" }
const HOSTILE = "'] OR [ipv4-addr:value = '0.0.0.0/0'] <script>alert(1)</script> \u001b[31m"

const incident = (over: Partial<StixIncident> & Pick<StixIncident, "id" | "sourceIp">): StixIncident => ({
  title: "SSH brute force",
  narrative: "Repeated SSH logins.",
  sensor: SENSOR_A,
  eventCount: 1,
  baitCredentialUsed: false,
  firstSeenAt: new Date("2026-11-20T10:00:00.000Z"),
  lastSeenAt: new Date("2026-11-20T10:05:00.000Z"),
  techniques: [],
  source: { scope: "external" },
  ...over,
})

/** An external SSH brute force, a bait credential login, an IPv6 source, an internal source. */
const INCIDENTS: ReadonlyArray<StixIncident> = [
  incident({
    id: "inc_01JD0000000000000000000001",
    sourceIp: "203.0.113.7",
    title: `SSH brute force: root ${HOSTILE}`,
    narrative: `The attacker ran ${HOSTILE}`,
    eventCount: 412,
    firstSeenAt: new Date("2026-11-20T10:00:00.123Z"),
    lastSeenAt: new Date("2026-11-20T11:30:00.456Z"),
    techniques: [techniqueById("T1110.001"), techniqueById("T1021.004")],
  }),
  incident({
    id: "inc_01JD0000000000000000000002",
    sourceIp: "203.0.113.7",
    sensor: SENSOR_B,
    title: "Bait credential used on office-fileshare",
    eventCount: 3,
    baitCredentialUsed: true,
    firstSeenAt: new Date("2026-11-22T08:00:00.000Z"),
    lastSeenAt: new Date("2026-11-22T08:01:00.000Z"),
    techniques: [techniqueById("T1078")],
  }),
  incident({
    id: "inc_01JD0000000000000000000003",
    sourceIp: "2001:db8::66",
    title: "HTTP scan",
    eventCount: 20,
    techniques: [techniqueById("T1595.002")],
  }),
  incident({
    id: "inc_01JD0000000000000000000004",
    sourceIp: "10.20.0.15",
    sensor: SENSOR_B,
    title: "SMB logon from the office LAN",
    eventCount: 9,
    techniques: [techniqueById("T1021.002")],
    source: { scope: "internal" },
  }),
]

const build = (incidents = INCIDENTS, options = {}) => stixObjectsFor("Example Corp", ORG_ID, incidents, options)
const ofType = <T extends StixObject["type"]>(objects: ReadonlyArray<StixObject>, type: T) =>
  objects.filter((o): o is Extract<StixObject, { type: T }> => o.type === type)

describe("STIX objects of an organization's incidents", () => {
  const objects = build()

  test("every object validates against the OASIS STIX 2.1 schemas", () => {
    expect(objects.length).toBeGreaterThan(0)
    for (const object of objects)
      expect({ id: object.id, errors: stixSchemaErrors(object) }).toEqual({ id: object.id, errors: undefined })
    expect(new Set(objects.map((o) => o.type))).toEqual(
      new Set(["marking-definition", "identity", "attack-pattern", "indicator", "sighting"]),
    )
  })

  test("the schemas refuse objects made invalid", () => {
    const indicator = ofType(objects, "indicator")[0]
    const sighting = ofType(objects, "sighting")[0]
    const identity = ofType(objects, "identity")[0]
    expect(indicator).toBeDefined()
    expect(stixSchemaErrors({ ...indicator, valid_from: "2026-11-20 10:00" })).toBeDefined()
    const { pattern: _pattern, ...withoutPattern } = indicator as NonNullable<typeof indicator>
    expect(stixSchemaErrors(withoutPattern)).toBeDefined()
    expect(stixSchemaErrors({ ...indicator, id: "indicator--not-a-uuid" })).toBeDefined()
    expect(stixSchemaErrors({ ...sighting, where_sighted_refs: [indicator?.id] })).toBeDefined()
    expect(stixSchemaErrors({ ...sighting, count: 1_000_000_000 })).toBeDefined()
    expect(stixSchemaErrors({ ...identity, created: "2026-11-20T10:00:00Z" })).toBeDefined()
    expect(stixSchemaErrors({ ...objects[0], extensions: {} })).toBeDefined()
  })

  test("the bundle holds the TLP:AMBER marking by default and every other object references it", () => {
    const markings = ofType(objects, "marking-definition")
    expect(markings).toEqual([
      {
        type: "marking-definition",
        spec_version: "2.1",
        id: "marking-definition--55d920b0-5e8b-4f79-9ee9-91f868d9b421",
        created: "2022-10-01T00:00:00.000Z",
        name: "TLP:AMBER",
        extensions: { [TLP2_EXTENSION_ID]: { extension_type: "property-extension", tlp_2_0: "amber" } },
      },
    ])
    for (const object of objects) {
      if (object.type !== "marking-definition") expect(object.object_marking_refs).toEqual([TLP2_MARKING_IDS.amber])
    }
    const clear = build(INCIDENTS, { tlp: "clear" })
    expect(clear[0]?.id).toBe("marking-definition--94868c89-83c2-464b-929b-a1a8aa3c8487")
    expect(stixSchemaErrors(clear[0])).toBeUndefined()
    for (const object of clear.slice(1)) {
      expect("object_marking_refs" in object && object.object_marking_refs).toEqual([TLP2_MARKING_IDS.clear])
    }
  })

  test("an indicator per external address, none for the internal one", () => {
    const indicators = ofType(objects, "indicator")
    expect(indicators.map((i) => i.pattern)).toEqual([
      "[ipv6-addr:value = '2001:db8::66']",
      "[ipv4-addr:value = '203.0.113.7']",
    ])
    expect(JSON.stringify(objects)).not.toContain("10.20.0.15")
    expect(JSON.stringify(objects)).not.toContain("inc_01JD0000000000000000000004")
    const v4 = indicators.find((i) => i.pattern.includes("203.0.113.7"))
    expect(v4).toMatchObject({
      pattern_type: "stix",
      indicator_types: ["malicious-activity"],
      valid_from: "2026-11-20T10:00:00.123Z",
      // last seen (22 Nov 08:01) plus the default 30 days
      valid_until: "2026-12-22T08:01:00.000Z",
      created: "2026-11-20T10:00:00.123Z",
      modified: "2026-11-22T08:01:00.000Z",
      kill_chain_phases: [
        { kill_chain_name: "mitre-attack", phase_name: "initial-access" },
        { kill_chain_name: "mitre-attack", phase_name: "persistence" },
        { kill_chain_name: "mitre-attack", phase_name: "privilege-escalation" },
        { kill_chain_name: "mitre-attack", phase_name: "defense-evasion" },
        { kill_chain_name: "mitre-attack", phase_name: "credential-access" },
        { kill_chain_name: "mitre-attack", phase_name: "lateral-movement" },
      ],
    })
    const longer = ofType(build(INCIDENTS, { indicatorLifetimeDays: 90 }), "indicator")
    expect(longer.find((i) => i.pattern.includes("203.0.113.7"))?.valid_until).toBe("2027-02-20T08:01:00.000Z")
    expect(() => build(INCIDENTS, { indicatorLifetimeDays: 0 })).toThrow(RangeError)
    expect(() => build(INCIDENTS, { indicatorLifetimeDays: 1.5 })).toThrow(RangeError)
  })

  test("a sighting per external incident, of its address's indicator, where its sensor saw it", () => {
    const sightings = ofType(objects, "sighting")
    const indicators = ofType(objects, "indicator")
    const identities = ofType(objects, "identity")
    expect(sightings).toHaveLength(3)
    const bait = sightings.find((s) => s.description.includes("inc_01JD0000000000000000000002"))
    const v4 = indicators.find((i) => i.pattern.includes("203.0.113.7"))
    const sensorB = identities.find((i) => i.name === "office-fileshare")
    expect(sensorB?.identity_class).toBe("system")
    expect(bait).toMatchObject({
      sighting_of_ref: v4?.id,
      first_seen: "2026-11-22T08:00:00.000Z",
      last_seen: "2026-11-22T08:01:00.000Z",
      count: 3,
      where_sighted_refs: [sensorB?.id],
    })
    expect(bait?.description).toContain("bait credential")
    const ids = new Set(objects.map((o) => o.id))
    for (const s of sightings) {
      expect(ids.has(s.sighting_of_ref)).toBe(true)
      for (const ref of s.where_sighted_refs) expect(ids.has(ref)).toBe(true)
    }
    const organization = identities.find((i) => i.identity_class === "organization")
    expect(organization?.name).toBe("Example Corp")
    for (const object of objects) {
      if ("created_by_ref" in object && object.created_by_ref !== undefined) {
        expect(object.created_by_ref).toBe(organization?.id as string)
      }
    }
  })

  test("attack patterns carry their MITRE ATT&CK reference", () => {
    const patterns = ofType(objects, "attack-pattern")
    expect(patterns.map((p) => p.external_references[0]?.external_id)).toEqual([
      "T1021.004",
      "T1078",
      "T1110.001",
      "T1595.002",
    ])
    expect(patterns.find((p) => p.name === "Brute Force: Password Guessing")?.external_references).toEqual([
      { source_name: "mitre-attack", external_id: "T1110.001", url: "https://attack.mitre.org/techniques/T1110/001/" },
    ])
  })

  test("ids and the whole output are the same on a second build, whatever the incidents' order", () => {
    const again = build([...INCIDENTS].reverse())
    expect(JSON.stringify(again)).toBe(JSON.stringify(objects))
    expect(new Set(objects.map((o) => o.id)).size).toBe(objects.length)
    const otherOrg = stixObjectsFor("Example Corp", "org_01JD000000000000000000000B", INCIDENTS)
    const otherIds = new Set(otherOrg.map((o) => o.id))
    for (const object of objects) {
      if (object.type !== "marking-definition") expect(otherIds.has(object.id)).toBe(false)
    }
  })

  test("hostile titles and narratives stay inside bounded description strings", () => {
    const found: Array<string> = []
    const walk = (value: unknown, path: string): void => {
      if (typeof value === "string") {
        if (value.includes("<script>") || value.includes("0.0.0.0/0")) found.push(path)
      } else if (Array.isArray(value)) {
        for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`)
      } else if (value !== null && typeof value === "object") {
        for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`)
      }
    }
    for (const [i, o] of objects.entries()) walk(o, `[${i}]`)
    expect(found.length).toBeGreaterThan(0)
    for (const path of found) expect(path).toMatch(/\]\.description$/)
    for (const o of objects) {
      if ("description" in o && o.description !== undefined) {
        expect([...o.description].length).toBeLessThanOrEqual(STIX_DESCRIPTION_MAX)
        expect(o.description).not.toContain("\u001b")
      }
    }
    const long = build([
      incident({ id: "inc_01JD0000000000000000000009", sourceIp: "198.51.100.1", narrative: "x".repeat(100_000) }),
    ])
    const sighting = ofType(long, "sighting")[0]
    expect([...(sighting?.description ?? "")].length).toBe(STIX_DESCRIPTION_MAX)
    expect(stixSchemaErrors(sighting)).toBeUndefined()
  })

  test("an unreadable address gives no object; no incidents give only the marking and the organization", () => {
    const odd = build([incident({ id: "inc_01JD000000000000000000000X", sourceIp: "203.0.113.7'] OR ['" })])
    expect(odd.map((o) => o.type)).toEqual(["marking-definition", "identity"])
    const none = build([], { organizationCreatedAt: new Date("2026-01-02T03:04:05.006Z") })
    expect(none.map((o) => o.type)).toEqual(["marking-definition", "identity"])
    expect(none[1]?.created).toBe("2026-01-02T03:04:05.006Z")
    for (const o of none) expect(stixSchemaErrors(o)).toBeUndefined()
  })
})
