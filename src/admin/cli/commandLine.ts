import { HelpDoc, ValidationError } from "@effect/cli"

/** Text without its colours (@effect/cli's help and messages colour their words with escape sequences). */
export const withoutColours = (text: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the colours are escape sequences
  text.replace(/\u001b\[[0-9;]*m/g, "")

/** The text of one of @effect/cli's messages, on one line without its colours. */
const plain = (doc: HelpDoc.HelpDoc) => withoutColours(HelpDoc.toAnsiText(doc)).replace(/\s+/g, " ").trim()

/**
 * A command line @effect/cli refused, in the CLI's words: one line naming the problem and where the commands (or
 * the command's flags) are listed. `words` are the command line's words before its first flag; `groups` the names
 * of the command groups (`org`, `key`, …), whose commands are the words after them.
 */
export const commandLineWords = (
  error: ValidationError.ValidationError,
  words: ReadonlyArray<string>,
  groups: ReadonlyArray<string>,
): string => {
  const group = words[0] !== undefined && groups.includes(words[0]) ? words[0] : undefined
  if (ValidationError.isCommandMismatch(error) || ValidationError.isMissingSubcommand(error)) {
    if (group !== undefined && words.length === 1) return `${group} needs a command (bun run admin ${group} lists them)`
    return `unknown command: ${words.join(" ")} (bun run admin ${group ?? "help"} lists the commands)`
  }
  const text = plain(error.error)
  // A required flag left out is worded as the services word a missing value.
  const missingFlag = /^Expected to find option: '(--[a-z-]+)'$/.exec(text)
  if (missingFlag !== null) return `${missingFlag[1]} is required`
  // The command was found (its own flags or arguments are refused): its help lists them.
  const command = words.slice(0, group === undefined ? 1 : 2).join(" ")
  return `${text} (bun run admin ${command} --help lists its flags)`
}
