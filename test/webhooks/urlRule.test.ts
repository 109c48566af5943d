import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import {
  type AddressPolicy,
  checkAndResolveWebhookUrl,
  checkWebhookUrl,
  isPublicAddress,
  parseAllowPrivate,
  resolveAndCheck,
  systemLookup,
} from "../../src/platform/outbound/urlRule.ts"

/** A lookup that must not be called (IP-literal hosts are checked directly). */
const noLookup = async (host: string): Promise<ReadonlyArray<string>> => {
  throw new Error(`unexpected lookup of ${host}`)
}

const fakeLookup =
  (table: Readonly<Record<string, ReadonlyArray<string>>>) =>
  async (host: string): Promise<ReadonlyArray<string>> => {
    const found = table[host]
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" })
    return found
  }

const LOCAL_TEST: AddressPolicy = { allowPrivate: ["127.0.0.0/8", "::1/128"] }

describe("checkWebhookUrl syntax", () => {
  test("accepts ordinary https URLs with path, query and port", () => {
    const result = checkWebhookUrl("https://example.com/hook")
    expect(result.ok).toBe(true)
    if (result.ok) {
      expect(result.host).toBe("example.com")
      expect(result.port).toBe(443)
      expect(result.url.href).toBe("https://example.com/hook")
    }
    const withPort = checkWebhookUrl("HTTPS://Hooks.Example.com:8443/a/b?token=x&y=1")
    expect(withPort.ok && withPort.host === "hooks.example.com" && withPort.port === 8443).toBe(true)
    const v6 = checkWebhookUrl("https://[2606:2800:220:1:248:1893:25c8:1946]:444/")
    expect(v6.ok && v6.host === "2606:2800:220:1:248:1893:25c8:1946" && v6.port === 444).toBe(true)
  })

  test.each([
    ["http://example.com/hook", "http:// is not allowed; webhook URLs must use https://"],
    ["ftp://example.com/hook", "ftp:// is not allowed; webhook URLs must use https://"],
    ["ws://example.com/", "ws:// is not allowed; webhook URLs must use https://"],
    ["file:///etc/passwd", "file:// is not allowed; webhook URLs must use https://"],
    ["javascript:alert(1)", "javascript:// is not allowed; webhook URLs must use https://"],
  ])("refuses %s", (raw, reason) => {
    expect(checkWebhookUrl(raw)).toEqual({ ok: false, reason })
  })

  test.each([
    "https://user:pass@example.com/",
    "https://user@example.com/",
    "https://:pass@example.com/",
    "https://@example.com/",
    "https://example.com@evil.example/",
  ])("refuses credentials in %s", (raw) => {
    const result = checkWebhookUrl(raw)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toContain("credentials")
  })

  test.each([
    ["", "empty"],
    ["not a url", "spaces"],
    ["https://", "valid"],
    ["example.com/hook", "valid"],
    ["https:example.com/hook", "must start with https://"],
    ["https:\\\\example.com/hook", "must start with https://"],
    ["https://exa mple.com/", "spaces"],
    ["https://example.com/\n", "control"],
    [" https://example.com/", "spaces"],
    ["https://example.com/#frag", "fragment"],
    ["https://example.com:0/", "port"],
    ["https://example.com:65536/", "valid"],
    [`https://example.com/${"a".repeat(2048)}`, "longer than 2048"],
    ["https://intranet/hook", "fully qualified"],
  ])("refuses %j (%s)", (raw, fragment) => {
    const result = checkWebhookUrl(raw)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toContain(fragment)
  })

  test("2048 characters is the maximum", () => {
    const base = "https://example.com/"
    expect(checkWebhookUrl(base + "a".repeat(2048 - base.length)).ok).toBe(true)
    expect(checkWebhookUrl(base + "a".repeat(2049 - base.length)).ok).toBe(false)
  })

  test.each([
    ["https://localhost/", "localhost is a local host name"],
    // Named as written: the case, a trailing dot and full-width letters are the operator's own.
    ["https://LOCALHOST./", "LOCALHOST. is a local host name"],
    ["https://foo.localhost/", "foo.localhost is a local host name"],
    ["https://ｌｏｃａｌｈｏｓｔ/", "ｌｏｃａｌｈｏｓｔ is a local host name"],
    ["https://printer.local/", "printer.local is a multicast DNS host name (.local)"],
    ["https://db.internal/", "db.internal is an internal host name (.internal)"],
    ["https://metadata.google.internal/", "metadata.google.internal is a cloud metadata host name"],
    ["https://router.home.arpa/", "router.home.arpa is a home network host name (.home.arpa)"],
  ])("refuses the host name in %s", (raw, reason) => {
    expect(checkWebhookUrl(raw)).toEqual({ ok: false, reason })
  })

  test.each([
    ["https://2130706433/", "2130706433"],
    ["https://0x7f000001/", "0x7f000001"],
    ["https://0177.0.0.1/", "0177.0.0.1"],
    ["https://127.1/", "127.1"],
    ["https://127.0.1/", "127.0.1"],
    ["https://0x7f.0.0.1/", "0x7f.0.0.1"],
    ["https://127.000.000.001/", "127.000.000.001"],
    ["https://127.0.0.1./", "127.0.0.1."],
    ["https://%31%32%37.0.0.1/", "%31%32%37.0.0.1"],
    ["https://１２７.０.０.１/", "１２７.０.０.１"],
    ["https://0x5db8d822/", "0x5db8d822"], // 93.184.216.34, public, but still not dotted decimal
    ["https://0x/", "0x"],
  ])("refuses the non-canonical IPv4 form %s", (raw, shown) => {
    const result = checkWebhookUrl(raw)
    expect(result).toEqual({
      ok: false,
      reason: `${shown} is not a dotted-decimal IPv4 address; numeric, hex, octal and shortened forms are refused`,
    })
  })
})

