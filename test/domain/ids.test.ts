import { describe, expect, test } from "bun:test"
import { Either, Schema } from "effect"
import { IncidentId, isId, newId, OrgId, type SensorId } from "../../src/domain/ids.ts"
import type { EventListQuery } from "../../src/repos/EventsRepo.ts"

// Takes only an organization's id: what every repository query is keyed on.
const organizationOnly = (orgId: OrgId): string => orgId

describe("branded ids", () => {
  test("a sensor id is not accepted where an organization id is required (checked by tsc)", () => {
    const sensor: SensorId = newId("sensor")
    const org = newId("organization")
    // @ts-expect-error a sensor id is not an organization id
    organizationOnly(sensor)
    // @ts-expect-error plain text is not an organization id either: it has to be decoded or narrowed first
    organizationOnly("org_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    // @ts-expect-error nor in a repository's query
    const query: EventListQuery = { orgId: sensor, filters: {}, after: undefined, fetch: 1 }
    expect(organizationOnly(org)).toBe(org)
    expect(query.fetch).toBe(1)
  })

  test("isId narrows text to the kind's brand, and only text of that kind", () => {
    const text: string = newId("organization")
    if (!isId("organization", text)) throw new Error("an organization id")
    expect(organizationOnly(text)).toBe(text)
    expect(isId("sensor", text)).toBe(false)
    expect(isId("organization", "org_not-a-ulid")).toBe(false)
  })

  test("the schemas decode well-formed ids of their kind and refuse anything else", () => {
    const id = newId("incident")
    expect(Schema.decodeUnknownEither(IncidentId)(id)).toEqual(Either.right(id))
    expect(Either.isLeft(Schema.decodeUnknownEither(IncidentId)(newId("event")))).toBe(true)
    expect(Either.isLeft(Schema.decodeUnknownEither(OrgId)("org_"))).toBe(true)
  })
})
