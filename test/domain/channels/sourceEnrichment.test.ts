import { describe, expect, test } from "bun:test"
import { type AlertMessage, serializeAlertMessage } from "../../../src/domain/alertMessage.ts"
import { ocsfDetectionFinding } from "../../../src/domain/channels/ocsf.ts"
import { slackMessage } from "../../../src/domain/channels/slack.ts"
import { syslogMessage } from "../../../src/domain/channels/syslog.ts"
import { teamsMessage } from "../../../src/domain/channels/teams.ts"
import { reverseDnsName } from "../../../src/domain/enrichment.ts"
import { CONTEXT, incidentFixture } from "../../support/channelMessages.ts"
import { adaptiveCardErrors, ocsfErrors } from "../../support/schemas.ts"

/** A template placeholder as text (attackers write it hoping a renderer evaluates it). */
const TEMPLATE_SYNTAX = ["$", "{x}"].join("")

/**
 * The reverse DNS name and the AS organization of an incident's source are written by whoever holds the address:
 * every channel carries them as attacker text. The name below is what a PTR record may hold once cleaned (the
 * enrichment job removes its control characters; reverseDnsName is that step).
 */
const PTR = reverseDnsName(
  `<script>alert(1)</script>.<@U123>.<!channel>.@here.{{x}}.${TEMPLATE_SYNTAX}.a\u0007b\u001b[31mc.https://evil.example`,
) as string
const ORG = "<!here> Evil <b>Corp</b> @channel {{DATE(2026-01-01T00:00:00Z)}}"

const hostile = (): { message: AlertMessage; payload: unknown } =>
  incidentFixture("incident.created", (incident) => ({
    ...incident,
    source: { scope: "external", network: null, reverseDns: PTR, asn: 64496, asOrganization: ORG, country: "NL" },
  }))

describe("a source address's enrichment in alert messages", () => {
  test("the cleaned PTR name keeps no control character; a name longer than a DNS name is dropped", () => {
    expect(PTR).toBe(
      `<script>alert(1)</script>.<@U123>.<!channel>.@here.{{x}}.${TEMPLATE_SYNTAX}.ab[31mc.https://evil.example`,
    )
    expect(reverseDnsName(`${"x".repeat(60)}.`.repeat(34))).toBeUndefined()
    expect(reverseDnsName("\u0000\u200b")).toBeUndefined()
    expect(reverseDnsName("host.example.")).toBe("host.example")
  })

  test("Slack shows the name and the AS organization only in code spans, escaped and defanged, with no mention", () => {
    const body = JSON.stringify(slackMessage(hostile().message, CONTEXT))
    // Slack's control sequences cannot be written: every < and > is escaped, "@" is not an at sign, links defanged.
    for (const raw of ["<@U123>", "<!channel>", "<!here>", "<script>", "@here", "@channel", "https://evil"]) {
      expect(body).not.toContain(raw)
    }
    expect(body).toContain(
      `\`&lt;script&gt;alert(1)&lt;/script&gt;.&lt;＠U123&gt;.&lt;!channel&gt;.＠here.{{x}}.${TEMPLATE_SYNTAX}.ab[31mc[.]hxxps[:]//evil[.]example\``,
    )
    expect(body).toContain(
      "AS64496 `&lt;!here&gt; Evil &lt;b&gt;Corp&lt;/b&gt; ＠channel {{DATE(2026-01-01T00:00:00Z)}}`",
    )
    expect(body).toContain("Country NL")
  })

  test("Teams shows them only in monospace TextRuns, defanged, with no card function; the card stays valid", () => {
    const card = teamsMessage(hostile().message, CONTEXT)
    const text = JSON.stringify(card)
    expect(text).not.toContain("{{")
    expect(text).not.toContain("https://evil")
    const runs =
      JSON.stringify(card).match(/\{"type":"TextRun","text":"[^"]*(?:\\"[^"]*)*","fontType":"Monospace"\}/g) ?? []
    expect(runs.some((r) => r.includes("alert(1)") && r.includes("evil[.]example"))).toBe(true)
    expect(runs.some((r) => r.includes("Evil <b>Corp</b>") && r.includes("｛{DATE"))).toBe(true)
    expect(text).toContain('"title":"Autonomous system","value":"AS64496"')
    expect(text).toContain('"title":"Country","value":"NL"')
    const content = (card as { attachments: Array<{ content: unknown }> }).attachments[0]?.content
    expect(adaptiveCardErrors(content)).toBe("")
  })

  test("syslog carries them as escaped SD params, one line, and in the JSON MSG", () => {
    const { message, payload } = hostile()
    const line = syslogMessage(message, CONTEXT, payload)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point
    expect(line).not.toMatch(/[\u0000-\u001f\u007f]/)
    expect(line).toContain(`sourceReverseDns="${PTR.replace(/["\\\]]/g, (c) => `\\${c}`)}"`)
    expect(line).toContain('sourceAsn="64496"')
    expect(line).toContain('sourceCountry="NL"')
    expect(line).toContain(`"source":{"scope":"external","network":null,"reverseDns":${JSON.stringify(PTR)}`)
  })

  test("OCSF: hostname, location.country and autonomous_system on every src_endpoint, valid against the schema", () => {
    const finding = ocsfDetectionFinding(hostile().message, CONTEXT) as {
      evidences: Array<{ src_endpoint: Record<string, unknown> }>
      observables: Array<{ name: string; value: string }>
    }
    for (const evidence of finding.evidences) {
      expect(evidence.src_endpoint).toMatchObject({
        ip: "203.0.113.7",
        hostname: PTR,
        location: { country: "NL" },
        autonomous_system: { number: 64496, name: ORG },
      })
    }
    expect(finding.observables.map((o) => o.name)).toContain("evidences.src_endpoint.hostname")
    expect(ocsfErrors(finding)).toBe("")
    // Nothing known: the endpoint is the address alone, still valid.
    const plain = incidentFixture("incident.created", (i) => ({
      ...i,
      source: { scope: "external", network: null, reverseDns: null, asn: null, asOrganization: null, country: null },
    }))
    const bare = ocsfDetectionFinding(plain.message, CONTEXT) as typeof finding
    expect(bare.evidences[0]?.src_endpoint).toEqual({ ip: "203.0.113.7", port: 51234 })
    expect(ocsfErrors(bare)).toBe("")
  })

  test("the native webhook body carries `source`; a body queued before it existed still renders", () => {
    const text = serializeAlertMessage(hostile().message)
    expect(JSON.parse(text).incident.source).toEqual({
      scope: "external",
      network: null,
      reverseDns: PTR,
      asn: 64496,
      asOrganization: ORG,
      country: "NL",
    })
    const { source: _gone, ...older } = hostile().message.incident
    const old: AlertMessage = { ...hostile().message, incident: older }
    expect(JSON.stringify(slackMessage(old, CONTEXT))).not.toContain("*Source*")
    expect(ocsfErrors(ocsfDetectionFinding(old, CONTEXT))).toBe("")
  })
})
