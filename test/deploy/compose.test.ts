import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import Ajv from "ajv"
import draft07 from "ajv/dist/refs/json-schema-draft-07.json"

/**
 * compose.yaml against the published Compose Specification's JSON schema (test/fixtures/compose-spec, with where it
 * came from), as written and with its variables set as the documentation says; and what the documentation tells a
 * reader about it: the secrets to set before `docker compose up`, the service names of `docker compose exec|run`, the
 * public addresses passed through like BASE_URL. No Docker engine is needed: the file is parsed, not run.
 */

const ROOT = join(import.meta.dir, "..", "..")
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")
const COMPOSE_TEXT = read("compose.yaml")
const COMPOSE = Bun.YAML.parse(COMPOSE_TEXT) as {
  readonly services: Record<string, { readonly build?: unknown; readonly environment?: Record<string, unknown> }>
} & Record<string, unknown>
const SERVICES = Object.keys(COMPOSE.services)

// The schema is draft-07 and names its meta-schema `https://json-schema.org/draft-07/schema`; Ajv's default class is
// draft-07 and knows that meta-schema as `http://json-schema.org/draft-07/schema#`, so it is registered under the
// schema's spelling too. strictTypes is off: the published schema leaves `type` out beside some keywords (an
// `additionalProperties` in a oneOf branch), which is valid JSON Schema; unknown keywords are still refused.
const schema = JSON.parse(read("test/fixtures/compose-spec/compose-spec.json")) as Record<string, unknown>
const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true })
ajv.addMetaSchema({ ...draft07, $id: "https://json-schema.org/draft-07/schema" })
const validate = ajv.compile(schema)
const schemaErrors = (value: unknown): string => (validate(value) ? "" : ajv.errorsText(validate.errors))

/**
 * Compose's interpolation of one value (compose-spec 12-interpolation.md): `$$` is a `$`; `${VAR}` and `$VAR`;
 * `${VAR:-default}` / `${VAR-default}` (unset or empty / unset); `${VAR:?error}` / `${VAR?error}` fail naming the error.
 */
const interpolate = (value: string, env: Readonly<Record<string, string>>): string =>
  value.replace(/\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}|\$(\w+)/g, (whole, braced, op, arg, bare) => {
    if (whole === "$$") return "$"
    const name = (braced ?? bare) as string
    const set = env[name]
    const missing = op?.startsWith(":") ? set === undefined || set === "" : set === undefined
    if (op === ":-" || op === "-") return missing ? (arg as string) : (set as string)
    if (op === ":?" || op === "?") {
      if (missing) throw new Error(`required variable ${name} is missing a value: ${arg}`)
      return set as string
    }
    return set ?? ""
  })

const interpolateAll = (value: unknown, env: Readonly<Record<string, string>>): unknown =>
  typeof value === "string"
    ? interpolate(value, env)
    : Array.isArray(value)
      ? value.map((v) => interpolateAll(v, env))
      : typeof value === "object" && value !== null
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)]))
        : value

/** The variables compose.yaml cannot start without: every `${VAR:?…}` / `${VAR?…}`. */
const REQUIRED = [...new Set([...COMPOSE_TEXT.matchAll(/\$\{(\w+):?\?[^}]*\}/g)].map((m) => m[1] as string))].sort()

