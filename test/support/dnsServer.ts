import dgram from "node:dgram"
import packet from "dns-packet"

/**
 * A DNS server on 127.0.0.1 for the tests (dns-packet over UDP): it answers PTR, A and AAAA questions from its
 * tables, answers nothing at all for the names in `silent` (a server that never replies), and counts the questions.
 */
export interface DnsTables {
  /** PTR names by the question's name (`10.113.0.203.in-addr.arpa`). */
  readonly ptr: Record<string, ReadonlyArray<string>>
  /** A and AAAA records by name, exactly as the question spells it. */
  readonly a: Record<string, ReadonlyArray<string>>
  readonly aaaa: Record<string, ReadonlyArray<string>>
  /** Question names never answered. */
  readonly silent: ReadonlySet<string>
}

export interface TestDnsServer {
  readonly port: number
  readonly questions: Array<{ readonly type: string; readonly name: string }>
  readonly close: () => Promise<void>
}

export const startDnsServer = async (tables: DnsTables): Promise<TestDnsServer> => {
  const socket = dgram.createSocket("udp4")
  const questions: Array<{ type: string; name: string }> = []
  socket.on("message", (message, remote) => {
    let query: ReturnType<typeof packet.decode>
    try {
      query = packet.decode(message)
    } catch {
      return
    }
    const question = query.questions?.[0]
    if (question === undefined) return
    questions.push({ type: question.type, name: question.name })
    if (tables.silent.has(question.name)) return
    const records =
      question.type === "PTR"
        ? tables.ptr[question.name]
        : question.type === "A"
          ? tables.a[question.name]
          : question.type === "AAAA"
            ? tables.aaaa[question.name]
            : undefined
    const answers = (records ?? []).map((data) => ({
      type: question.type as "PTR" | "A" | "AAAA",
      class: "IN" as const,
      name: question.name,
      ttl: 60,
      data,
    }))
    const response = packet.encode({
      type: "response",
      id: query.id,
      // RD, RA and, for a name with no records at all, NXDOMAIN (3).
      flags: packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE | (records === undefined ? 3 : 0),
      questions: [question],
      answers,
    })
    socket.send(response, remote.port, remote.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()))
  return {
    port: socket.address().port,
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}
