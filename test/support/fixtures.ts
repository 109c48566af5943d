import { Effect } from "effect"
import { ApiKeyAdmin } from "../../src/admin/ApiKeyAdmin.ts"
import { asOperator } from "../../src/admin/actor.ts"
import { ChannelAdmin } from "../../src/admin/ChannelAdmin.ts"
import { IgnoreAdmin, type IgnoreRuleInput } from "../../src/admin/IgnoreAdmin.ts"
import { IncidentAdmin } from "../../src/admin/IncidentAdmin.ts"
import { OrgAdmin } from "../../src/admin/OrgAdmin.ts"
import { SensorAdmin } from "../../src/admin/SensorAdmin.ts"
import { UserAdmin } from "../../src/admin/UserAdmin.ts"
import { eventTypeSpec } from "../../src/domain/eventTypes.ts"
import { type ApiKeyId, type IdKind, type IdOf, isId, newId, type OrgId } from "../../src/domain/ids.ts"
import type { Severity } from "../../src/domain/severity.ts"
import type { Role } from "../../src/repos/ConsoleUsersRepo.ts"
import { EventsRepo, type NewEvent } from "../../src/repos/EventsRepo.ts"
import { IncidentsRepo, type NewIncident } from "../../src/repos/IncidentsRepo.ts"
import { type TestDatabase, testDatabase } from "./db.ts"

/** An id a test holds as text, checked as the service's edges check one: a malformed id is a mistake in the test. */
export const idOf = <K extends IdKind>(kind: K, text: string): IdOf<K> => {
  if (!isId(kind, text)) throw new Error(`not a ${kind} id: ${text}`)
  return text
}

/**
 * An organization with a full-scope key, as the operator sets one up at the admin CLI. Tests name many
 * organizations alike ("Acme"), so a name another organization has is allowed here (the CLI's
 * --allow-duplicate-name); each test tells its organizations apart by id.
 */
export const createTenant = async (
  db: TestDatabase,
  name = "Acme",
  scopes = "incidents:read,events:read",
): Promise<{ orgId: OrgId; key: string; keyId: ApiKeyId }> =>
  db.run(
    asOperator(
      Effect.gen(function* () {
        const org = yield* Effect.flatMap(OrgAdmin, (orgs) => orgs.create(name, { allowDuplicate: true }))
        const key = yield* Effect.flatMap(ApiKeyAdmin, (keys) =>
          keys.create(org.id, { name: "soar", scopes, expires: undefined }),
        )
        return { orgId: org.id, key: key.key, keyId: key.id }
      }),
    ),
  )

/** Another key of the organization, made by the operator. */
export const createKey = (db: TestDatabase, orgId: string, scopes: string, expires?: string) =>
  db.run(asOperator(Effect.flatMap(ApiKeyAdmin, (keys) => keys.create(orgId, { name: "extra", scopes, expires }))))

/** `key revoke` as the operator runs it: revoked, announced to every server's key cache and audited. */
export const revokeKey = (db: TestDatabase, keyId: string) =>
  db.run(asOperator(Effect.flatMap(ApiKeyAdmin, (keys) => keys.revoke(keyId))))

/** `org deception <org-id> on|off` as the operator runs it (announced to every server's key cache). */
export const setDeception = (db: TestDatabase, orgId: string, state: "on" | "off") =>
  db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.setDeception(orgId, state))))

/**
 * A sensor of the organization, made by the operator. Many tests make several sensors of one organization under
 * the default name, so a name another sensor in service has is allowed here (the admin CLI refuses it; its own
 * tests check that). `sensor create` without --profile makes a "generic" one.
 */
export const createSensor = (db: TestDatabase, orgId: string, name = "web-01", profile = "linux-server") =>
  db.run(
    asOperator(
      Effect.flatMap(SensorAdmin, (sensors) => sensors.create(orgId, { name, profile }, { allowDuplicateName: true })),
    ),
  )

/** A webhook channel of the organization (`webhook create`), made by the operator; its secret is in the result. */
export const createChannel = async (db: TestDatabase, orgId: string, url: string, minSeverity = "low") => {
  const created = await db.run(
    asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.create(orgId, { url, minSeverity }))),
  )
  // A webhook always gets a signing secret at creation; the type says so for the tests that verify with it.
  if (created.secret === undefined) throw new Error(`webhook channel ${created.id} came without a signing secret`)
  return { ...created, secret: created.secret }
}

/**
 * Runs `make` on a connection of its own to the server's database and closes it after: for fixtures a test makes
 * once, before the server stops or restarts.
 */
export const withFixtures = async <A>(env: Record<string, string>, make: (db: TestDatabase) => Promise<A>) => {
  const db = testDatabase(env)
  try {
    return await make(db)
  } finally {
    await db.close()
  }
}

