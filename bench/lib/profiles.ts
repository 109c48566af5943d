/**
 * The profiles of a run with --profile: each profiled part's summary, and the per-request stage table of the api part
 * (the service, the baseline and the HttpApi floor side by side).
 */
import { formatProfile, formatStageTable, type ProfileSummary, summarizeProfile } from "../profile-summary.ts"
import type { Json } from "./runner.ts"

/** The profile sections, and the summaries written into the results file. */
export const profileSections = (
  results: Record<string, Json>,
): { readonly sections: Array<string>; readonly profiles: Record<string, ProfileSummary> } => {
  const sections: Array<string> = []
  const profiles: Record<string, ProfileSummary> = {}
  for (const part of ["api", "console", "scale", "sweep", "ingest", "webhooks", "scale10m", "soak"]) {
    const file = results[part]?.profile
    if (typeof file !== "string") continue
    try {
      profiles[part] = summarizeProfile(file, 20)
      sections.push(`Profile of the service during ${part}\n${formatProfile(profiles[part] as ProfileSummary)}`)
    } catch (error) {
      sections.push(`Profile of ${part}: ${file} could not be read (${error})`)
    }
  }
  // The per-request stage breakdown of the api part: the service, the baseline and the HttpApi floor side by side.
  if (results.api?.profile && results.api?.baselineProfile) {
    try {
      const columns: Array<{ name: string; summary: ProfileSummary; requests?: number; cpuSeconds?: number }> = [
        {
          name: "service",
          summary: profiles.api ?? summarizeProfile(results.api.profile, 20),
          requests: results.api.requestsServed?.service,
          cpuSeconds: results.api.memory?.service?.cpuSeconds,
        },
        {
          name: "baseline",
          summary: summarizeProfile(results.api.baselineProfile, 20),
          requests: results.api.requestsServed?.baseline,
          cpuSeconds: results.api.memory?.baseline?.cpuSeconds,
        },
      ]
      profiles.apiBaseline = columns[1]?.summary as ProfileSummary
      if (results.api.floor?.profile) {
        profiles.apiFloor = summarizeProfile(results.api.floor.profile, 20)
        columns.push({
          name: "floor",
          summary: profiles.apiFloor,
          requests: results.api.floor.requestsServed,
          cpuSeconds: results.api.floor.memory?.cpuSeconds,
        })
      }
      sections.push(
        `Per-request stages during api (share of the samples with JavaScript on the stack; µs/req = sampled time ÷ the requests wrk made to that process, warm-ups included: CPU time only if the sampled total is close to the process's CPU in the last row, i.e. on a quiet machine; native work with no JavaScript on the stack, e.g. Bun's SQL client decoding rows, is in no stage)\n${formatStageTable(columns)}`,
      )
    } catch (error) {
      sections.push(`Stage table of api: profiles could not be read (${error})`)
    }
  }
  return { sections, profiles }
}
