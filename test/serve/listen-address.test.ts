import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { checkListenSecurity, isLoopback, readListenAddress } from "../../src/serve/listen-address.js";

describe("the listen address", () => {
  it("reads IPv4, bracketed IPv6 and host names with a port", () => {
    assert.deepEqual(readListenAddress("127.0.0.1:7300"), { host: "127.0.0.1", port: 7300 });
    assert.deepEqual(readListenAddress("[::1]:0"), { host: "::1", port: 0 });
    assert.deepEqual(readListenAddress("localhost:80"), { host: "localhost", port: 80 });
  });

  it("refuses an address without a port or with a port out of range", () => {
    assert.throws(() => readListenAddress("127.0.0.1"), InputError);
    assert.throws(() => readListenAddress("127.0.0.1:70000"), InputError);
    assert.throws(() => readListenAddress("::1:80"), InputError);
  });

  it("lets loopback listen in clear, and asks TLS or --insecure-listen of any other address", () => {
    assert.equal(isLoopback("127.0.0.2"), true);
    assert.equal(isLoopback("::1"), true);
    assert.equal(isLoopback("0.0.0.0"), false);
    assert.doesNotThrow(() => checkListenSecurity({ host: "127.0.0.1", port: 1 }, false, false));
    assert.throws(() => checkListenSecurity({ host: "0.0.0.0", port: 1 }, false, false), /--tls-cert/);
    assert.doesNotThrow(() => checkListenSecurity({ host: "0.0.0.0", port: 1 }, true, false));
    assert.doesNotThrow(() => checkListenSecurity({ host: "0.0.0.0", port: 1 }, false, true));
  });
});
