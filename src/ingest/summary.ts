import { eventTypeSpec } from "../domain/eventTypes.ts"
import { sanitizeText } from "../domain/sanitize.ts"

/** The first of these members of an attacker input that is a non-empty string. */
export const firstString = (input: Record<string, unknown>, keys: ReadonlyArray<string>) => {
  for (const key of keys) {
    const value = input[key]
    if (typeof value === "string" && value !== "") return value
  }
  return undefined
}

/** The members an event type's detailNoun names, under the mappers' names. */
const DETAIL_KEYS = ["command", "path", "url", "fileName", "query", "userAgent", "remoteVersion", "targetHost"] as const

/**
 * Pure: the stored one-line summary of an event, from its type's template and its attacker input (already prepared),
 * or `<type> from <address>` for a type with no template.
 */
export const summaryOf = (
  e: { readonly type: string; readonly sourceIp: string; readonly port: number; readonly service: string },
  attackerInput: Record<string, unknown>,
) =>
  sanitizeText(
    eventTypeSpec(e.type)?.summary({
      sourceIp: e.sourceIp,
      port: e.port,
      service: e.service,
      username: firstString(attackerInput, ["username", "user", "login"]),
      // The member the type's detailNoun names, under the mappers' names (OpenCanary FILENAME → fileName,
      // REMOTEVERSION → remoteVersion).
      detail: firstString(attackerInput, DETAIL_KEYS),
    }) ?? `${e.type} from ${e.sourceIp}`,
  )