describe("checkWebhookUrl + resolveAndCheck refuse non-public addresses", () => {
  test.each([
    // IPv4-mapped and other embedded forms
    ["https://[::ffff:127.0.0.1]/", "IPv4-mapped form of 127.0.0.1, which is a loopback address"],
    ["https://[::ffff:10.0.0.1]/", "IPv4-mapped form of 10.0.0.1, which is a private address"],
    ["https://[::ffff:169.254.169.254]/", "IPv4-mapped form of 169.254.169.254, which is a cloud metadata address"],
    ["https://[::ffff:0:7f00:1]/", "IPv4-translated form of 127.0.0.1"],
    ["https://[::127.0.0.1]/", "IPv4-compatible form of 127.0.0.1"],
    ["https://[64:ff9b::7f00:1]/", "NAT64 form of 127.0.0.1, which is a loopback address"],
    ["https://[64:ff9b::10.1.2.3]/", "NAT64 form of 10.1.2.3, which is a private address"],
    ["https://[64:ff9b:1::a00:1]/", "local-use NAT64 address"],
    ["https://[2002:7f00:1::]/", "6to4 form of 127.0.0.1, which is a loopback address"],
    ["https://[2002:c0a8:101::1]/", "6to4 form of 192.168.1.1, which is a private address"],
    ["https://[2001:0:a00:1::1]/", "Teredo address with server 10.0.0.1"],
    ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "Teredo address with client 127.0.0.1"],
    // Loopback, unspecified
    ["https://[::1]/", "::1 is a loopback address"],
    ["https://127.0.0.1/", "127.0.0.1 is a loopback address"],
    ["https://127.255.255.254/", "loopback"],
    ["https://0.0.0.0/", "0.0.0.0 is the unspecified address"],
    ["https://0.1.2.3/", "0.0.0.0/8"],
    ["https://[::]/", ":: is the unspecified address"],
    // Private, link-local, CGNAT, site-local
    ["https://10.0.0.1/", "10.0.0.1 is a private address"],
    ["https://172.16.0.1/", "172.16.0.1 is a private address"],
    ["https://172.31.255.255/", "private"],
    ["https://192.168.0.1/", "192.168.0.1 is a private address"],
    ["https://[fd12:3456::1]/", "unique local (private) address"],
    ["https://[fe80::1]/", "fe80::1 is a link-local address"],
    ["https://169.254.0.1/", "link-local"],
    ["https://[fec0::1]/", "site-local"],
    ["https://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT (shared) address"],
    ["https://100.127.255.254/", "carrier-grade NAT"],
    // Cloud metadata
    ["https://169.254.169.254/", "169.254.169.254 is a cloud metadata address"],
    ["https://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"],
    ["https://100.100.100.200/", "100.100.100.200 is a cloud metadata address"],
    ["https://192.0.0.192/", "192.0.0.192 is a cloud metadata address"],
    // Multicast, broadcast, reserved, documentation, benchmarking, discard
    ["https://224.0.0.1/", "224.0.0.1 is a multicast address"],
    ["https://239.255.255.250/", "multicast"],
    ["https://[ff02::1]/", "multicast"],
    ["https://255.255.255.255/", "255.255.255.255 is the broadcast address"],
    ["https://240.0.0.1/", "reserved address (240.0.0.0/4)"],
    ["https://192.0.0.8/", "192.0.0.0/24"],
    ["https://192.0.2.1/", "documentation"],
    ["https://198.51.100.7/", "documentation"],
    ["https://203.0.113.9/", "documentation"],
    ["https://[2001:db8::1]/", "documentation"],
    ["https://198.18.0.1/", "198.18.0.1 is a benchmarking address"],
    ["https://198.19.255.255/", "benchmarking"],
    ["https://[2001:2::1]/", "benchmarking"],
    ["https://[100::1]/", "discard-only"],
    ["https://[::2:0:0:1]/", "reserved address (::/8)"],
    ["https://[4000::1]/", "outside 2000::/3"],
    ["https://192.88.99.1/", "6to4 relay"],
    ["https://[2001:1::1]/", "special-purpose"],
  ])("refuses %s", async (raw, reason) => {
    const result = await checkAndResolveWebhookUrl(raw, noLookup)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toContain(reason)
  })

  test.each([
    "https://example.com/hook",
    "https://93.184.216.34/hook",
    "https://[2606:2800:220:1:248:1893:25c8:1946]/",
    "https://[::ffff:93.184.216.34]/", // mapped public v4
    "https://[64:ff9b::93.184.216.34]/", // DNS64/NAT64 synthesized public v4
    "https://8.8.8.8/",
    "https://1.1.1.1:8443/x",
    "https://172.32.0.1/", // just outside 172.16/12
    "https://100.128.0.1/", // just outside 100.64/10
    "https://11.0.0.1/",
  ])("accepts %s", async (raw) => {
    const lookup = fakeLookup({ "example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"] })
    const result = await checkAndResolveWebhookUrl(raw, lookup)
    expect(result).toMatchObject({ ok: true })
  })
})

