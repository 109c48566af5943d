import { readFileSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "..", "..")

/** A ```sh block of a page: where it starts, its first line, its text, and why it is not run (its marking comment). */
export interface ShellBlock {
  readonly page: string
  /** 1-based line of the opening fence. */
  readonly line: number
  readonly first: string
  readonly text: string
  /** The reason of a `<!-- not run by the tests: … -->` comment right before the fence (blank lines between allowed). */
  readonly notRun: string | undefined
}

export const shellBlocks = (page: string): ReadonlyArray<ShellBlock> => {
  const lines = readFileSync(join(ROOT, page), "utf8").split("\n")
  const blocks: Array<ShellBlock> = []
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)(```+|~~~+)(.*)$/.exec(lines[i] ?? "")
    if (fence === null) continue
    const [, indent = "", marker = "", info = ""] = fence
    let end = i + 1
    while (end < lines.length && !(lines[end] ?? "").trimStart().startsWith(marker)) end++
    if (info.trim() === "sh") {
      const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      let before = i - 1
      while (before >= 0 && (lines[before] ?? "").trim() === "") before--
      const notRun = /^\s*<!-- not run by the tests: (.+?) -->\s*$/.exec(lines[before] ?? "")?.[1]
      blocks.push({ page, line: i + 1, first: body[0] ?? "", text: body.join("\n"), notRun })
    }
    i = end
  }
  return blocks
}

/** The one ```sh block of `page` whose first line starts with `first`; throws when there is not exactly one. */
export const shellBlock = (page: string, first: string): string => {
  const found = shellBlocks(page).filter((b) => b.first.startsWith(first))
  if (found.length !== 1) throw new Error(`${found.length} sh blocks of ${page} start with ${first}`)
  return found[0]?.text ?? ""
}
