import { Data } from "effect"

/**
 * Why an admin service refused, one union for every admin service. Messages never hold a secret; they name the
 * CLI's flags (`--name`), which the console words as its form fields. The CLI prints any of them as one line; the
 * console answers NotFound with its 404 page (D30), Forbidden with its 403 page, LinkExpired with its "link
 * expired" page, and the others as an error notice on the page the form came from.
 */
/** No such id in the actor's organization (another organization's id is the same answer, D30). */
export class NotFound extends Data.TaggedError("NotFound")<{ readonly message: string }> {}
/** A value that is missing or not accepted. */
export class Invalid extends Data.TaggedError("Invalid")<{ readonly message: string }> {}
/** The name (or address) is already taken. */
export class Conflict extends Data.TaggedError("Conflict")<{ readonly message: string }> {}
/** The actor's role may not do this. */
export class Forbidden extends Data.TaggedError("Forbidden")<{ readonly message: string }> {}
/** A set-password link that is unknown, used or expired (D26). */
export class LinkExpired extends Data.TaggedError("LinkExpired")<{ readonly message: string }> {}

export type AdminError = NotFound | Invalid | Conflict | Forbidden | LinkExpired

const TAGS: ReadonlyArray<string> = ["NotFound", "Invalid", "Conflict", "Forbidden", "LinkExpired"]
export const isAdminError = (e: unknown): e is AdminError =>
  typeof e === "object" && e !== null && "_tag" in e && TAGS.includes((e as { _tag: string })._tag)

/** The one refusal of a missing value, whichever command or form: `--org is required`. */
export const missing = (flag: string) => new Invalid({ message: `${flag} is required` })
export const invalid = (message: string) => new Invalid({ message })