describe("a refusal names an internationalized host as it was written", () => {
  // ξ is xn--zxa and β is xn--nxa: the rule checks and resolves the ASCII form, the operator reads what they typed.
  const refusedAddress = fakeLookup({ "xn--zxa.example": ["10.0.0.1"], "xn--nxa.example": ["10.0.0.1"] })
  test.each([
    ["https://ξ.example/x", refusedAddress, "ξ.example resolves to a refused address: 10.0.0.1 is a private address"],
    [
      "https://xn--nxa.example/x",
      refusedAddress,
      "xn--nxa.example resolves to a refused address: 10.0.0.1 is a private address",
    ],
    ["https://ξ.local/x", noLookup, "ξ.local is a multicast DNS host name (.local)"],
    ["https://xn--nxa.local/x", noLookup, "xn--nxa.local is a multicast DNS host name (.local)"],
    ["https://bücher.internal:8443/", noLookup, "bücher.internal is an internal host name (.internal)"],
    ["https://ξ/x", noLookup, "ξ is not a fully qualified domain name"],
    ["https://ξ.example/x", fakeLookup({}), "ξ.example does not resolve (ENOTFOUND)"],
    ["https://ΞΑ.example/x", fakeLookup({ "xn--mxaz.example": [] }), "ΞΑ.example does not resolve to any address"],
  ])("%s", async (raw, lookup, reason) => {
    const result = await checkAndResolveWebhookUrl(raw, lookup)
    expect(result).toEqual({ ok: false, reason })
    expect(reason).not.toContain("xn--zxa")
  })

  test("the ASCII form is what is resolved and connected to; the written form is kept beside it for messages", async () => {
    const syntax = checkWebhookUrl("https://ξ.example:8443/x")
    expect(syntax).toMatchObject({ ok: true, host: "xn--zxa.example", given: "ξ.example", port: 8443 })
    const asked: Array<string> = []
    const lookup = async (host: string) => {
      asked.push(host)
      return ["93.184.216.34"]
    }
    expect(await checkAndResolveWebhookUrl("https://ξ.example/x", lookup)).toMatchObject({
      ok: true,
      host: "xn--zxa.example",
      addresses: ["93.184.216.34"],
    })
    expect(asked).toEqual(["xn--zxa.example"])
  })
})

