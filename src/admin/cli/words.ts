import type { AdminError, Field, Thing } from "../errors.ts"

/** How the CLI names each input: its flag, or for the arguments it takes in place its placeholder. */
export const flagOf = (field: Field): string =>
  field === "retention" ? "retention" : `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`

const THING_WORDS: Record<Thing, string> = {
  organization: "organization",
  key: "key",
  sensor: "sensor",
  channel: "webhook channel",
  delivery: "delivery",
  user: "user",
  ignoreRule: "ignore rule",
  incident: "incident",
  baitCredential: "bait credential",
}

/**
 * An admin service's refusal in the CLI's words (its flags and placeholders), one line: the facts of errors.ts said as
 * the CLI says them (the console says them in its form fields, console/refusals.ts).
 */
export const cliWords = (e: AdminError): string => {
  switch (e._tag) {
    case "Invalid": {
      if (e.reason === "required" && e.oneOf !== undefined) {
        const flags = e.oneOf.map(flagOf)
        return `give at least one of ${flags.slice(0, -1).join(", ")} and ${flags.at(-1)}`
      }
      if (e.field === undefined) return e.detail ?? e.reason
      if (e.field === "deception" && e.reason === "malformed") return "usage: org deception <org-id> on|off"
      if (e.reason === "required") return `${flagOf(e.field)} is required`
      if (e.rule === undefined) return e.detail ?? `${flagOf(e.field)}: ${e.reason}`
      return `${flagOf(e.field)}${e.reason === "unknown" ? ":" : ""} ${e.rule}`
    }
    case "NotFound":
      if (e.field === "incident") return `no ${e.reason === "notOpen" ? "open " : ""}incident ${e.id}`
      return `unknown ${THING_WORDS[e.field]}: ${e.id}`
    case "Conflict":
      return e.within === "organizations"
        ? `an organization named "${e.name}" already exists (${e.takenBy}); use --allow-duplicate-name to create another`
        : `a sensor named "${e.name}" already exists in this organization (${e.takenBy}); choose another name`
    case "Forbidden":
      return e.reason === "operatorOnly"
        ? "Only an operator (bun run admin) can do this."
        : "Only an administrator can change settings."
    case "LinkExpired":
      return "This link has expired or was already used. Ask an administrator for a new one."
  }
}
