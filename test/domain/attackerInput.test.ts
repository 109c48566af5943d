import { describe, expect, test } from "bun:test"
import { Schema } from "effect"
import fc from "fast-check"
import {
  ATTACKER_INPUT_MAX_BYTES,
  ATTACKER_INPUT_MAX_ITEMS,
  ATTACKER_INPUT_MAX_KEYS,
  ATTACKER_INPUT_MAX_MASKED,
  ATTACKER_INPUT_MAX_STRING,
  cutMark,
  isPasswordLikeKey,
  type MaskedSecret,
  maskSecret,
  maskSecretsInText,
  nameWords,
  PASSWORD_LIKE_WORDS,
  prepareAttackerInput,
  readableAttackerInput,
  repairAttackerInput,
  WEBHOOK_INPUT_MAX_BYTES,
  webhookAttackerInput,
} from "../../src/domain/attackerInput.ts"
import { AttackerInput } from "../../src/domain/models.ts"
import { CUT_MEMBER, sanitizeText, TOO_DEEP } from "../../src/domain/sanitize.ts"

const orgKeyA = new Uint8Array(32).fill(1)
const orgKeyB = new Uint8Array(32).fill(2)

const expectMasked = (value: unknown, length: number): MaskedSecret => {
  expect(value).toEqual({ masked: "*".repeat(Math.min(length, 32)), length, fingerprint: expect.any(String) })
  const masked = value as MaskedSecret
  expect(masked.fingerprint).toMatch(/^[0-9a-f]{32}$/)
  return masked
}

describe("isPasswordLikeKey", () => {
  test("the listed words", () => {
    for (const word of ["password", "passwd", "pwd", "pass", "passphrase", "passcode", "secret", "token"]) {
      expect(PASSWORD_LIKE_WORDS).toContain(word)
    }
    for (const word of ["credential", "credentials", "authorization", "cookie", "pin", "otp"]) {
      expect(PASSWORD_LIKE_WORDS).toContain(word)
    }
  })

  test("(widened) names split into words: case changes, _, -, ., spaces", () => {
    expect(nameWords("access_token")).toEqual(["access", "token"])
    expect(nameWords("APIKey")).toEqual(["api", "key"])
    expect(nameWords("VNC Password")).toEqual(["vnc", "password"])
    expect(nameWords("x.auth-Token_2")).toEqual(["x", "auth", "token", "2"])
    for (const key of [
      "passwd",
      "pwd",
      "userPWD",
      "access_token",
      "accessToken",
      "refresh-token",
      "authorization",
      "Proxy-Authorization",
      "Cookie",
      "set-cookie",
      "x-api-key",
      "X-API-Key",
      "private_key",
      "privateKey",
      "userPIN",
      "pin",
      "otpCode",
      "passcode",
      "client.secret",
      "credentials",
      "aws credential",
      "pass",
      "passwd2",
      "tokens",
    ]) {
      expect([key, isPasswordLikeKey(key)]).toEqual([key, true])
    }
    for (const key of [
      "compass",
      "bypass",
      "spinner",
      "hostKey",
      "keyId",
      "keys",
      "passenger",
      "opinion",
      "apiVersion",
    ]) {
      expect([key, isPasswordLikeKey(key)]).toEqual([key, false])
    }
  })

  test("matches case-insensitively and ignores _ and -", () => {
    for (const key of [
      "password",
      "PASSWORD",
      "Password",
      "passphrase",
      "PassPhrase",
      "token",
      "TOKEN",
      "secret",
      "Secret",
      "apiKey",
      "api_key",
      "API-KEY",
      "Api_Key",
      "apikey",
      "key",
      "KEY",
      "pass_word",
    ]) {
      expect(isPasswordLikeKey(key)).toBe(true)
    }
  })

  test("does not match other keys", () => {
    for (const key of ["username", "user", "keyboard", "monkey", "command", ""]) {
      expect(isPasswordLikeKey(key)).toBe(false)
    }
  })

  test("invisible characters do not hide a password-like key", () => {
    expect(isPasswordLikeKey("pass\u200bword")).toBe(true)
    expect(isPasswordLikeKey("pass\u00adword")).toBe(true)
  })
})