/**
 * `org create --allow-duplicate-name` as the operator runs it: an organization alone, with no key (tests name many
 * organizations alike and tell them apart by id).
 */
export const createOrg = (db: TestDatabase, name = "Acme") =>
  db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.create(name, { allowDuplicate: true }))))

/**
 * `channel create` with its flags as the operator gives them (kind, format, url, token, min-severity,
 * sensor-health, settle): a channel of any kind; a webhook's signing secret is in the result.
 */
export const createChannelOf = (
  db: TestDatabase,
  orgId: string,
  input: {
    readonly kind?: string
    readonly format?: string
    readonly url: string
    readonly token?: string
    readonly minSeverity?: string
    readonly sensorHealth?: boolean
    readonly settle?: string | number
  },
) =>
  db.run(
    asOperator(
      Effect.flatMap(ChannelAdmin, (channels) => channels.create(orgId, { ...input, minSeverity: input.minSeverity })),
    ),
  )

/** `webhook list --org <org-id>`: the organization's channels (never a secret), as the CLI's --json prints them. */
export const listChannels = (db: TestDatabase, orgId: string) =>
  db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.list(orgId))))

/** `webhook disable|enable <channel-id>` as the operator runs it. */
export const setChannelEnabled = (db: TestDatabase, channelId: string, enabled: boolean) =>
  db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.setEnabled(channelId, enabled))))

/** `webhook rotate <channel-id> [--grace …]` of a webhook: its new signing secret is in the result. */
export const rotateChannel = async (db: TestDatabase, channelId: string, grace?: string) => {
  const rotated = await db.run(
    asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.rotate(channelId, grace))),
  )
  // Only a webhook gets a new signing secret; the other kinds are rotated with the credential the admin gives.
  if (rotated.secret === undefined) throw new Error(`channel ${channelId} is not a webhook: no new signing secret`)
  return { ...rotated, secret: rotated.secret }
}

/** `webhook deliveries <channel-id> [--status …]`: the delivery log as the CLI's --json prints it. */
export const channelDeliveries = (db: TestDatabase, channelId: string, status?: string) =>
  db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.deliveries(channelId, status))))

/** `user create` as the operator runs it: a console user of the organization, with its one-time password link. */
export const createUser = (db: TestDatabase, orgId: string, email: string, role: Role) =>
  db.run(asOperator(Effect.flatMap(UserAdmin, (users) => users.create({ orgId, email, role }))))

/** `user list --org <org-id>`: the organization's users with their status, as the CLI's --json prints them. */
export const listUsers = (db: TestDatabase, orgId: string) =>
  db.run(asOperator(Effect.flatMap(UserAdmin, (users) => users.list(orgId))))

/** `user disable <user-id>` as the operator runs it: its sessions end and it can no longer sign in. */
export const disableUser = (db: TestDatabase, userId: string) =>
  db.run(asOperator(Effect.flatMap(UserAdmin, (users) => users.disable(userId))))

/** `user reset <user-id>` as the operator runs it: the old password ends; a new one-time link is in the result. */
export const resetUser = (db: TestDatabase, userId: string) =>
  db.run(asOperator(Effect.flatMap(UserAdmin, (users) => users.reset(userId))))

/** `user unlock <email>` as the operator runs it: the email's sign-in lock is lifted. */
export const unlockUser = (db: TestDatabase, email: string) =>
  db.run(asOperator(Effect.flatMap(UserAdmin, (users) => users.unlock(email))))

/** `key list --org <org-id>`: the organization's keys (never a key's value), as the CLI's --json prints them. */
export const listKeys = (db: TestDatabase, orgId: string) =>
  db.run(asOperator(Effect.flatMap(ApiKeyAdmin, (keys) => keys.list(orgId))))

/** `ignore add --org <org-id> --source … [--sensor, --port, --type, --note, --expires]` as the operator runs it. */
export const addIgnoreRule = (db: TestDatabase, orgId: string, rule: IgnoreRuleInput) =>
  db.run(asOperator(Effect.flatMap(IgnoreAdmin, (rules) => rules.add(orgId, rule))))

/** `incident close <incident-id> --reason <reason>` (resolved unless given) as the operator runs it. */
export const closeIncident = (db: TestDatabase, incidentId: string, reason = "resolved") =>
  db.run(asOperator(Effect.flatMap(IncidentAdmin, (incidents) => incidents.close(incidentId, { reason }))))

export interface SeedEvent {
  readonly time: Date
  readonly type?: string
  readonly severity?: Severity
  readonly confidence?: "low" | "normal" | "high"
  readonly tags?: ReadonlyArray<string>
  readonly username?: string
  /** Stored as given (through the repository); by default a username and a masked password. */
  readonly attackerInput?: Record<string, unknown>
}

