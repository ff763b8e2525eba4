// Reads --listen HOST:PORT and decides whether it may be served without TLS (loopback only, unless --insecure-listen).
import { isIP } from "node:net";
import { InputError } from "../core/errors.js";

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** `127.0.0.1:7300`, `[::1]:7300`, `localhost:7300`, `0.0.0.0:0`; InputError otherwise. */
export function readListenAddress(text: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535)
    throw new InputError(
      `--listen expects HOST:PORT such as 127.0.0.1:7300 or [::1]:7300, got ${JSON.stringify(text)}`,
    );
  const host = match[1] ?? match[2]!;
  if (match[1] !== undefined && isIP(host) !== 6) throw new InputError(`--listen: ${host} is not an IPv6 address`);
  return { host, port };
}

/** Whether `host` is this machine's loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
}

/** A non-loopback address needs TLS or an explicit --insecure-listen: the token would cross the network in clear. */
export function checkListenSecurity(address: ListenAddress, tls: boolean, insecure: boolean): void {
  if (isLoopback(address.host) || tls || insecure) return;
  throw new InputError(
    `--listen ${address.host} is not a loopback address: give --tls-cert and --tls-key, or --insecure-listen to send the token in clear`,
  );
}