describe("maskSecret", () => {
  test("masked is * repeated min(length, 32)", () => {
    expect(maskSecret("", orgKeyA).masked).toBe("")
    expect(maskSecret("hunter2", orgKeyA).masked).toBe("*******")
    expect(maskSecret("x".repeat(32), orgKeyA).masked).toBe("*".repeat(32))
    const long = maskSecret("x".repeat(100), orgKeyA)
    expect(long.masked).toBe("*".repeat(32))
    expect(long.length).toBe(100)
  })

  test("length counts code points, not UTF-16 units, of the raw value", () => {
    expect(maskSecret("😀😀", orgKeyA).length).toBe(2)
    expect(maskSecret("😀😀", orgKeyA).masked).toBe("**")
    expect(maskSecret("e\u0301", orgKeyA).length).toBe(2)
    // Raw, not sanitized: invisible characters count.
    expect(maskSecret("a\u200bb", orgKeyA).length).toBe(3)
  })

  test("fingerprint is 32 hex chars, stable per org key, different across org keys", () => {
    const a1 = maskSecret("correct horse battery staple", orgKeyA)
    const a2 = maskSecret("correct horse battery staple", orgKeyA)
    const b = maskSecret("correct horse battery staple", orgKeyB)
    expect(a1.fingerprint).toMatch(/^[0-9a-f]{32}$/)
    expect(a1.fingerprint).toBe(a2.fingerprint)
    expect(b.fingerprint).not.toBe(a1.fingerprint)
    expect(maskSecret("other password", orgKeyA).fingerprint).not.toBe(a1.fingerprint)
  })

  test("fingerprint is the truncated HMAC-SHA256 of the UTF-8 value", () => {
    const hmac = new Bun.CryptoHasher("sha256", orgKeyA).update("pässwörd😀").digest("hex")
    expect(maskSecret("pässwörd😀", orgKeyA).fingerprint).toBe(hmac.slice(0, 32))
  })
})

