import { describe, expect, test } from "bun:test"
import { channelsReached } from "../../src/domain/alertRouting.ts"
import { SEVERITIES, type Severity } from "../../src/domain/severity.ts"

const channel = (id: string, minSeverity: Severity, enabled = true) => ({ id, minSeverity, enabled })

describe("which channels an incident's severity reaches", () => {
  test("a channel gets incidents at or above its minimum severity, and none below", () => {
    const channels = SEVERITIES.map((s) => channel(`min-${s}`, s))
    expect(channelsReached(channels, "low").map((c) => c.id)).toEqual(["min-low"])
    expect(channelsReached(channels, "high").map((c) => c.id)).toEqual(["min-low", "min-medium", "min-high"])
    expect(channelsReached(channels, "critical")).toEqual(channels)
  })

  test("a disabled channel gets nothing, whatever the severity; the order given is kept", () => {
    const channels = [channel("b", "low"), channel("off", "low", false), channel("a", "medium")]
    expect(channelsReached(channels, "critical").map((c) => c.id)).toEqual(["b", "a"])
    expect(channelsReached([], "critical")).toEqual([])
  })
})
