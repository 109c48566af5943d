/**
 * `bun run build:server`: bundles the service into dist/server (main.js, its source map, the console's static files).
 * Each build writes a fresh directory of its own, dist/.server-XXXXXX, then swaps the symbolic link dist/server over
 * to it with one rename, which is atomic: two starts from one checkout (`bun run start` twice at once) never see a
 * half-written or removed build of the other, and a server already running keeps the directory it started from
 * (bin/serve runs the link's target). Builds that are no longer the link's target are removed after ten minutes.
 */
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs"
import { basename, join } from "node:path"

const root = join(import.meta.dir, "..")
const dist = join(root, "dist")
const current = join(dist, "server")
const KEEP_MS = 10 * 60_000

mkdirSync(dist, { recursive: true })
const build = mkdtempSync(join(dist, ".server-"))
// mkdtemp makes it 0700: the service may run as another user than the one who built it (the Dockerfile).
chmodSync(build, 0o755)
const bundled = Bun.spawnSync(
  ["bun", "build", "src/main.ts", "--target", "bun", "--outdir", build, "--sourcemap=linked"],
  { cwd: root, stdout: "inherit", stderr: "inherit" },
)
if (bundled.exitCode !== 0) {
  rmSync(build, { recursive: true, force: true })
  process.exit(bundled.exitCode ?? 1)
}
cpSync(join(root, "src", "console", "static"), join(build, "static"), { recursive: true })

// The swap: a new link beside the old one, renamed over it (rename replaces a link atomically, never a directory).
const link = join(dist, `.server-link-${process.pid}`)
rmSync(link, { force: true })
symlinkSync(basename(build), link)
for (;;) {
  try {
    renameSync(link, current)
    break
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "ENOTDIR") throw error
    // dist/server is still a directory, from a build before this one: moved aside once, removed below later.
    try {
      renameSync(current, join(dist, `.server-old-${process.pid}-${Date.now()}`))
    } catch (moved) {
      if ((moved as { code?: string }).code !== "ENOENT") throw moved
    }
  }
}

// Earlier builds nobody starts from any more (a server reads its directory only while it starts).
const target = readlinkSync(current)
for (const name of readdirSync(dist)) {
  if (!name.startsWith(".server-") || name === target) continue
  const path = join(dist, name)
  try {
    if (Date.now() - lstatSync(path).mtimeMs > KEEP_MS) rmSync(path, { recursive: true, force: true })
  } catch {
    // Removed by another build meanwhile.
  }
}
if (!existsSync(join(current, "main.js"))) throw new Error("dist/server/main.js is missing after the build")