describe("prepareAttackerInput", () => {
  test("masks the password and sanitizes the username (spec shape)", () => {
    const out = prepareAttackerInput({ username: "ro\u200bot\u001b[0m", password: "Sup3rS3cret!" }, orgKeyA)
    expect(out.username).toBe("root[0m")
    const masked = expectMasked(out.password, 12)
    expect(masked).toEqual(maskSecret("Sup3rS3cret!", orgKeyA))
    expect(Object.keys(out)).toEqual(["username", "password"])
  })

  test("masks every password-like key in various cases", () => {
    const input = {
      PASSWORD: "pw-upper-1",
      passphrase: "a long pass phrase",
      Token: "tok_abcdefghij",
      secret: "s3cr3t-value",
      apiKey: "ak-1234567",
      Api_Key: "ak-underscore",
      "API-KEY": "ak-dash-value",
      key: "ssh-rsa AAAA",
      user: "admin",
    }
    const out = prepareAttackerInput(input, orgKeyA)
    for (const [k, raw] of Object.entries(input)) {
      if (k === "user") expect(out[k]).toBe("admin")
      else expect(out[k]).toEqual(maskSecret(raw, orgKeyA))
    }
  })

  test("masks password-like keys at any depth, also inside arrays", () => {
    const out = prepareAttackerInput(
      { login: { password: "nested-pass" }, attempts: [{ user: "a", token: "tkn-in-array" }] },
      orgKeyA,
    )
    expect(out).toEqual({
      login: { password: maskSecret("nested-pass", orgKeyA) },
      attempts: [{ user: "a", token: maskSecret("tkn-in-array", orgKeyA) }],
    })
  })

  test("masks numbers through String()", () => {
    const out = prepareAttackerInput({ password: 123456 }, orgKeyA)
    expect(out.password).toEqual(maskSecret("123456", orgKeyA))
    expectMasked(out.password, 6)
  })

  test("a forged masked object under a password-like key is masked whole", () => {
    const forged = { masked: "****", length: 4, fingerprint: "0123456789abcdef0123456789abcdef" }
    const out = prepareAttackerInput({ password: forged }, orgKeyA)
    expect(out.password).toEqual(maskSecret(JSON.stringify(forged), orgKeyA))
    expect(out.password).not.toEqual(forged)
    const list = prepareAttackerInput({ secret: ["one-secret", "two-secret"] }, orgKeyA)
    expect(list.secret).toEqual(maskSecret(JSON.stringify(["one-secret", "two-secret"]), orgKeyA))
  })

  test("a boolean under a password-like key is masked as its JSON text; null leaves the member out", () => {
    expect(prepareAttackerInput({ password: null, token: true, pin: false }, orgKeyA)).toEqual({
      token: maskSecret("true", orgKeyA),
      pin: maskSecret("false", orgKeyA),
    })
  })

  test("the root's username is always a string: JSON text of any other value, null left out", () => {
    expect(prepareAttackerInput({ username: 42 }, orgKeyA)).toEqual({ username: "42" })
    expect(prepareAttackerInput({ username: { nested: 1 } }, orgKeyA)).toEqual({ username: '{"nested":1}' })
    expect(prepareAttackerInput({ username: ["a\u200b"] }, orgKeyA)).toEqual({ username: '["a"]' })
    expect(prepareAttackerInput({ username: null }, orgKeyA)).toEqual({})
    expect(prepareAttackerInput({ "user\u200bname": 7 }, orgKeyA)).toEqual({ username: "7" })
    // Deeper down, a member called username is ordinary data.
    expect(prepareAttackerInput({ nested: { username: 1 } }, orgKeyA)).toEqual({ nested: { username: 1 } })
  })

  test("a key that only looks password-like after sanitizing is masked", () => {
    const out = prepareAttackerInput({ "pass\u200bword": "zero-width-pw" }, orgKeyA)
    expect(out).toEqual({ password: maskSecret("zero-width-pw", orgKeyA) })
  })

  test("the raw secret never appears in the output (property)", () => {
    const secretKey = fc.constantFrom(
      "password",
      "PASSWORD",
      "Api_Key",
      "apiKey",
      "token",
      "secret",
      "key",
      "passphrase",
    )
    const raw = fc.string({ unit: "grapheme", minLength: 4, maxLength: 60 })
    const build = (key: string, secret: unknown, depth: number): Record<string, unknown> => {
      let input: Record<string, unknown> = { [key]: secret, username: "root" }
      for (let i = 0; i < depth; i++) input = { level: input, list: [input] }
      return input
    }
    fc.assert(
      fc.property(secretKey, raw, fc.integer({ min: 0, max: 6 }), (key, secret, depth) => {
        // Only meaningful when the secret is not part of the output's own structure ("username", hex, digits, ...).
        const skeleton = JSON.stringify(prepareAttackerInput(build(key, true, depth), orgKeyA))
        fc.pre(!skeleton.includes(secret) && !JSON.stringify(maskSecret(secret, orgKeyA)).includes(secret))
        const json = JSON.stringify(prepareAttackerInput(build(key, secret, depth), orgKeyA))
        expect(json.includes(secret)).toBe(false)
        expect(json.includes(JSON.stringify(secret).slice(1, -1))).toBe(false)
      }),
      { numRuns: 500 },
    )
  })

  test("the raw secret never appears, even when nested too deep or under a forged object", () => {
    const raw = "hunter2-very-secret"
    let deep: unknown = { password: raw }
    for (let i = 0; i < 20; i++) deep = { a: deep }
    const inputs: Array<unknown> = [
      { password: raw },
      { password: { masked: raw, length: 1, fingerprint: raw } },
      { credentials: { password: [raw] } },
      deep,
      { a: { b: { c: { apiKey: raw } } } },
    ]
    for (const input of inputs) {
      expect(JSON.stringify(prepareAttackerInput(input, orgKeyA)).includes(raw)).toBe(false)
    }
  })

  test("sanitizes every other string and key", () => {
    const out = prepareAttackerInput(
      { "com\u202emand": "rm -rf /\u0000", notes: ["a\u200b", { "x\u2066": "y\u{e0041}" }] },
      orgKeyA,
    )
    expect(out).toEqual({ command: "rm -rf /", notes: ["a", { x: "y" }] })
  })

  test("bounds: at most 64 keys per object and 64 items per array", () => {
    const wide: Record<string, number> = {}
    for (let i = 0; i < 100; i++) wide[`k${i}`] = i
    const items = Array.from({ length: 100 }, (_, i) => i)
    const out = prepareAttackerInput({ ...wide, nested: { ...wide }, items }, orgKeyA)
    // 64 members, and the mark saying that the other 38 were cut.
    expect(Object.keys(out)).toHaveLength(ATTACKER_INPUT_MAX_KEYS + 1)
    // k64..k99 (36 two-digit numbers), nested and items, counted with their JSON size.
    const leftBytes = 36 * 2 + JSON.stringify(wide).length + JSON.stringify(items).length
    expect(out[CUT_MEMBER]).toBe(cutMark(38, leftBytes))
    expect(ATTACKER_INPUT_MAX_KEYS).toBe(64)
    const inner = prepareAttackerInput({ nested: wide, items }, orgKeyA)
    expect(Object.keys(inner.nested as object)).toHaveLength(64)
    expect(Object.keys(inner.nested as object)[63]).toBe("k63")
    expect(inner.items).toEqual(items.slice(0, ATTACKER_INPUT_MAX_ITEMS))
    expect(ATTACKER_INPUT_MAX_ITEMS).toBe(64)
  })

  test("bounds: each string at most 4096 code points", () => {
    const out = prepareAttackerInput({ username: "é".repeat(5000), ["k".repeat(5000)]: 1 }, orgKeyA)
    const username = out.username as string
    expect([...username]).toHaveLength(ATTACKER_INPUT_MAX_STRING)
    expect(username.endsWith("é…")).toBe(true)
    expect(Object.keys(out).every((k) => [...k].length <= 4096)).toBe(true)
    // Sanitizing happens before cutting: invisible characters do not count.
    const exact = prepareAttackerInput({ username: `${"a".repeat(4096)}\u200b\u200b` }, orgKeyA)
    expect(exact.username).toBe("a".repeat(4096))
  })

  test("a long secret is still masked whole (not cut first)", () => {
    const raw = "p".repeat(5000)
    const out = prepareAttackerInput({ password: raw }, orgKeyA)
    expect(out.password).toEqual(maskSecret(raw, orgKeyA))
    expectMasked(out.password, 5000)
  })

  test("bounds: depth 8 as in sanitizeJson, and dangerous keys dropped", () => {
    let deep: unknown = "leaf"
    for (let i = 0; i < 12; i++) deep = { a: deep }
    expect(JSON.stringify(prepareAttackerInput(deep, orgKeyA))).toContain(TOO_DEEP)
    const polluted: unknown = JSON.parse('{"__proto__":{"admin":true},"constructor":{"x":1},"username":"u"}')
    expect(prepareAttackerInput(polluted, orgKeyA)).toEqual({ username: "u" })
  })

  test("non-object input gives {}", () => {
    for (const input of [null, undefined, "password", 42, true, ["password", "x"], () => 1, 10n]) {
      expect(prepareAttackerInput(input, orgKeyA)).toEqual({})
    }
  })

  test("never mutates its input", () => {
    const input = { username: "u\u200b", password: "mutation-check", nested: { token: "tkn-mutation" } }
    const copy = structuredClone(input)
    prepareAttackerInput(input, orgKeyA)
    expect(input).toEqual(copy)
  })
})

