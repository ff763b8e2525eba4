// The fence a run passes before each action that changes it: serve's check that no other instance took the run over.

/** An action that changes the run, before which the fence is asked. */
export type FencedAction =
  | { readonly kind: "step"; readonly index: number }
  | { readonly kind: "restore" }
  | { readonly kind: "save" }
  | { readonly kind: "outputs" }
  | { readonly kind: "artifacts" }
  | { readonly kind: "teardown" }
  | { readonly kind: "result" };

/**
 * Resolves when the run is still this runner's to act on; rejects with RunTakenOverError when another instance owns
 * it (the run then stops, its Job and pod left alone, no result written), with InfraError `ownership-unknown` when
 * it could not tell within its bound (nothing is deleted either), and with the signal's reason when it is aborted.
 * Costs nothing (no cluster call) while the runner's ownership needs no proof (serve: its Lease held throughout).
 */
export type RunFence = (action: FencedAction, signal: AbortSignal) => Promise<void>;

/** The action as a message names it: `step 2`, `the outputs' download`. */
export function describeFencedAction(action: FencedAction): string {
  switch (action.kind) {
    case "step":
      return `step ${action.index + 1}`;
    case "restore":
      return "the caches' restore";
    case "save":
      return "the caches' save";
    case "outputs":
      return "the outputs' download";
    case "artifacts":
      return "the artifacts' collection";
    case "teardown":
      return "the teardown";
    case "result":
      return "writing the result";
  }
}