/**
 * Writes an incident and its member events through the repositories, with the derived fields
 * (count, types, tags, severity, confidence, first/last seen) computed as the service defines them (D3).
 */
export const seedIncident = (
  db: TestDatabase,
  input: {
    readonly orgId: string
    readonly sensorId: string
    readonly sourceIp: string
    readonly events: ReadonlyArray<SeedEvent>
    readonly status?: "open" | "closed"
    readonly resolvedAt?: Date | null
    readonly id?: string
  },
) =>
  db.run(
    Effect.gen(function* () {
      const incidents = yield* IncidentsRepo
      const events = yield* EventsRepo
      const order = ["low", "medium", "high", "critical"] as const
      const orgId = idOf("organization", input.orgId)
      const sensorId = idOf("sensor", input.sensorId)
      const rows: Array<NewEvent> = input.events.map((e, i) => {
        const type = e.type ?? "ssh.login_attempt"
        const spec = eventTypeSpec(type)
        if (!spec) throw new Error(`unknown type ${type}`)
        return {
          id: newId("event", e.time.getTime()),
          orgId,
          incidentId: null,
          sensorId,
          sensorEventId: `seed-${crypto.randomUUID()}-${i}`,
          time: e.time,
          sourceIp: input.sourceIp,
          sourcePort: 40000 + i,
          service: spec.service,
          port: spec.port,
          type,
          action: spec.action,
          severity: e.severity ?? spec.severity,
          confidence: e.confidence ?? spec.confidence,
          tags: e.tags ?? [],
          summary: `${spec.label} from ${input.sourceIp}`,
          attackerInput: e.attackerInput ?? {
            username: e.username ?? "root",
            password: { masked: "******", length: 6, fingerprint: "0123456789abcdef0123456789abcdef" },
          },
        }
      })
      const times = rows.map((r) => r.time.getTime())
      const severity = rows.reduce<Severity>(
        (acc, r) => (order.indexOf(r.severity) > order.indexOf(acc) ? r.severity : acc),
        "low",
      )
      const incident: NewIncident = {
        id: input.id === undefined ? newId("incident", Math.min(...times)) : idOf("incident", input.id),
        orgId,
        sensorId,
        sourceIp: input.sourceIp,
        status: input.status ?? "open",
        severity,
        title: `Activity from ${input.sourceIp}`,
        narrative: "Seeded narrative.",
        recommendedAction: "Block the source address.",
        eventCount: rows.length,
        eventTypes: [...new Set(rows.map((r) => r.type))].sort(),
        tags: [...new Set(rows.flatMap((r) => r.tags))].sort(),
        usernames: ["root"],
        highConfidence: rows.some((r) => r.confidence === "high"),
        firstSeenAt: new Date(Math.min(...times)),
        lastSeenAt: new Date(Math.max(...times)),
        resolvedAt: input.resolvedAt ?? null,
      }
      yield* incidents.insert(incident)
      for (const row of rows) yield* events.insert({ ...row, incidentId: incident.id })
      return { incident, events: rows.map((r) => ({ ...r, incidentId: incident.id })) }
    }),
  )

/** GET with a bearer key; returns status, headers and parsed JSON. */
export const get = async (baseUrl: string, path: string, key?: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${baseUrl}${path}`, {
    headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
  })
  const text = await response.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  // biome-ignore lint/suspicious/noExplicitAny: test helper returns loosely typed JSON for field-by-field checks
  return { status: response.status, headers: response.headers, body: body as any }
}

/** Follows nextCursor until null and returns every row id in order. */
export const walk = async (baseUrl: string, path: string, key: string) => {
  const ids: Array<string> = []
  let cursor: string | null = null
  let pages = 0
  do {
    const sep = path.includes("?") ? "&" : "?"
    const response = await get(baseUrl, cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path, key)
    if (response.status !== 200) throw new Error(`walk got ${response.status}: ${JSON.stringify(response.body)}`)
    for (const row of response.body.data) ids.push(row.id)
    cursor = response.body.nextCursor
    pages++
    if (pages > 10_000) throw new Error("walk did not end")
  } while (cursor !== null)
  return { ids, pages }
}

/** The spec's Event fields, in the spec's order (spec "Event", D2): what every API event carries, nothing more. */
export const SPEC_EVENT_FIELDS = [
  "id",
  "time",
  "sensor",
  "sourceIp",
  "sourcePort",
  "service",
  "port",
  "type",
  "action",
  "severity",
  "confidence",
  "tags",
  "techniques",
  "summary",
  "attackerInput",
]