describe("(widened) secrets inside attacker text keep the name and the rest, the value becomes *s", () => {
  const cases: ReadonlyArray<[string, string, string]> = [
    [
      "URL query",
      "https://x.example/login?user=bob&password=hunter2&next=/#f",
      "https://x.example/login?user=bob&password=*******&next=/#f",
    ],
    ["path", "/login?password=hunter2", "/login?password=*******"],
    // A value runs to the next & ; # or space (a token may hold "/": base64, and "?").
    ["path parameter", "/a;token=abc/b;x=1", "/a;token=*****;x=1"],
    ["? inside a value", "/login?password=abc?def&u=1", "/login?password=*******&u=1"],
    ["query string", "access_token=abc123&page=2", "access_token=******&page=2"],
    ["form body", "username=bob&passwd=hunter2&remember=on", "username=bob&passwd=*******&remember=on"],
    ["percent-encoded name", "pass%77ord=hunter2", "pass%77ord=*******"],
    ["shell assignment", "export API_KEY=abc && run", "export API_KEY=*** && run"],
    [
      "header line",
      "Host: x\r\nAuthorization: Bearer abc.def\r\nAccept: */*",
      "Host: x\r\nAuthorization: Bearer *******\r\nAccept: */*",
    ],
    ["cookie header", "Cookie: sid=abc; theme=dark", "Cookie: *******************"],
    ["JSON body", '{"user":"bob","password":"hun\\"ter"}', '{"user":"bob","password":"********"}'],
    ["JSON escapes in a member name", '{"p\\u0061ssword":"hunter2"}', '{"p\\u0061ssword":"*******"}'],
    ["URL credentials", "ftp://bob:hunter2@files.example/", "ftp://bob:*******@files.example/"],
    ["long value", `?token=${"x".repeat(100)}`, `?token=${"*".repeat(32)}`],
  ]
  for (const [form, raw, expected] of cases) {
    test(`${form}`, () => {
      expect(maskSecretsInText(raw)).toBe(expected)
      expect(maskSecretsInText(expected)).toBe(expected) // idempotent
      expect(prepareAttackerInput({ text: raw }, orgKeyA).text).toBe(sanitizeText(expected))
    })
  }

  test("other parameters, names and texts are left alone", () => {
    for (const text of ["/search?q=password&page=2", "keyboard=qwerty", "a=b", "no secrets here", "Host: example"]) {
      expect(maskSecretsInText(text)).toBe(text)
    }
  })

  test("headers captured as [name, value] pairs or HAR {name, value} objects: the secret values are masked", () => {
    const out = prepareAttackerInput(
      {
        headers: [
          ["Authorization", "Bearer abc123"],
          ["Host", "x.example"],
          ["Proxy-Authorization", "Basic dXNlcjpwYXNz"],
        ],
        har: {
          headers: [
            { name: "Cookie", value: "sid=s3cret" },
            { name: "Accept", value: "*/*" },
          ],
        },
        field: { name: "password", value: 12345 },
      },
      orgKeyA,
    )
    const headers = out.headers as Array<[string, unknown]>
    expect(headers[0]?.[0]).toBe("Authorization")
    expectMasked(headers[0]?.[1], "Bearer abc123".length)
    expect(headers[1]).toEqual(["Host", "x.example"])
    expectMasked(headers[2]?.[1], "Basic dXNlcjpwYXNz".length)
    const har = (out.har as { headers: Array<{ name: string; value: unknown }> }).headers
    expect(har[0]?.name).toBe("Cookie")
    expectMasked(har[0]?.value, "sid=s3cret".length)
    expect(har[1]).toEqual({ name: "Accept", value: "*/*" })
    expectMasked((out.field as { value: unknown }).value, 5)
    const text = JSON.stringify(out)
    for (const secret of ["abc123", "dXNlcjpwYXNz", "s3cret", "12345"]) expect(text).not.toContain(secret)
    // Stored, the masked pairs read back unchanged; a pair still in clear is masked on read.
    expect(readableAttackerInput(out)).toEqual(out)
    expect(readableAttackerInput({ h: [["Cookie", "a=b"]] })).toEqual({
      h: [["Cookie", { masked: "***", length: 3, fingerprint: "" }]],
    })
    // A two-item list that is not in a list of pairs is left alone.
    expect(prepareAttackerInput({ tags: ["password", "admin"] }, orgKeyA).tags).toEqual(["password", "admin"])
  })

  test("a header line is masked although the attackerInput rules then remove its line breaks", () => {
    const out = prepareAttackerInput({ headers: "GET / HTTP/1.1\r\nCookie: sid=s3cret\r\nHost: x" }, orgKeyA)
    expect(out.headers).toBe("GET / HTTP/1.1Cookie: **********Host: x")
  })
})