describe("resolveAndCheck", () => {
  test("IP-literal hosts are checked without lookup, with or without brackets", async () => {
    expect(await resolveAndCheck("93.184.216.34", noLookup)).toEqual({ ok: true, addresses: ["93.184.216.34"] })
    expect(await resolveAndCheck("[2606:2800:220:1:248:1893:25c8:1946]", noLookup)).toEqual({
      ok: true,
      addresses: ["2606:2800:220:1:248:1893:25c8:1946"],
    })
    expect(await resolveAndCheck("10.0.0.1", noLookup)).toEqual({ ok: false, reason: "10.0.0.1 is a private address" })
  })

  test("non-canonical IP text is refused, not looked up", async () => {
    for (const host of ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "fe80::1%eth0", "::ffff:0x7f.0.0.1"]) {
      const result = await resolveAndCheck(host, noLookup)
      expect(result.ok).toBe(false)
    }
  })

  test("all-public addresses pass and are returned deduplicated in lookup order", async () => {
    const lookup = fakeLookup({ "hooks.example.com": ["93.184.216.34", "2606:4700::1", "93.184.216.34", "1.1.1.1"] })
    expect(await resolveAndCheck("hooks.example.com", lookup)).toEqual({
      ok: true,
      addresses: ["93.184.216.34", "2606:4700::1", "1.1.1.1"],
    })
  })

  test("one private address among several refuses the host (every address must be public)", async () => {
    const lookup = fakeLookup({ "rebind.example.com": ["93.184.216.34", "1.1.1.1", "10.0.0.5"] })
    expect(await resolveAndCheck("rebind.example.com", lookup)).toEqual({
      ok: false,
      reason: "rebind.example.com resolves to a refused address: 10.0.0.5 is a private address",
    })
    const v6 = fakeLookup({ "mixed.example.com": ["93.184.216.34", "::1"] })
    const result = await resolveAndCheck("mixed.example.com", v6)
    expect(result.ok).toBe(false)
    const mapped = fakeLookup({ "mapped.example.com": ["::ffff:169.254.169.254"] })
    expect(await resolveAndCheck("mapped.example.com", mapped)).toMatchObject({ ok: false })
  })

  test("no addresses, or a failed lookup, refuses: does not resolve", async () => {
    expect(await resolveAndCheck("empty.example.com", fakeLookup({ "empty.example.com": [] }))).toEqual({
      ok: false,
      reason: "empty.example.com does not resolve to any address",
    })
    expect(await resolveAndCheck("nx.example.com", fakeLookup({}))).toEqual({
      ok: false,
      reason: "nx.example.com does not resolve (ENOTFOUND)",
    })
  })

  test("garbage from the resolver is refused", async () => {
    const lookup = fakeLookup({ "odd.example.com": ["93.184.216.34", "not-an-ip"] })
    expect(await resolveAndCheck("odd.example.com", lookup)).toEqual({
      ok: false,
      reason: "odd.example.com resolves to a refused address: not-an-ip is not a valid IP address",
    })
  })

  test("allowPrivate CIDRs (WEBHOOK_ALLOW_PRIVATE, test-only) let a local receiver pass", async () => {
    expect(await resolveAndCheck("127.0.0.1", noLookup)).toMatchObject({ ok: false })
    expect(await resolveAndCheck("127.0.0.1", noLookup, LOCAL_TEST)).toEqual({ ok: true, addresses: ["127.0.0.1"] })
    expect(await resolveAndCheck("::1", noLookup, LOCAL_TEST)).toEqual({ ok: true, addresses: ["::1"] })
    const lookup = fakeLookup({ "receiver.test.example": ["127.0.0.1", "::1"] })
    expect(await resolveAndCheck("receiver.test.example", lookup, LOCAL_TEST)).toEqual({
      ok: true,
      addresses: ["127.0.0.1", "::1"],
    })
    // Only what the CIDRs cover.
    expect(await resolveAndCheck("10.0.0.1", noLookup, LOCAL_TEST)).toMatchObject({ ok: false })
    // Through the whole URL rule: https://127.0.0.1:<port>/ is the local test receiver.
    expect(await checkAndResolveWebhookUrl("https://127.0.0.1:9443/hook", noLookup, LOCAL_TEST)).toMatchObject({
      ok: true,
      host: "127.0.0.1",
      port: 9443,
      addresses: ["127.0.0.1"],
    })
  })

  test("cloud metadata addresses stay refused even when an allowPrivate CIDR covers them", () => {
    const policy: AddressPolicy = { allowPrivate: ["169.254.0.0/16", "fd00::/8", "0.0.0.0/0"] }
    expect(isPublicAddress("169.254.169.254", policy).ok).toBe(false)
    expect(isPublicAddress("fd00:ec2::254", policy).ok).toBe(false)
    expect(isPublicAddress("169.254.1.1", policy).ok).toBe(true)
  })

  test("systemLookup resolves an IP literal without the network", async () => {
    expect(await systemLookup("127.0.0.1")).toEqual(["127.0.0.1"])
  })
})

