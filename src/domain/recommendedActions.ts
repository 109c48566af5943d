/**
 * The recommended actions of the event types, the advice an incident carries. Every one of them starts from the
 * same fact: no legitimate user or system has a reason to touch a decoy, so the source address is either compromised
 * or hostile. The event-type table (`eventTypes.ts`) gives each type one of these, or one built on `ISOLATE_SOURCE`.
 */
export const ISOLATE_SOURCE =
  "Find and isolate the machine at the source address: nothing legitimate touches a decoy, so treat it as compromised or hostile."
export const SCAN_ACTION = `${ISOLATE_SOURCE} Check whether it scanned other hosts too, and look for a scheduled job, script or tool on it that started the scan.`
export const LOGIN_ACTION = `${ISOLATE_SOURCE} Look for the same usernames on your real systems, reset weak or default passwords, and check those systems' logs for successful logins from that address.`
export const SUCCESS_ACTION = `${ISOLATE_SOURCE} The attacker logged in with credentials they may also use elsewhere: find every real account with these credentials, change them, and review recent logins from that address.`
export const SHELL_ACTION = `${ISOLATE_SOURCE} The attacker reached a shell and ran commands: collect the session's commands and downloads from the decoy, block any addresses or URLs they used, and search your real hosts for the same files and commands.`
export const SMB_ACTION = `${ISOLATE_SOURCE} Someone browsed a decoy file share and opened files: find which account and process on that machine did it, and check access to your real file shares from that address.`
export const WEB_ACTION = `${ISOLATE_SOURCE} Review the requests for exploitation attempts and check that your real web applications are patched against them.`
export const DB_ACTION = `${ISOLATE_SOURCE} Check your real database servers for logins and queries from that address, and make sure no database account uses a default or empty password.`
export const PATCH_ACTION = `${ISOLATE_SOURCE} Check that your real services are patched against the exploit named in the event, and look for the same attempt against them.`
export const REDIS_ACTION = `${ISOLATE_SOURCE} Make sure your real Redis servers require authentication and are not reachable from that address.`
/** A bait credential was used: the credential is worthless, the question is who read it and from where. */
export const BAIT_ACTION =
  "Treat the source machine as compromised: the credential it used exists only where it was planted, so someone read it there. Find where that bait was planted (the file, share, configuration or machine holding it), who and what read it recently, and isolate the machine at the source address."
/** The source is one of the organization's own machines: the attacker (or an insider) is already inside. */
export const insideAction = (label: string): string =>
  `The source is one of your own machines (${label}): find it (DHCP leases, EDR, switch port), isolate it and investigate it as compromised; whoever touched the decoy is already inside your network.`