describe("readableAttackerInput: any stored jsonb reads back as a valid attackerInput", () => {
  test("old shapes become the attackerInput shape; secrets still in clear are masked without a fingerprint", () => {
    expect(
      readableAttackerInput({
        username: 42,
        password: true,
        passwd: "clear",
        token: null,
        kept: maskSecret("x", orgKeyA),
        nested: { secret: { masked: "***", length: 3, fingerprint: "ab".repeat(16) } },
        odd: { pin: { masked: "*", length: 3, fingerprint: "ab" } },
      }),
    ).toEqual({
      username: "42",
      password: { masked: "****", length: 4, fingerprint: "" },
      passwd: { masked: "*****", length: 5, fingerprint: "" },
      kept: maskSecret("x", orgKeyA),
      nested: { secret: { masked: "***", length: 3, fingerprint: "ab".repeat(16) } },
      // Not the shape this service writes: masked whole, as its JSON text.
      odd: { pin: { masked: "*".repeat(32), length: 44, fingerprint: "" } },
    })
  })

  test("a row in the stored shape is unchanged (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (input) => {
        const stored = prepareAttackerInput(input, orgKeyA)
        expect(readableAttackerInput(stored)).toEqual(stored)
        expect(repairAttackerInput(stored, orgKeyA)).toEqual(stored)
      }),
    )
  })

  test("anything at all gives a value the AttackerInput schema accepts (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (stored) => {
        const out = readableAttackerInput(stored)
        Schema.decodeUnknownSync(AttackerInput)(out)
      }),
    )
  })
})

