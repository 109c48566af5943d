/**
 * The sample messages of docs/channels/: the Send test message (the sample incident, at a fixed time) rendered by each
 * channel kind's formatter, exactly as the sender renders it (renderStored, which the sender uses).
 *
 *   bun scripts/channel-samples.ts            print every sample
 *   bun scripts/channel-samples.ts --write    replace the sample blocks in docs/channels/*.md
 *
 * JSON is printed indented for reading (a channel sends it compact); syslog is printed as the one line it sends,
 * without the octet-count frame. test/docs/channelSamples.test.ts checks that the pages hold this output.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { sampleIncident, serializeAlertMessage } from "../src/domain/alertMessage.ts"
import type { FormatContext } from "../src/domain/channels/kinds.ts"
import { PRODUCT } from "../src/domain/product.ts"
import { renderStored } from "../src/platform/outbound/channelKinds.ts"

/** Fixed, so the samples do not change from run to run. */
export const SAMPLE_TIME = new Date("2026-11-26T13:00:00.000Z")
export const SAMPLE_APP_URL = "https://decoy.example.com"
export const SAMPLE_CONTEXT: FormatContext = {
  appUrl: SAMPLE_APP_URL,
  product: { name: PRODUCT.name, vendor: PRODUCT.vendor, version: PRODUCT.version, id: PRODUCT.id },
  hostname: "decoy-1",
}
const SAMPLE_DELIVERY_ID = "whd_sample00000000000000000000"

/** Where each sample goes: the page under docs/channels/ and its marker's name. */
export const SAMPLE_PAGES = {
  slack: "slack.md",
  teams: "teams.md",
  syslog: "syslog.md",
  splunk_hec: "splunk-hec.md",
  ocsf: "ocsf.md",
  email: "email.md",
} as const
export type SampleName = keyof typeof SAMPLE_PAGES

const indented = (json: string): string => JSON.stringify(JSON.parse(json), null, 2)

/** Every sample by name, as the docs show it. */
export const channelSamples = (): Record<SampleName, string> => {
  // What the outbox stores for a Send test, and what the sender reads back from it.
  const stored = serializeAlertMessage({
    id: SAMPLE_DELIVERY_ID,
    type: "webhook.test",
    createdAt: SAMPLE_TIME,
    incident: sampleIncident(SAMPLE_TIME, SAMPLE_APP_URL),
  })
  const render = (kind: Parameters<typeof renderStored>[0], format: "native" | "ocsf") =>
    renderStored(kind, format, stored, SAMPLE_CONTEXT) ?? ""
  return {
    slack: indented(render("slack", "native")),
    teams: indented(render("teams", "native")),
    syslog: render("syslog", "native"),
    splunk_hec: indented(render("splunk_hec", "native")),
    // The finding a webhook in the OCSF format posts (and the MSG or `event` of a syslog or HEC one).
    ocsf: indented(render("webhook", "ocsf")),
    // An email's subject and plain-text part (its HTML part says the same, in the same order).
    email: (() => {
      const mail = JSON.parse(
        renderStored("email", "native", stored, {
          ...SAMPLE_CONTEXT,
          channel: { id: "whc_sample00000000000000000000", organization: "Example Corp" },
        }) ?? "{}",
      ) as { subject: string; text: string }
      return `Subject: ${mail.subject}\n\n${mail.text}`
    })(),
  }
}

/** The block of `name` in a page: `<!-- sample: name -->`, a fenced block, `<!-- /sample -->`. */
export const sampleBlock = (name: string): RegExp =>
  new RegExp(`(<!-- sample: ${name} -->\\n\`\`\`[a-z]*\\n)([\\s\\S]*?)\\n?\`\`\`\\n<!-- /sample -->`)

const DOCS = join(import.meta.dir, "..", "docs", "channels")

if (import.meta.main) {
  const samples = channelSamples()
  if (process.argv.includes("--write")) {
    for (const [name, page] of Object.entries(SAMPLE_PAGES)) {
      const path = join(DOCS, page)
      const text = readFileSync(path, "utf8")
      const pattern = sampleBlock(name)
      if (!pattern.test(text)) throw new Error(`${page} has no block <!-- sample: ${name} -->`)
      // A function replacement: `$` in a sample is text.
      const sample = samples[name as SampleName]
      writeFileSync(
        path,
        text.replace(pattern, (_m, open: string) => `${open}${sample}\n\`\`\`\n<!-- /sample -->`),
      )
    }
  } else {
    for (const [name, text] of Object.entries(samples)) console.log(`=== ${name} ===\n${text}\n`)
  }
}