/** The `export A=… B=…` names of a shell text. */
const exported = (text: string): ReadonlyArray<string> =>
  text
    .split("\n")
    .filter((line) => line.startsWith("export "))
    .flatMap((line) => [...line.replace(/#.*/, "").matchAll(/\b([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1] as string))

describe("compose.yaml and the Compose Specification", () => {
  test("Bun's YAML parser resolves its anchors and merge keys (<<) as compose does", () => {
    const keys: Array<string> = []
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk)
      else if (typeof value === "object" && value !== null)
        for (const [k, v] of Object.entries(value)) {
          keys.push(k)
          walk(v)
        }
    }
    walk(COMPOSE)
    expect(keys.filter((k) => k === "<<")).toEqual([])
    // `service` has all of x-app; a replica has x-app's environment with its own TRUST_PROXY over it.
    const app = COMPOSE["x-app"] as { build: unknown; image: string; environment: Record<string, unknown> }
    expect(COMPOSE.services.service).toMatchObject({ build: app.build, image: app.image, environment: app.environment })
    expect(COMPOSE.services.replica1?.environment).toEqual({
      ...app.environment,
      TRUST_PROXY: (COMPOSE["x-replica"] as { environment: Record<string, unknown> }).environment.TRUST_PROXY,
    })
    expect(String(COMPOSE.services.replica1?.environment?.TRUST_PROXY)).toMatch(/^\$\{BALANCER_ADDRESS:-[\d.]+\}$/)
  })

  test("is valid against the published schema, as written and with the variables the documentation sets", () => {
    expect(schemaErrors(COMPOSE)).toBe("")
    const env = Object.fromEntries(REQUIRED.map((name) => [name, "0123456789abcdef0123456789abcdef"]))
    expect(schemaErrors(interpolateAll(COMPOSE, env))).toBe("")
    // The check itself: the schema does refuse what compose refuses.
    const wrong = { services: { service: { image: "x", restart: 5, ports: [{ target: "not a port" }], bogus: 1 } } }
    expect(schemaErrors(wrong)).toContain("must NOT have additional properties")
    expect(schemaErrors({ ...COMPOSE, services: { service: { build: ".", environment: [1, 2] } } })).not.toBe("")
  })

  test("its required variables are SECRET_KEY and POSTGRES_PASSWORD; without one it does not start", () => {
    expect(REQUIRED).toEqual(["POSTGRES_PASSWORD", "SECRET_KEY"])
    for (const name of REQUIRED) {
      const env = Object.fromEntries(REQUIRED.filter((n) => n !== name).map((n) => [n, "set"]))
      expect(() => interpolateAll(COMPOSE, env)).toThrow(`required variable ${name}`)
    }
  })
})

describe("what the documentation says about compose.yaml", () => {
  const PAGES = [
    "README.md",
    ...(readdirSync(join(ROOT, "docs"), { recursive: true }) as Array<string>)
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`)
      .sort(),
  ]

  test("each page that shows `docker compose up` (and compose.yaml's own comment) exports the required variables before", () => {
    const UP = /docker compose (?:--profile \S+ )*up\b/
    const places = [
      // A page as a reader goes through it, its text and blocks alike.
      ...PAGES.map((page) => ({ where: page, text: read(page) })),
      {
        where: "compose.yaml",
        text: COMPOSE_TEXT.split("\n")
          .filter((line) => line.startsWith("#"))
          .map((line) => line.replace(/^#\s*/, ""))
          .join("\n"),
      },
    ].filter((p) => UP.test(p.text))
    expect(places.map((p) => p.where).sort()).toEqual(["README.md", "compose.yaml", "docs/operators.md"])
    const missing = places.map((p) => ({
      where: p.where,
      missing: REQUIRED.filter((name) => !exported(p.text.slice(0, p.text.search(UP))).includes(name)),
    }))
    expect(missing).toEqual(places.map((p) => ({ where: p.where, missing: [] })))
  })

  test("every `docker compose exec|run|up <service>` in README.md, docs/ and compose.yaml's comments names one of its services", () => {
    const sources = [
      ...PAGES.map((page) => ({ page, text: read(page) })),
      {
        page: "compose.yaml",
        text: COMPOSE_TEXT.split("\n")
          .filter((line) => /^\s*#/.test(line))
          .join("\n"),
      },
    ]
    // Options of exec, run and up that take a value (the next word is not a service).
    const TAKES_VALUE = new Set([
      "-e",
      "--env",
      "-u",
      "--user",
      "-w",
      "--workdir",
      "--entrypoint",
      "--name",
      "-p",
      "--publish",
      "-v",
      "--volume",
      "-l",
      "--label",
      "--index",
      "--scale",
      "-t",
      "--timeout",
      "--pull",
    ])
    const named: Array<{ page: string; command: string; services: ReadonlyArray<string> }> = []
    for (const { page, text } of sources) {
      for (const m of text.matchAll(/docker compose((?: --profile \S+)*) (exec|run|up)\b([^`#|;&)\n]*)/g)) {
        const words = (m[3] ?? "").trim().split(/\s+/).filter(Boolean)
        const services: Array<string> = []
        for (let i = 0; i < words.length; i++) {
          const word = words[i] as string
          if (word.startsWith("-")) {
            if (TAKES_VALUE.has(word)) i++
            continue
          }
          services.push(word)
          // exec and run take one service; what follows is its command.
          if (m[2] !== "up") break
        }
        named.push({ page, command: m[0].trim(), services })
      }
    }
    expect(named.filter((n) => n.services.length > 0).length).toBeGreaterThan(8)
    const unknown = named.filter((n) => n.services.some((s) => !SERVICES.includes(s)))
    expect(unknown).toEqual([])
    // exec and run always name one.
    expect(named.filter((n) => !/ up\b/.test(n.command) && n.services.length !== 1)).toEqual([])
  })

  test("every public address the service reads is passed through from the environment like BASE_URL", () => {
    // The settings config.ts reads as an http(s) URL: the addresses the service gives out.
    const urls = [...read("src/platform/config.ts").matchAll(/envVar\("([A-Z_]+)", parseHttpUrl\)/g)].map(
      (m) => m[1] as string,
    )
    const addresses = [...new Set(urls)].sort()
    expect(addresses).toEqual(["APP_URL", "BASE_URL", "INGEST_URL"])
    for (const [name, service] of Object.entries(COMPOSE.services).filter(([, s]) => s.build !== undefined)) {
      const passed = addresses.map((address) => [address, String(service.environment?.[address] ?? "(not passed)")])
      expect({ service: name, passed }).toEqual({
        service: name,
        passed: addresses.map((address) => [address, expect.stringMatching(new RegExp(`^\\$\\{${address}:-http://`))]),
      })
    }
  })
})
