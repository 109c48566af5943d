/**
 * The STIX sample of docs/intel.md: the objects `stixObjectsFor` builds (the builder the TAXII collection serves) for
 * one fixed organization with one external incident on one sensor, at fixed times, printed as a STIX 2.1 bundle.
 *
 *   bun scripts/intel-samples.ts            print the sample
 *   bun scripts/intel-samples.ts --write    replace the sample block in docs/intel.md
 *
 * Every id is fixed (the builder's UUIDv5 ids of the fixed inputs, and the bundle's of a fixed name), so the sample
 * does not change from run to run. test/docs/intelSamples.test.ts checks that the page holds this output.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type StixIncident, type StixObject, stixId, stixObjectsFor } from "../src/domain/stix.ts"
import { techniqueById } from "../src/domain/techniques.ts"

export const SAMPLE_ORG_NAME = "Example Corp"
export const SAMPLE_ORG_ID = "org_01JD000000000000000000000A"
export const SAMPLE_ORG_CREATED_AT = new Date("2026-11-01T09:00:00.000Z")

/** One SSH brute force from an external address, seen by one sensor: one of each object the collection holds. */
export const SAMPLE_INCIDENT: StixIncident = {
  id: "inc_01JD0000000000000000000001",
  title: "SSH brute force on dmz-ssh-01",
  narrative: "412 failed SSH logins from 203.0.113.7 in 90 minutes, trying root, admin and ubuntu.",
  sensor: { id: "sen_01JD00000000000000000000SA", name: "dmz-ssh-01" },
  sourceIp: "203.0.113.7",
  eventCount: 412,
  baitCredentialUsed: false,
  firstSeenAt: new Date("2026-11-20T10:00:00.000Z"),
  lastSeenAt: new Date("2026-11-20T11:30:00.000Z"),
  techniques: [techniqueById("T1110.001")],
  source: { scope: "external" },
}

/** The sample's objects, as the TAXII collection of this organization would serve them. */
export const sampleObjects = (): ReadonlyArray<StixObject> =>
  stixObjectsFor(SAMPLE_ORG_NAME, SAMPLE_ORG_ID, [SAMPLE_INCIDENT], { organizationCreatedAt: SAMPLE_ORG_CREATED_AT })

/** A bundle's id is no object's: a UUIDv5 of a fixed name, so the sample's never changes. */
export const SAMPLE_BUNDLE_ID = stixId("bundle", "docs/intel.md sample")

/** The sample as the page shows it: a STIX 2.1 bundle of the objects, indented 2 spaces. */
export const stixSample = (): string =>
  JSON.stringify({ type: "bundle", id: SAMPLE_BUNDLE_ID, objects: sampleObjects() }, null, 2)

/** The block of `name` in a page: `<!-- sample: name -->`, a fenced block, `<!-- /sample -->`. */
export const sampleBlock = (name: string): RegExp =>
  new RegExp(`(<!-- sample: ${name} -->\\n\`\`\`[a-z]*\\n)([\\s\\S]*?)\\n?\`\`\`\\n<!-- /sample -->`)

export const INTEL_PAGE = join(import.meta.dir, "..", "docs", "intel.md")

if (import.meta.main) {
  const sample = stixSample()
  if (process.argv.includes("--write")) {
    const text = readFileSync(INTEL_PAGE, "utf8")
    const pattern = sampleBlock("stix")
    if (!pattern.test(text)) throw new Error("docs/intel.md has no block <!-- sample: stix -->")
    // A function replacement: `$` in a sample is text.
    writeFileSync(
      INTEL_PAGE,
      text.replace(pattern, (_m, open: string) => `${open}${sample}\n\`\`\`\n<!-- /sample -->`),
    )
  } else {
    console.log(sample)
  }
}
