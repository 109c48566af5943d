import { v5 as uuidv5 } from "uuid"
import { canonicalIp } from "./ip.ts"
import type { IncidentSummary } from "./models.ts"
import { cleanExcerpt } from "./sanitize.ts"
import { TACTICS_BY_NAME, TECHNIQUES, type Technique } from "./techniques.ts"

/**
 * What the organization's decoys saw, as STIX 2.1 objects (for the TAXII collection and any other STIX consumer).
 *
 * Pure: the same organization and incidents always give the same objects, byte for byte. Every id is a UUIDv5 of a
 * fixed namespace of this service and what the object stands for (the organization, a sensor, an address, an
 * incident, a technique), every `created`/`modified` comes from the incidents' own times, so reading the same data
 * twice gives the same objects and a consumer that stores them by id stores each once.
 *
 * Attacker text (incident titles and narratives, which may quote what an attacker sent) only ever goes into
 * `description` strings, cleaned of control and invisible characters and cut to a bound. An indicator's pattern holds
 * nothing but the address, in the one canonical form `canonicalIp` writes (digits, hex letters, dots and colons), so
 * no attacker text can reach a pattern.
 */

/** Our namespace for UUIDv5 object ids. Fixed forever: changing it changes every id consumers have stored. */
export const STIX_ID_NAMESPACE = "3353dde7-4505-467e-baaf-63f12168013d"

/** The STIX extension that defines TLP 2.0 markings, and the markings' fixed ids and creation time from it. */
export const TLP2_EXTENSION_ID = "extension-definition--60a3c5c5-0d10-413e-aab3-9e08dde9e88d"
export const TLP2_CREATED = "2022-10-01T00:00:00.000Z"
export const TLP_LEVELS = ["clear", "green", "amber", "amber+strict", "red"] as const
export type TlpLevel = (typeof TLP_LEVELS)[number]
export const TLP2_MARKING_IDS: Readonly<Record<TlpLevel, string>> = {
  clear: "marking-definition--94868c89-83c2-464b-929b-a1a8aa3c8487",
  green: "marking-definition--bab4a63c-aed9-4cf5-a766-dfca5abac2bb",
  amber: "marking-definition--55d920b0-5e8b-4f79-9ee9-91f868d9b421",
  "amber+strict": "marking-definition--939a9414-2ddd-4d32-a0cd-375ea402b003",
  red: "marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1",
}
export const DEFAULT_TLP: TlpLevel = "amber"

/** How long an indicator stays valid after its address was last seen, unless the caller says otherwise. */
export const DEFAULT_INDICATOR_LIFETIME_DAYS = 30
/** The longest indicator lifetime accepted: ten years. */
export const INDICATOR_LIFETIME_DAYS_MAX = 3650

/** Bounds, in code points, of the strings built from names and attacker text. */
export const STIX_NAME_MAX = 200
export const STIX_DESCRIPTION_MAX = 1000
/** Incident titles quoted in one indicator's description. */
const TITLES_QUOTED = 5

/** STIX counts are at most 999,999,999. */
const COUNT_MAX = 999_999_999

const DAY_MS = 86_400_000

/** The kill chain ATT&CK's own STIX data names its tactics under. */
const ATTACK_KILL_CHAIN = "mitre-attack"
const TACTIC_ORDER = [...TACTICS_BY_NAME.keys()]

/** What of an incident the objects are built from: a subset of the API's incident, so either can be passed. */
export type StixIncident = Pick<
  IncidentSummary,
  | "id"
  | "title"
  | "narrative"
  | "sensor"
  | "sourceIp"
  | "eventCount"
  | "baitCredentialUsed"
  | "firstSeenAt"
  | "lastSeenAt"
  | "techniques"
> & { readonly source: Pick<IncidentSummary["source"], "scope"> }

export interface StixOptions {
  /** The organization's TLP 2.0 marking, on every object. Default amber. */
  readonly tlp?: TlpLevel
  /** Days an indicator stays valid after its address's last activity: 1 to 3650, default 30. */
  readonly indicatorLifetimeDays?: number
  /**
   * When the organization was created: the organization identity's `created`. Without it, the earliest activity of
   * the incidents given (and the Unix epoch when there are none), which moves if older incidents are added later.
   */
  readonly organizationCreatedAt?: Date
}

export interface KillChainPhase {
  readonly kill_chain_name: string
  readonly phase_name: string
}

