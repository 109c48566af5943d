import type { AdminError, Field, Forbidden, Invalid, InvalidReason } from "../admin/errors.ts"

/**
 * The admin services' refusals in the console's words. A refusal carries facts (which input, what is wrong with it,
 * the rule a value must follow); the console names each input as its forms do, where the CLI names its flags.
 */

/** How the console's forms name each input of the admin services, unless a form names it otherwise. */
const FIELD_WORDS: Readonly<Record<Field, string>> = {
  org: "the organization",
  name: "the name",
  scopes: "the scopes",
  expires: "the expiry",
  profile: "the profile",
  heartbeatInterval: "the heartbeat interval",
  deception: "deception",
  retention: "the retention",
  kind: "the kind",
  format: "the format",
  url: "the URL",
  token: "the token",
  minSeverity: "the minimum severity",
  sensorHealth: "sensor-health alerts",
  settle: "the settle window",
  grace: "the grace period",
  force: "“End the earlier grace now”",
  status: "the status",
  email: "the email",
  role: "the role",
  user: "the user",
  password: "the password",
  reason: "the reason",
  note: "the note",
  assignee: "the assignee",
  sensor: "the sensor",
  source: "the source",
  olderThan: "“last seen longer ago than”",
  port: "the port",
  type: "the event type",
  networks: "the list",
  username: "the username",
  label: "the label",
  file: "the file",
  recipients: "the recipient list",
  issuer: "the issuer URL",
  clientId: "the client ID",
  clientSecret: "the client secret",
  domains: "the email domains",
  roleClaim: "the role claim",
  defaultRole: "the default role",
  passwordSignIn: "password sign-in",
}

/** A form's own names for some inputs, where they differ from FIELD_WORDS (the bulk close's "source IP"). */
export type FieldWords = Partial<Record<Field, string>>

/** What is wrong, when the refusal has neither a rule nor a sentence of its own. */
const REASON_WORDS: Readonly<Record<InvalidReason, string>> = {
  required: "is required",
  malformed: "is not accepted",
  unknown: "names nothing known",
  notApplicable: "does not apply here",
  refused: "is refused",
  taken: "is taken already",
  state: "cannot be used now",
  unusable: "cannot be used",
}

const listed = (names: ReadonlyArray<string>) =>
  names.length < 2 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`

/** A value that is missing or not accepted, the input named as the form names it: "the note must be at most …". */
export const invalidText = (e: Invalid, words: FieldWords = {}): string => {
  const name = (field: Field) => words[field] ?? FIELD_WORDS[field]
  if (e.reason === "required" && e.oneOf !== undefined) return `give at least one of ${listed(e.oneOf.map(name))}`
  if (e.field === undefined) return e.detail ?? "This cannot be done."
  if (e.reason === "required") return `${name(e.field)} is required`
  if (e.rule !== undefined) return `${name(e.field)}${e.reason === "unknown" ? ":" : ""} ${e.rule}`
  return e.detail ?? `${name(e.field)} ${REASON_WORDS[e.reason]}`
}

/** A viewer's refusal: what a viewer may not change, and who may. */
export const READ_ONLY_TEXT =
  "A viewer reads only: closing, notes, acknowledging and assigning incidents are for analysts and administrators."

/** A viewer's refusal of a Settings page. */
export const NO_SETTINGS_TEXT =
  "Settings are for analysts and administrators: a viewer reads incidents, events and sources."

/** Why the role may not: the 403 page's text. */
export const forbiddenText = (e: Forbidden): string =>
  e.reason === "operatorOnly"
    ? "Only an operator, at the server's command line (bun run admin), can do this."
    : e.reason === "readOnly"
      ? READ_ONLY_TEXT
      : "Only an administrator can change settings."

/** A refusal shown as an error notice on the page the form came from (an unknown id is the 404 page instead). */
export const refusalText = (e: Exclude<AdminError, { readonly _tag: "NotFound" }>, words: FieldWords = {}): string => {
  switch (e._tag) {
    case "Invalid":
      return invalidText(e, words)
    case "Conflict":
      return e.within === "organizations"
        ? `An organization named "${e.name}" already exists (${e.takenBy}).`
        : `A sensor named "${e.name}" already exists in this organization (${e.takenBy}); choose another name.`
    case "Forbidden":
      return forbiddenText(e)
    case "LinkExpired":
      return "This link has expired or was already used. Ask an administrator for a new one."
  }
}
