import { Data } from "effect"

/**
 * Why an admin service refused, one union for every admin service. Each refusal carries facts, never wording: which
 * input it is about (`field`), what is wrong with it (`reason`) and what else a face needs to say so (the rule a value
 * must follow, a sentence that names no input, the id asked for). Each face words them itself: the CLI in its flags
 * (admin/cli/words.ts), the console in its form fields. The console answers NotFound with its 404 page (another
 * organization's id is the same answer), Forbidden with its 403 page, LinkExpired with its "link expired" page, and
 * the others as an error notice on the page the form came from. No fact ever holds a secret.
 */

/** The inputs of the admin services, by the name each has in the services' input (`heartbeatInterval`). */
export type Field =
  | "org"
  | "name"
  | "scopes"
  | "expires"
  | "profile"
  | "heartbeatInterval"
  | "deception"
  | "retention"
  | "kind"
  | "format"
  | "url"
  | "token"
  | "minSeverity"
  | "sensorHealth"
  | "settle"
  | "grace"
  | "force"
  | "status"
  | "email"
  | "role"
  | "user"
  | "password"
  | "reason"
  | "note"
  | "assignee"
  | "sensor"
  | "source"
  | "olderThan"
  | "port"
  | "type"
  | "networks"
  | "username"
  | "label"
  | "file"
  | "recipients"
  | "issuer"
  | "clientId"
  | "clientSecret"
  | "domains"
  | "roleClaim"
  | "defaultRole"
  | "passwordSignIn"

/**
 * What is wrong with an input:
 * - `required`: nothing was given (`oneOf`: at least one of these inputs is needed);
 * - `malformed`: a value that is not of the accepted form, range or length (`rule` says what is accepted);
 * - `unknown`: a value naming something that does not exist (a scope, a sensor, an event type);
 * - `notApplicable`: an input that does not go with the rest (another kind's flag, an OCSF channel's health alerts);
 * - `refused`: a value the service's policy refuses (a channel address that resolves to a private host);
 * - `taken`: a value already registered;
 * - `state`: what the input names is in a state that forbids it (a revoked sensor, an earlier grace, oneself);
 * - `unusable`: a file that cannot be written, read or restored.
 */
export type InvalidReason =
  | "required"
  | "malformed"
  | "unknown"
  | "notApplicable"
  | "refused"
  | "taken"
  | "state"
  | "unusable"

export interface InvalidFacts {
  /** The input refused; absent when no single input is (a backup file's content, the matching incidents changed). */
  readonly field?: Field | undefined
  readonly reason: InvalidReason
  /** What the value must be, worded to follow the input's name: "must be in the future", "may be at most 30d". */
  readonly rule?: string | undefined
  /** A whole sentence that names no input, for a refusal the rule cannot say (a backup's damage, a refused host). */
  readonly detail?: string | undefined
  /** The inputs of which at least one is needed (`required` without a `field`). */
  readonly oneOf?: ReadonlyArray<Field> | undefined
}

/** A value that is missing or not accepted. */
export class Invalid extends Data.TaggedError("Invalid")<InvalidFacts> {}

/** The things an id names; `unknown` for all of them whatever the reason (another organization's is unknown too). */
export type Thing =
  | "organization"
  | "key"
  | "sensor"
  | "channel"
  | "delivery"
  | "user"
  | "ignoreRule"
  | "incident"
  | "baitCredential"

/**
 * No such id in the actor's organization (another organization's id is the same answer). `reason`: `unknown`, or
 * `notOpen` for an incident that exists but is closed already (a close).
 */
export class NotFound extends Data.TaggedError("NotFound")<{
  readonly field: Thing
  readonly reason: "unknown" | "notOpen"
  /** The id as given (cut to a printable length by the service). */
  readonly id: string
}> {}

/** The name is already taken: an organization's among organizations, a sensor's within its organization. */
export class Conflict extends Data.TaggedError("Conflict")<{
  readonly field: "name"
  readonly reason: "taken"
  readonly within: "organizations" | "organization"
  readonly name: string
  /** The id of what has the name already. */
  readonly takenBy: string
}> {}

/**
 * The actor's role may not do this: `operatorOnly` (the CLI alone), `adminOnly` (not an analyst or a viewer),
 * `readOnly` (a viewer changes nothing).
 */
export class Forbidden extends Data.TaggedError("Forbidden")<{
  readonly field?: undefined
  readonly reason: "operatorOnly" | "adminOnly" | "readOnly"
}> {}

/** A set-password link that is unknown, used or expired (one answer for the three). */
export class LinkExpired extends Data.TaggedError("LinkExpired")<{
  readonly field?: undefined
  readonly reason: "expired"
}> {}

export type AdminError = NotFound | Invalid | Conflict | Forbidden | LinkExpired

const TAGS: ReadonlyArray<string> = ["NotFound", "Invalid", "Conflict", "Forbidden", "LinkExpired"]
export const isAdminError = (e: unknown): e is AdminError =>
  typeof e === "object" && e !== null && "_tag" in e && TAGS.includes((e as { _tag: string })._tag)

/** The one refusal of a missing value, whichever command or form. */
export const missing = (field: Field) => new Invalid({ field, reason: "required" })
/** A value refused for the rule it breaks ("must be in the future"), worded after the input's name. */
export const malformed = (field: Field, rule: string) => new Invalid({ field, reason: "malformed", rule })
export const invalid = (facts: InvalidFacts) => new Invalid(facts)
export const notFound = (field: Thing, id: string, reason: "unknown" | "notOpen" = "unknown") =>
  new NotFound({ field, reason, id })
