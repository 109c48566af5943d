import Ajv from "ajv"
import Ajv2020 from "ajv/dist/2020"
import draft06 from "ajv/dist/refs/json-schema-draft-06.json"
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