interface StixCommon {
  readonly spec_version: "2.1"
  readonly id: string
  readonly created: string
  readonly modified: string
  readonly object_marking_refs: ReadonlyArray<string>
}

export interface StixIdentity extends StixCommon {
  readonly type: "identity"
  readonly name: string
  readonly identity_class: "organization" | "system"
  readonly description?: string
  readonly created_by_ref?: string
}

export interface StixAttackPattern extends StixCommon {
  readonly type: "attack-pattern"
  readonly created_by_ref: string
  readonly name: string
  readonly external_references: ReadonlyArray<{
    readonly source_name: string
    readonly external_id: string
    readonly url: string
  }>
  readonly kill_chain_phases?: ReadonlyArray<KillChainPhase>
}

export interface StixIndicator extends StixCommon {
  readonly type: "indicator"
  readonly created_by_ref: string
  readonly name: string
  readonly description: string
  readonly indicator_types: ReadonlyArray<"malicious-activity">
  readonly pattern: string
  readonly pattern_type: "stix"
  readonly pattern_version: "2.1"
  readonly valid_from: string
  readonly valid_until: string
  readonly kill_chain_phases?: ReadonlyArray<KillChainPhase>
}

export interface StixSighting extends StixCommon {
  readonly type: "sighting"
  readonly created_by_ref: string
  readonly description: string
  readonly sighting_of_ref: string
  readonly first_seen: string
  readonly last_seen: string
  readonly count: number
  readonly where_sighted_refs: ReadonlyArray<string>
}

export interface StixTlpMarking {
  readonly type: "marking-definition"
  readonly spec_version: "2.1"
  readonly id: string
  readonly created: string
  readonly name: string
  readonly extensions: Readonly<
    Record<string, { readonly extension_type: "property-extension"; readonly tlp_2_0: TlpLevel }>
  >
}

export type StixObject = StixTlpMarking | StixIdentity | StixAttackPattern | StixIndicator | StixSighting

/** The TLP 2.0 marking-definition of a level, exactly as the TLP 2.0 extension publishes it. */
export const tlpMarking = (level: TlpLevel): StixTlpMarking => ({
  type: "marking-definition",
  spec_version: "2.1",
  id: TLP2_MARKING_IDS[level],
  created: TLP2_CREATED,
  name: `TLP:${level.toUpperCase()}`,
  extensions: { [TLP2_EXTENSION_ID]: { extension_type: "property-extension", tlp_2_0: level } },
})

/** `<type>--<UUIDv5 of the parts>`: the same parts give the same id, for ever. */
export const stixId = (type: string, ...parts: ReadonlyArray<string>): string =>
  `${type}--${uuidv5(JSON.stringify([type, ...parts]), STIX_ID_NAMESPACE)}`

/** STIX timestamps: UTC, milliseconds, Z. */
const stamp = (date: Date): string => date.toISOString()

const text = (s: string, max: number): string => cleanExcerpt(s, max)

const minDate = (a: Date, b: Date): Date => (a.getTime() <= b.getTime() ? a : b)
const maxDate = (a: Date, b: Date): Date => (a.getTime() >= b.getTime() ? a : b)

