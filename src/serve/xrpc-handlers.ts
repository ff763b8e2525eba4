// The service's XRPC methods: each lexicon's NSID bound to the RunService call that answers it.
import type { RunService } from "./run-service.js";
import type { ServeRunStatus } from "./run-store.js";
import { NSID } from "./lexicon-schemas.js";
import type { SubmitRunInput } from "./prepare-submission.js";
import type { XrpcHandler } from "./xrpc-router.js";

export function buildXrpcHandlers(service: RunService): Map<string, XrpcHandler> {
  return new Map<string, XrpcHandler>([
    [NSID.submitRun, async ({ body }) => ({ kind: "json", value: await service.submit(body as SubmitRunInput) })],
    [NSID.getRun, async ({ params }) => ({ kind: "json", value: await service.getRun(params.runId as string) })],
    [
      NSID.listRuns,
      async ({ params }) => ({
        kind: "json",
        value: await service.listRuns({
          ...(params.status !== undefined ? { status: params.status as ServeRunStatus } : {}),
          ...(params.limit !== undefined ? { limit: params.limit as number } : {}),
          ...(params.cursor !== undefined ? { cursor: params.cursor as string } : {}),
        }),
      }),
    ],
    [
      NSID.cancelRun,
      async ({ body }) => ({
        kind: "json",
        value: service.cancel((body as { runId: string }).runId, "a cancelRun request"),
      }),
    ],
    [
      NSID.getOutputs,
      async ({ params }) => ({
        kind: "stream",
        contentType: "application/x-tar",
        stream: await service.outputs(params.runId as string, params.artifact as string | undefined),
      }),
    ],
  ]);
}