/** The shape: 60 members, each 24 lists of 60 `{"pwd":"1"}` (1,440 per member), about 1 MB as JSON. */
const manyShortSecrets = (): Record<string, unknown> => {
  const input: Record<string, unknown> = { username: "root" }
  for (let k = 0; k < 60; k++) {
    input[`k${k}`] = Array.from({ length: 24 }, () => Array.from({ length: 60 }, () => ({ pwd: "1" })))
  }
  return input
}

const countMasked = (value: unknown): number => {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countMasked(v), 0)
  if (typeof value !== "object" || value === null) return 0
  if (Object.keys(value).join() === "masked,length,fingerprint") return 1
  return Object.values(value).reduce((n: number, v) => n + countMasked(v), 0)
}

const bytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value))

describe("Hardening 2 item 4: attackerInput bounded after masking, with a visible cut", () => {
  test("many short secrets (the 1 MB post that stored 7.8 M characters) store at most 16 KiB and 64 masked members, with the cut mark", () => {
    const input = manyShortSecrets()
    expect(bytes(input)).toBeGreaterThan(1_000_000)
    const out = prepareAttackerInput(input, orgKeyA)
    expect(bytes(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_BYTES)
    expect(countMasked(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_MASKED)
    expect(countMasked(out)).toBeGreaterThan(0)
    expect(out.username).toBe("root")
    const mark = out[CUT_MEMBER]
    expect(typeof mark).toBe("string")
    expect(mark as string).toMatch(/^cut: \d+ more members, \d+ bytes$/)
    // Nearly everything the sensor sent is counted in the mark.
    const [, left, leftBytes] = /^cut: (\d+) more members, (\d+) bytes$/.exec(mark as string) ?? []
    expect(Number(left)).toBeGreaterThan(59)
    expect(Number(leftBytes)).toBeGreaterThan(900_000)
    // Valid per the schema, and it reads back unchanged (the mark included).
    Schema.decodeUnknownSync(AttackerInput)(out)
    expect(readableAttackerInput(out)).toEqual(out)
    expect(repairAttackerInput(out, orgKeyA)).toEqual(out)
  })

  test("the spec's members come first and survive a cut", () => {
    const tokens = Array.from({ length: 50 }, () => ({ token: "x" }))
    const out = prepareAttackerInput(
      { a: tokens, b: tokens, c: "after", username: "admin", password: "hunter2" },
      orgKeyA,
    )
    expect(Object.keys(out)).toEqual(["username", "password", "a", "b", CUT_MEMBER])
    expectMasked(out.password, 7)
    expect(countMasked(out)).toBe(ATTACKER_INPUT_MAX_MASKED)
    expect(out.b).toHaveLength(ATTACKER_INPUT_MAX_MASKED - 1 - 50)
    // b's last 37 items and c, with their JSON sizes.
    expect(out[CUT_MEMBER]).toBe(cutMark(37 + 1, 37 * 13 + 7))
  })

  test("past the size bound a long string keeps what fits, and the rest is cut", () => {
    const input = {
      username: "u",
      a: "a".repeat(4000),
      b: "b".repeat(4000),
      c: "c".repeat(4000),
      d: "d".repeat(4000),
      e: "e".repeat(4000),
      f: 1,
    }
    const out = prepareAttackerInput(input, orgKeyA)
    expect(bytes(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_BYTES)
    expect(out.a).toBe("a".repeat(4000))
    expect((out.e as string).endsWith("…")).toBe(true)
    expect(out.f).toBeUndefined()
    expect(out[CUT_MEMBER]).toMatch(/^cut: 1 more member, \d+ bytes$/)
  })

  test("secrets captured as header pairs count against the masked bound and are never left in clear", () => {
    const headers = Array.from({ length: 64 }, (_, i) => ["Cookie", `session-${i}-s3cr3t`])
    const out = prepareAttackerInput({ h1: headers, h2: headers, h3: headers }, orgKeyA)
    expect(JSON.stringify(out)).not.toContain("s3cr3t")
    expect(countMasked(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_MASKED)
    expect(out[CUT_MEMBER]).toMatch(/^cut: /)
  })

  test("an oversized row stored before the bound reads back bounded, with the cut mark", () => {
    // What older versions stored for the post: every member masked, 7.8 M characters.
    const old: Record<string, unknown> = { username: "root" }
    const masked = maskSecret("1", orgKeyA)
    for (let k = 0; k < 60; k++) {
      old[`k${k}`] = Array.from({ length: 24 }, () => Array.from({ length: 60 }, () => ({ pwd: masked })))
    }
    expect(bytes(old)).toBeGreaterThan(7_000_000)
    const out = readableAttackerInput(old)
    expect(bytes(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_BYTES)
    expect(countMasked(out)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_MASKED)
    expect(out[CUT_MEMBER]).toMatch(/^cut: \d+ more members, over \d+ bytes$/)
  })

  test("a member the sensor named like the cut mark is renamed; the mark is the service's own", () => {
    const input: Record<string, unknown> = { [CUT_MEMBER]: "cut: 0 more members, 0 bytes" }
    for (let i = 0; i < 100; i++) input[`k${i}`] = i
    const out = prepareAttackerInput(input, orgKeyA)
    expect(out[CUT_MEMBER]).toMatch(/^cut: 3[0-9] more members/)
    expect(prepareAttackerInput({ [CUT_MEMBER]: "mine" }, orgKeyA)).toEqual({ "… (sent)": "mine" })
  })

  test("any input stores within the bounds and reads back unchanged (property)", () => {
    const wide = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.array(fc.record({ pwd: fc.string(), note: fc.string({ maxLength: 600 }) }), { maxLength: 300 }),
      fc.string({ minLength: 3000, maxLength: 5000 }),
    )
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), wide, { maxKeys: 80 }), (input) => {
        const stored = prepareAttackerInput(input, orgKeyA)
        expect(bytes(stored)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_BYTES)
        expect(countMasked(stored)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_MASKED)
        expect(readableAttackerInput(stored)).toEqual(stored)
        const hook = webhookAttackerInput(stored)
        expect(bytes(hook)).toBeLessThanOrEqual(WEBHOOK_INPUT_MAX_BYTES)
      }),
      { numRuns: 60 },
    )
  })
})

