import { HelpDoc, ValidationError } from "@effect/cli"

/** Text without its colours (@effect/cli's help and messages colour their words with escape sequences). */
export const withoutColours = (text: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the colours are escape sequences
  text.replace(/\u001b\[[0-9;]*m/g, "")

/** The text of one of @effect/cli's messages, on one line without its colours. */
const plain = (doc: HelpDoc.HelpDoc) => withoutColours(HelpDoc.toAnsiText(doc)).replace(/\s+/g, " ").trim()

/**
 * A command line @effect/cli refused, in the CLI's words: one line naming the problem and where the commands (or
 * the command's options) are listed. `words` are the command line's words before its first flag; `groups` the
 * names of the command groups.
 */
export const commandLineWords = (
  error: ValidationError.ValidationError,
  words: ReadonlyArray<string>,
  groups: ReadonlyArray<string>,
): string => {
  const known = words[0] !== undefined && groups.includes(words[0])
  if (ValidationError.isCommandMismatch(error) || ValidationError.isMissingSubcommand(error)) {
    return `unknown command: ${words.join(" ")} (bun run admin ${known ? words[0] : "help"} lists the commands)`
  }
  const text = plain(error.error)
  // A required flag left out is worded as the services word a missing value.
  const missingFlag = /^Expected to find option: '(--[a-z-]+)'$/.exec(text)
  if (missingFlag !== null) return `${missingFlag[1]} is required`
  return `${text} (bun run admin ${known ? `${words.slice(0, 2).join(" ")} --help` : "help"} lists ${known ? "its options" : "the commands"})`
}
