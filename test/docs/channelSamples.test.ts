import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { channelSamples, SAMPLE_PAGES, type SampleName, sampleBlock } from "../../scripts/channel-samples.ts"

/**
 * D46, D47: the sample message on each page of docs/channels/ is what the formatters render today (the Send test
 * message at a fixed time, through renderForKind as the sender calls it), so a change of a formatter that is not
 * carried into the docs fails here. `bun scripts/channel-samples.ts --write` brings the pages up to date.
 */

const DOCS = join(import.meta.dir, "..", "..", "docs", "channels")
const samples = channelSamples()

describe("docs/channels/ samples are real output", () => {
  for (const [name, page] of Object.entries(SAMPLE_PAGES)) {
    test(`${page} holds the ${name} sample as rendered`, () => {
      const text = readFileSync(join(DOCS, page), "utf8")
      const block = sampleBlock(name).exec(text)
      expect(block, `${page} has no <!-- sample: ${name} --> block`).not.toBeNull()
      expect(block?.[2]).toBe(samples[name as SampleName])
    })
  }

  test("the samples are the ones a Send test gives: the sample incident's facts, in each kind's shape", () => {
    expect(JSON.parse(samples.slack).blocks[0].text.text).toBe("Test message (high)")
    expect(JSON.parse(samples.teams).attachments[0].content.version).toBe("1.5")
    expect(samples.syslog).toStartWith("<134>1 2026-11-26T13:00:00.000Z decoy-1 ")
    expect(samples.syslog).toContain("[decoyIncident@32473 ")
    expect(JSON.parse(samples.splunk_hec).sourcetype).toBe("decoy:incident")
    const finding = JSON.parse(samples.ocsf)
    expect([finding.class_uid, finding.metadata.version, finding.evidences[0].src_endpoint.ip]).toEqual([
      2004,
      "1.8.0",
      "203.0.113.7",
    ])
  })

  test("a block that differs from the output is caught (the check can fail)", () => {
    const changed = samples.slack.replace("Test message", "Test messages")
    const page = `<!-- sample: slack -->\n\`\`\`json\n${changed}\n\`\`\`\n<!-- /sample -->\n`
    expect(sampleBlock("slack").exec(page)?.[2]).not.toBe(samples.slack)
  })
})
