import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import {
  INTEL_PAGE,
  SAMPLE_BUNDLE_ID,
  SAMPLE_INCIDENT,
  SAMPLE_ORG_CREATED_AT,
  SAMPLE_ORG_ID,
  SAMPLE_ORG_NAME,
  sampleBlock,
  sampleObjects,
  stixSample,
} from "../../scripts/intel-samples.ts"
import { stixObjectsFor } from "../../src/domain/stix.ts"
import { stixSchemaErrors } from "../support/schemas.ts"

/**
 * The STIX sample of docs/intel.md is what the service builds today: the objects `stixObjectsFor` (the builder the
 * TAXII collection serves) makes of the sample organization's one incident, as a bundle, and every one of them is
 * valid STIX 2.1 by the OASIS schemas. A change of the builder that is not carried into the page fails here;
 * `bun scripts/intel-samples.ts --write` brings the page up to date.
 */

const sample = stixSample()
const pageBlock = (): string | undefined => sampleBlock("stix").exec(readFileSync(INTEL_PAGE, "utf8"))?.[2]

describe("docs/intel.md's STIX sample is real output", () => {
  test("the page holds the sample as the builder makes it today", () => {
    const block = pageBlock()
    expect(block, "docs/intel.md has no <!-- sample: stix --> block").toBeDefined()
    expect(block).toBe(sample)
  })

  test("the sample is a bundle of the builder's objects, the same on every run", () => {
    const bundle = JSON.parse(sample) as { type: string; id: string; objects: Array<{ type: string }> }
    expect([bundle.type, bundle.id]).toEqual(["bundle", SAMPLE_BUNDLE_ID])
    expect(bundle.id).toMatch(/^bundle--[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(bundle.objects).toEqual(JSON.parse(JSON.stringify(sampleObjects())))
    // One of each kind of object the collection serves.
    expect(bundle.objects.map((o) => o.type)).toEqual([
      "marking-definition",
      "identity",
      "identity",
      "attack-pattern",
      "indicator",
      "sighting",
    ])
    expect(stixSample()).toBe(sample)
  })

  test("every object of the page's sample validates against the OASIS STIX 2.1 schemas", () => {
    const objects = (JSON.parse(pageBlock() ?? "{}") as { objects?: Array<{ id: string }> }).objects ?? []
    expect(objects.length).toBe(6)
    for (const object of objects)
      expect({ id: object.id, errors: stixSchemaErrors(object) }).toEqual({ id: object.id, errors: undefined })
  })

  test("a block that differs from the output is caught (the check can fail)", () => {
    // Another incident count: the builder's output changes, and the page's block no longer equals it.
    const other = JSON.stringify(
      {
        type: "bundle",
        id: SAMPLE_BUNDLE_ID,
        objects: stixObjectsFor(SAMPLE_ORG_NAME, SAMPLE_ORG_ID, [{ ...SAMPLE_INCIDENT, eventCount: 413 }], {
          organizationCreatedAt: SAMPLE_ORG_CREATED_AT,
        }),
      },
      null,
      2,
    )
    expect(other).not.toBe(sample)
    const page = `<!-- sample: stix -->\n\`\`\`json\n${other}\n\`\`\`\n<!-- /sample -->\n`
    expect(sampleBlock("stix").exec(page)?.[2]).toBe(other)
    expect(sampleBlock("stix").exec(page)?.[2]).not.toBe(sample)
    // And the schemas refuse an object made invalid, so the validation can fail too.
    const indicator = sampleObjects().find((o) => o.type === "indicator")
    expect(stixSchemaErrors({ ...indicator, valid_from: "2026-11-20 10:00" })).toBeDefined()
    expect(stixSchemaErrors({ ...indicator, id: "indicator--not-a-uuid" })).toBeDefined()
  })
})
