import { expect, test } from "bun:test"
import { type AlertMessage, sampleIncident } from "../../../src/domain/alertMessage.ts"
import { slackMessage } from "../../../src/domain/channels/slack.ts"
import { teamsMessage } from "../../../src/domain/channels/teams.ts"
import { CTX } from "./messages.ts"

/**
 * What matters most about an incident leads a chat message, under its title: a bait credential used, a source inside
 * the organization's networks, the other decoys the source touched. The network's label is an admin's words, shown
 * escaped like any text a person typed.
 */

const body = (incident: Partial<AlertMessage["incident"]>): AlertMessage => {
  const base = sampleIncident(new Date("2026-11-26T13:00:00Z"), CTX.appUrl)
  return {
    id: "whd_signals",
    type: "incident.created",
    createdAt: new Date("2026-11-26T13:00:00Z"),
    incident: { ...base, ...incident },
  }
}

const judged = body({
  baitCredentialUsed: true,
  otherSensors: 2,
  source: {
    scope: "internal",
    network: { cidr: "10.20.0.0/16", label: "Office <LAN> @here" },
    reverseDns: null,
    asn: null,
    asOrganization: null,
    country: null,
  },
})

test("Slack: bait, inside and the other sensors lead the message, the label escaped", () => {
  const text = JSON.stringify(slackMessage(judged, CTX))
  expect(text).toContain("Bait credential used: someone read a planted credential where it was planted.")
  expect(text).toContain("From inside your network (Office &lt;LAN&gt;")
  expect(text).toContain("Also seen on 2 other sensors of yours in the last 7 days.")
  expect(text).not.toContain("<LAN>")
  expect(text).not.toContain("@here")
})

test("Teams: the same lines, as bold attention text", () => {
  const card = JSON.stringify(teamsMessage(judged, CTX))
  expect(card).toContain("Bait credential used")
  expect(card).toContain("10.20.0.0/16")
  expect(card).toContain("Also seen on 2 other sensors")
})

test("an outside incident with no bait and no other sensor says none of them", () => {
  for (const text of [JSON.stringify(slackMessage(body({}), CTX)), JSON.stringify(teamsMessage(body({}), CTX))]) {
    expect(text).not.toContain("Bait credential used")
    expect(text).not.toContain("From inside your network")
    expect(text).not.toContain("Also seen on")
  }
})