describe("webhookAttackerInput: shortened for webhooks", () => {
  test("strings and names cut to 256 code points, 16 masked members, 4 KiB, depth 6, with the cut mark", () => {
    let deep: unknown = "leaf"
    for (let i = 0; i < 10; i++) deep = { a: deep }
    const stored = prepareAttackerInput({ ...manyShortSecrets(), ["n".repeat(400)]: "v".repeat(400), deep }, orgKeyA)
    const out = webhookAttackerInput(stored)
    expect(bytes(out)).toBeLessThanOrEqual(WEBHOOK_INPUT_MAX_BYTES)
    expect(countMasked(out)).toBeLessThanOrEqual(16)
    expect(out.username).toBe("root")
    expect(out[CUT_MEMBER]).toMatch(/^cut: /)
    const strings: Array<string> = []
    const collect = (v: unknown): void => {
      if (typeof v === "string") strings.push(v)
      else if (typeof v === "object" && v !== null) {
        for (const [k, x] of Object.entries(v)) {
          strings.push(k)
          collect(x)
        }
      }
    }
    collect(webhookAttackerInput({ ["n".repeat(400)]: "v".repeat(400), deep }))
    expect(strings.every((s) => [...s].length <= 256)).toBe(true)
    expect(JSON.stringify(webhookAttackerInput({ deep }))).toContain(TOO_DEEP)
  })
})
