import { type Cidr, trusted } from "../../platform/http/clientIp.ts"

/**
 * The console's cookies are `__Host-` and Secure, so a browser keeps them only over HTTPS, or over plain HTTP on
 * localhost. A sign-in over plain HTTP on any other host arrives without its form cookie and would be answered "form
 * expired" forever; it is recognised here and answered with what to do instead.
 */

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])

/** The host name of a Host header, lower-cased and without its port. */
const hostName = (host: string | undefined): string => {
  const value = (host ?? "").trim().toLowerCase()
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1)
  return value.replace(/:\d*$/, "")
}

export interface RequestFacts {
  /** The console serves HTTPS itself (CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE). */
  readonly tls: boolean
  readonly peer: string | undefined
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly trustProxy: ReadonlyArray<Cidr>
}

/** The request came over plain HTTP: no TLS of our own and no trusted proxy saying `X-Forwarded-Proto: https`. */
export const plainHttp = (facts: RequestFacts): boolean => {
  if (facts.tls) return false
  const proto = facts.headers["x-forwarded-proto"]
  if (proto === undefined || facts.peer === undefined || !trusted(facts.peer, facts.trustProxy)) return true
  // The proxy nearest the browser writes the first value.
  return (proto.split(",")[0] ?? "").trim().toLowerCase() !== "https"
}

/** The browser dropped the console's Secure cookies: plain HTTP, on a host other than localhost. */
export const httpsRequired = (facts: RequestFacts): boolean =>
  plainHttp(facts) && !LOCAL_HOSTS.has(hostName(facts.headers.host))

export const HTTPS_REQUIRED_TITLE = "The console needs HTTPS"
export const HTTPS_REQUIRED_TEXT =
  "Your browser does not keep the console's sign-in cookies over plain HTTP, except on localhost, so signing in here cannot work. Serve the console over HTTPS: set CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE (a PEM certificate and its key), or put a TLS reverse proxy in front of CONSOLE_PORT that sends X-Forwarded-Proto: https and name it in TRUST_PROXY. On the server's own machine, http://localhost works too."