describe("isPublicAddress", () => {
  test("reasons are short sentences naming the rule", () => {
    expect(isPublicAddress("192.168.1.10")).toEqual({ ok: false, reason: "192.168.1.10 is a private address" })
    expect(isPublicAddress("93.184.216.34")).toEqual({ ok: true })
    expect(isPublicAddress("fe80::1%eth0")).toEqual({
      ok: false,
      reason: "fe80::1%eth0 is a scoped (zone-indexed) address",
    })
    expect(isPublicAddress("127.1")).toEqual({ ok: false, reason: "127.1 is not a valid IP address" })
  })

  test("property: every address of 10/8, 127/8, 169.254/16, 192.168/16 and their IPv4-mapped forms is refused", () => {
    const prefixes = [[10], [127], [169, 254], [192, 168]]
    fc.assert(
      fc.property(
        fc.constantFrom(...prefixes),
        fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }),
        (prefix, rest) => {
          const octets = [...prefix, ...rest].slice(0, 4)
          const v4 = octets.join(".")
          expect(isPublicAddress(v4).ok).toBe(false)
          expect(isPublicAddress(`::ffff:${v4}`).ok).toBe(false)
          const hex = (a: number, b: number) => ((a << 8) | b).toString(16)
          const [a = 0, b = 0, c = 0, d = 0] = octets
          expect(isPublicAddress(`64:ff9b::${hex(a, b)}:${hex(c, d)}`).ok).toBe(false)
          expect(isPublicAddress(`2002:${hex(a, b)}:${hex(c, d)}::1`).ok).toBe(false)
        },
      ),
      { numRuns: 500 },
    )
  })
})

describe("parseAllowPrivate", () => {
  test("undefined and blank are the empty list", () => {
    expect(parseAllowPrivate(undefined)).toEqual({ ok: true, cidrs: [] })
    expect(parseAllowPrivate("")).toEqual({ ok: true, cidrs: [] })
    expect(parseAllowPrivate("  ")).toEqual({ ok: true, cidrs: [] })
  })

  test("CIDRs separated by commas and/or spaces, normalized to the network address", () => {
    expect(parseAllowPrivate("127.0.0.0/8, ::1/128")).toEqual({ ok: true, cidrs: ["127.0.0.0/8", "::1/128"] })
    expect(parseAllowPrivate("127.0.0.1/8 10.1.2.3")).toEqual({ ok: true, cidrs: ["127.0.0.0/8", "10.1.2.3/32"] })
    expect(parseAllowPrivate("FD00:0::1/8,127.0.0.0/8,127.0.0.0/8")).toEqual({
      ok: true,
      cidrs: ["fd00::/8", "127.0.0.0/8"],
    })
  })

  test.each([
    "garbage",
    "127.0.0.0/33",
    "::1/129",
    "127.0.0.0/",
    "127.0.0.0/8/8",
    "127.0.0.0/-1",
    "127.0.0.0/0x8",
    "127.1/16",
    "0x7f000001/8",
    "localhost",
    "127.0.0.0/8,foo",
    "fe80::1%eth0/64",
    "*",
  ])("rejects %j", (text) => {
    const result = parseAllowPrivate(text)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toContain("is not a CIDR")
  })
})
