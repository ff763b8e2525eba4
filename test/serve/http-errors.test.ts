import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError, InfraError } from "../../src/core/errors.js";
import { formatServerErrorLine, mapErrorToHttp, XrpcError } from "../../src/serve/http-errors.js";

describe("the service's 5xx answers", () => {
  it("logs a 501 and a 503 as what they are, on one line without a stack", () => {
    const notImplemented = formatServerErrorLine(new XrpcError(501, "MethodNotImplemented", "no method x.y here"));
    assert.equal(notImplemented, "answered 501 MethodNotImplemented: no method x.y here");
    const draining = formatServerErrorLine(new CancelledError("the service is shutting down"));
    assert.equal(draining, "answered 503 ShuttingDown: the service is shutting down");
    const cluster = formatServerErrorLine(new InfraError("cluster-unreachable", "connect ECONNREFUSED"));
    assert.doesNotMatch(cluster, /internal error|\n| {4}at /);
  });

  it("logs a real 500 as an internal error with its stack", () => {
    const line = formatServerErrorLine(new Error("a bug"));
    assert.match(line, /^internal error: Error: a bug\n\s+at /);
  });

  it("gives a draining service's 503 a Retry-After", () => {
    assert.ok(Number(mapErrorToHttp(new CancelledError("draining")).headers["Retry-After"]) > 0);
  });
});