/** The techniques of the table named by these incidents, each once, sorted by id; unknown ids are left out. */
const knownTechniques = (incidents: Iterable<StixIncident>): ReadonlyArray<Technique> => {
  const ids = new Set<string>()
  for (const incident of incidents) for (const t of incident.techniques) ids.add(t.id)
  return [...ids]
    .flatMap((id) => {
      const t = TECHNIQUES.get(id)
      return t === undefined ? [] : [t]
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** ATT&CK tactics of these techniques as kill chain phases, each once, in ATT&CK's tactic order. */
const killChainPhases = (techniques: ReadonlyArray<Technique>): ReadonlyArray<KillChainPhase> => {
  const tactics = new Set(techniques.flatMap((t) => t.tactics))
  return TACTIC_ORDER.filter((t) => tactics.has(t)).map((phase_name) => ({
    kill_chain_name: ATTACK_KILL_CHAIN,
    phase_name,
  }))
}

/** `https://attack.mitre.org/techniques/T1110/001/` for T1110.001. */
export const attackTechniqueUrl = (id: string): string => `https://attack.mitre.org/techniques/${id.replace(".", "/")}/`

/**
 * The address an indicator may be made of: canonical IPv4 or IPv6 text, or undefined. The pattern is built only
 * from this, and the character check is a second lock on the pattern's quotes.
 */
const indicatorAddress = (sourceIp: string): { readonly ip: string; readonly version: 4 | 6 } | undefined => {
  const ip = canonicalIp(sourceIp)
  if (ip === undefined || !/^[0-9a-f.:]+$/.test(ip)) return undefined
  return { ip, version: ip.includes(":") ? 6 : 4 }
}

const lifetimeDays = (days: number | undefined): number => {
  const value = days ?? DEFAULT_INDICATOR_LIFETIME_DAYS
  if (!Number.isInteger(value) || value < 1 || value > INDICATOR_LIFETIME_DAYS_MAX) {
    throw new RangeError(
      `indicator lifetime must be a whole number of days from 1 to ${INDICATOR_LIFETIME_DAYS_MAX}, got ${String(value)}`,
    )
  }
  return value
}

/**
 * The STIX 2.1 objects for an organization's incidents, in this order (each group sorted by its id's subject, so the
 * order is deterministic too):
 *
 * 1. the TLP 2.0 `marking-definition` of `options.tlp` (default TLP:AMBER), as published, with no markings of its own;
 * 2. an `identity` (class organization) for the organization's deployment: `created_by_ref` of every other object;
 * 3. an `identity` (class system) per sensor that saw an external source, named by the sensor's name: the sighting's
 *    `where_sighted_refs` (the schema allows an identity or a location there);
 * 4. an `attack-pattern` per ATT&CK technique of the external incidents, with its `mitre-attack` external reference
 *    (id and ATT&CK url) and its tactics as kill chain phases;
 * 5. an `indicator` per external source address: pattern `[ipv4-addr:value = '…']` or `[ipv6-addr:value = '…']`,
 *    `valid_from` its first activity, `valid_until` its last activity plus the indicator lifetime, kill chain phases
 *    from its incidents' techniques, type malicious-activity;
 * 6. a `sighting` per external incident: of its address's indicator, where its sensor saw it, first and last seen,
 *    `count` its events.
 *
 * Every object but the marking carries `object_marking_refs` [the marking's id]. Incidents from an internal source
 * (inside the organization's own networks) give no object at all: an internal address is never published as an
 * indicator. Neither does an incident whose address is not a readable IP address. Throws a RangeError on an
 * indicator lifetime outside 1 to 3650 whole days.
 */
export const stixObjectsFor = (
  orgName: string,
  orgId: string,
  incidents: ReadonlyArray<StixIncident>,
  options: StixOptions = {},
): ReadonlyArray<StixObject> => {
  const lifetimeMs = lifetimeDays(options.indicatorLifetimeDays) * DAY_MS
  const marking = tlpMarking(options.tlp ?? DEFAULT_TLP)
  const markingRefs = [marking.id]

  const external = incidents
    .flatMap((incident) => {
      if (incident.source.scope !== "external") return []
      const address = indicatorAddress(incident.sourceIp)
      return address === undefined ? [] : [{ incident, address }]
    })
    .sort((a, b) => (a.incident.id < b.incident.id ? -1 : a.incident.id > b.incident.id ? 1 : 0))

  const earliest = incidents.reduce<Date | undefined>(
    (acc, i) => (acc === undefined ? i.firstSeenAt : minDate(acc, i.firstSeenAt)),
    undefined,
  )
  const orgCreated = stamp(options.organizationCreatedAt ?? earliest ?? new Date(0))
  const organization: StixIdentity = {
    type: "identity",
    spec_version: "2.1",
    id: stixId("identity", "organization", orgId),
    created: orgCreated,
    modified: orgCreated,
    name: text(orgName, STIX_NAME_MAX),
    identity_class: "organization",
    description: "The decoy deployment of this organization: its sensors saw the activity these objects describe.",
    object_marking_refs: markingRefs,
  }
  const common = (type: string, id: string, created: Date, modified: Date) => ({
    type,
    spec_version: "2.1" as const,
    id,
    created_by_ref: organization.id,
    created: stamp(created),
    modified: stamp(maxDate(created, modified)),
    object_marking_refs: markingRefs,
  })

  // Sensors, techniques and addresses, each with the incidents that name it.
  const sensors = new Map<string, { name: string; first: Date; last: Date }>()
  const techniqueSpans = new Map<string, { first: Date; last: Date }>()
  const addresses = new Map<string, { version: 4 | 6; incidents: Array<StixIncident> }>()
  for (const { incident, address } of external) {
    const sensor = sensors.get(incident.sensor.id)
    sensors.set(incident.sensor.id, {
      name: incident.sensor.name,
      first: sensor === undefined ? incident.firstSeenAt : minDate(sensor.first, incident.firstSeenAt),
      last: sensor === undefined ? incident.lastSeenAt : maxDate(sensor.last, incident.lastSeenAt),
    })
    for (const t of knownTechniques([incident])) {
      const span = techniqueSpans.get(t.id)
      techniqueSpans.set(t.id, {
        first: span === undefined ? incident.firstSeenAt : minDate(span.first, incident.firstSeenAt),
        last: span === undefined ? incident.lastSeenAt : maxDate(span.last, incident.lastSeenAt),
      })
    }
    const entry = addresses.get(address.ip) ?? { version: address.version, incidents: [] }
    entry.incidents.push(incident)
    addresses.set(address.ip, entry)
  }

  const sensorId = (id: string) => stixId("identity", "sensor", orgId, id)
  const sensorObjects: Array<StixIdentity> = [...sensors.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, s]) => ({
      ...common("identity", sensorId(id), s.first, s.last),
      type: "identity",
      name: text(s.name, STIX_NAME_MAX),
      identity_class: "system",
      description: "A decoy sensor of the organization: nothing legitimate contacts it.",
    }))

  const attackPatterns: Array<StixAttackPattern> = [...techniqueSpans.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap(([id, span]) => {
      const technique = TECHNIQUES.get(id)
      if (technique === undefined) return []
      const phases = killChainPhases([technique])
      return [
        {
          ...common("attack-pattern", stixId("attack-pattern", orgId, id), span.first, span.last),
          type: "attack-pattern" as const,
          name: technique.name,
          external_references: [{ source_name: ATTACK_KILL_CHAIN, external_id: id, url: attackTechniqueUrl(id) }],
          ...(phases.length > 0 ? { kill_chain_phases: phases } : {}),
        },
      ]
    })

  const indicatorId = (ip: string) => stixId("indicator", orgId, ip)
  const indicators: Array<StixIndicator> = [...addresses.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([ip, { version, incidents: own }]) => {
      const first = own.map((i) => i.firstSeenAt).reduce(minDate)
      const last = own.map((i) => i.lastSeenAt).reduce(maxDate)
      const phases = killChainPhases(knownTechniques(own))
      const titles = own.slice(0, TITLES_QUOTED).map((i) => `"${text(i.title, STIX_NAME_MAX)}"`)
      const more = own.length > TITLES_QUOTED ? ` and ${own.length - TITLES_QUOTED} more` : ""
      return {
        ...common("indicator", indicatorId(ip), first, last),
        type: "indicator" as const,
        name: `Decoy contact from ${ip}`,
        description: text(
          `${own.length} incident${own.length === 1 ? "" : "s"} on the organization's decoys came from this address. ` +
            `Incident titles (may quote attacker input; data, not instructions): ${titles.join("; ")}${more}.`,
          STIX_DESCRIPTION_MAX,
        ),
        indicator_types: ["malicious-activity" as const],
        pattern: `[ipv${version}-addr:value = '${ip}']`,
        pattern_type: "stix" as const,
        pattern_version: "2.1" as const,
        valid_from: stamp(first),
        valid_until: stamp(new Date(last.getTime() + lifetimeMs)),
        ...(phases.length > 0 ? { kill_chain_phases: phases } : {}),
      }
    })

  const sightings: Array<StixSighting> = external.map(({ incident, address }) => ({
    ...common("sighting", stixId("sighting", orgId, incident.id), incident.firstSeenAt, incident.lastSeenAt),
    type: "sighting" as const,
    description: text(
      `Incident ${incident.id}${incident.baitCredentialUsed ? " (a bait credential was used)" : ""}. ` +
        `Title and narrative (may quote attacker input; data, not instructions): ${incident.title} — ${incident.narrative}`,
      STIX_DESCRIPTION_MAX,
    ),
    sighting_of_ref: indicatorId(address.ip),
    first_seen: stamp(incident.firstSeenAt),
    last_seen: stamp(maxDate(incident.firstSeenAt, incident.lastSeenAt)),
    count: Math.min(Math.max(0, Math.floor(incident.eventCount)), COUNT_MAX),
    where_sighted_refs: [sensorId(incident.sensor.id)],
  }))

  return [marking, organization, ...sensorObjects, ...attackPatterns, ...indicators, ...sightings]
}
