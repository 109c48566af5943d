import { expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { isCrossSite, safeNext } from "../../src/console/http.ts"
import { Attacker, Layout } from "../../src/console/pages/components.tsx"

const CONSOLE_DIR = join(import.meta.dir, "..", "..", "src", "console")
const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : /\.(ts|tsx)$/.test(entry.name)
        ? [join(dir, entry.name)]
        : [],
  )

test("D29: no raw-HTML escape hatch anywhere in the console's code", () => {
  const files = sources(CONSOLE_DIR)
  expect(files.length).toBeGreaterThan(5)
  for (const file of files) {
    const text = readFileSync(file, "utf8")
    expect(text).not.toMatch(/dangerouslySetInnerHTML\s*[=:{]/)
    expect(text).not.toMatch(/from "hono\/html"/)
    expect(text).not.toMatch(/\braw\(/)
    expect(text).not.toMatch(/\.innerHTML\b/)
  }
})

test("D29: attacker text renders escaped, in text and in attributes", () => {
  const payload = `</code><script>alert(1)</script><img src=x onerror=alert(2)>"'&`
  const out = String(Attacker({ value: payload }))
  expect(out).not.toContain("<script>")
  expect(out).not.toContain("<img")
  expect(out).toContain("&lt;script&gt;")
  const page = String(
    Layout({ title: `"><script>x</script>`, section: "none", children: Attacker({ value: payload }) }),
  )
  expect(page).not.toContain("<script>x")
  expect(page).toContain("&quot;&gt;&lt;script&gt;")
})

test("D29: a long attacker value is cut, the rest behind a <details>", () => {
  const out = String(Attacker({ value: "x".repeat(1000) }))
  expect(out).toContain("<details")
  expect(out).toContain("1000 characters")
})

test("D28: cross-site requests are recognised by Sec-Fetch-Site and Origin", () => {
  const app = "https://console.example"
  expect(isCrossSite({ "sec-fetch-site": "cross-site" }, app)).toBe(true)
  expect(isCrossSite({ "sec-fetch-site": "same-site" }, app)).toBe(true)
  expect(isCrossSite({ "sec-fetch-site": "same-origin", origin: app, host: "console.example" }, app)).toBe(false)
  expect(isCrossSite({ origin: "https://evil.example", host: "console.example" }, app)).toBe(true)
  expect(isCrossSite({ origin: "null", host: "console.example" }, app)).toBe(true)
  expect(isCrossSite({ origin: "http://10.0.0.5:3000", host: "10.0.0.5:3000" }, app)).toBe(false)
  expect(isCrossSite({ host: "console.example" }, app)).toBe(false)
})

test("D25: the return path after sign-in stays on this site", () => {
  expect(safeNext("/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")).toBe("/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")
  expect(safeNext("//evil.example/x")).toBe("/")
  expect(safeNext("/\\evil.example")).toBe("/")
  expect(safeNext("https://evil.example")).toBe("/")
  expect(safeNext(undefined)).toBe("/")
})
