import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { sha256 } from "../domain/crypto.ts"

/**
 * The console's static files (no inline script or style, per the CSP), served under names that carry a hash of their
 * content, so they can be cached for a year and a new release never mixes with an old file.
 */
export interface Asset {
  readonly path: string
  readonly body: Uint8Array
  readonly contentType: string
}

const load = (file: string, contentType: string): Asset => {
  const body = new Uint8Array(readFileSync(join(import.meta.dir, "static", file)))
  const hash = sha256(body).toString("hex").slice(0, 12)
  const dot = file.lastIndexOf(".")
  return { path: `/static/${file.slice(0, dot)}.${hash}${file.slice(dot)}`, body, contentType }
}

/**
 * One stylesheet: console.css (the shared look) then each area's own file (`<area>.css`, alphabetical), served as one
 * hashed file so a page still loads a single stylesheet.
 */
const stylesheet = (): Asset => {
  const dir = join(import.meta.dir, "static")
  const areas = readdirSync(dir)
    .filter((f) => f.endsWith(".css") && f !== "console.css")
    .sort()
  const body = Buffer.concat(["console.css", ...areas].map((f) => readFileSync(join(dir, f))))
  const hash = sha256(body).toString("hex").slice(0, 12)
  return { path: `/static/console.${hash}.css`, body: new Uint8Array(body), contentType: "text/css; charset=utf-8" }
}

export const STYLESHEET = stylesheet()
export const SCRIPT = load("console.js", "text/javascript; charset=utf-8")
export const ASSETS: ReadonlyArray<Asset> = [STYLESHEET, SCRIPT]
