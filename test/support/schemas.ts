import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import Ajv from "ajv"
import Ajv2020 from "ajv/dist/2020"
import draft06 from "ajv/dist/refs/json-schema-draft-06.json"
import addFormats from "ajv-formats"
import { OCSF_VERSION } from "../../src/domain/channels/ocsf.ts"
import adaptiveCard15 from "../fixtures/adaptive-cards/adaptive-card-1.5.json"

/**
 * The published schemas the channel tests check messages against (each file's README says where it came from):
 * OCSF Detection Finding for the OCSF version the service sends (D47), and Adaptive Cards 1.5 for Teams (D46).
 * Each checker returns "" for a valid value, or what is wrong.
 */

export const ocsfSchema = (await Bun.file(
  new URL(`../fixtures/ocsf/detection_finding-${OCSF_VERSION}.schema.json`, import.meta.url),
).json()) as Record<string, unknown>
// strictRequired is off: the schema's anyOf branches (OCSF "at least one of") name properties defined beside them.
const ocsfAjv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false })
const validOcsf = ocsfAjv.compile(ocsfSchema)

export const ocsfErrors = (value: unknown): string =>
  validOcsf(value) ? "" : ocsfAjv.errorsText(validOcsf.errors, { separator: "\n" })

// The file names its id with draft-04's `id`; Ajv reads draft-06's `$id`. The file itself is kept as published.
const { id: cardSchemaId, ...cardSchemaBody } = adaptiveCard15 as { id: string } & Record<string, unknown>
const cardAjv = new Ajv({
  strict: false,
  allErrors: true,
  formats: {
    "uri-reference": (s: string) => URL.canParse(s, "http://base.invalid/"),
    uri: (s: string) => URL.canParse(s),
  },
})
cardAjv.addMetaSchema(draft06)
const validCard = cardAjv.compile({ ...cardSchemaBody, $id: cardSchemaId })

export const adaptiveCardErrors = (card: unknown): string =>
  validCard(card) ? "" : cardAjv.errorsText(validCard.errors?.slice(0, 5))

// The OASIS STIX 2.1 JSON schemas (test/fixtures/stix2-json-schemas, copied unchanged; its README says from where).
const STIX_SCHEMA_ROOT = join(import.meta.dir, "../fixtures/stix2-json-schemas")
const STIX_BASE = "http://raw.githubusercontent.com/oasis-open/cti-stix2-json-schemas/stix2.1/schemas/"
// The schemas write `\-` in patterns, which a Unicode-mode regular expression refuses.
const stixAjv = new Ajv2020({ strict: false, allErrors: true, unicodeRegExp: false })
addFormats(stixAjv)
for (const dir of ["common", "sdos", "sros"]) {
  for (const name of readdirSync(join(STIX_SCHEMA_ROOT, dir))) {
    const schema = JSON.parse(readFileSync(join(STIX_SCHEMA_ROOT, dir, name), "utf8")) as { $id: string }
    // Each file is registered under the id the others refer to it by; a file moved or renamed would break that.
    if (schema.$id !== `${STIX_BASE}${dir}/${name}`) throw new Error(`${dir}/${name} has the $id ${schema.$id}`)
    stixAjv.addSchema(schema)
  }
}

const STIX_SCHEMA_OF: Record<string, string> = {
  identity: "sdos/identity.json",
  indicator: "sdos/indicator.json",
  "attack-pattern": "sdos/attack-pattern.json",
  sighting: "sros/sighting.json",
  "marking-definition": "common/marking-definition.json",
}

/** The OASIS schema's verdict on one STIX object: undefined when valid, the errors otherwise. */
export const stixSchemaErrors = (object: unknown): string | undefined => {
  const type = (object as { type?: unknown }).type
  const path = typeof type === "string" ? STIX_SCHEMA_OF[type] : undefined
  if (path === undefined) return `no schema for type ${String(type)}`
  const validate = stixAjv.getSchema(STIX_BASE + path)
  if (validate === undefined) return `schema ${path} not registered`
  // Through JSON, as a consumer receives it.
  return validate(JSON.parse(JSON.stringify(object))) ? undefined : stixAjv.errorsText(validate.errors)
}
