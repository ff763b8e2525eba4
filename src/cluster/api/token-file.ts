// A kubeconfig user's tokenFile, re-read periodically as client-go does, so a rotated token is picked up.
import { readFile } from "node:fs/promises";
import { UnauthorizedError } from "../errors.js";

/**
 * The token in `path`, read at first use and again once `periodMs` (default 60 s, client-go's) has passed since the
 * last read. A read that fails keeps the last good token; with none yet it rejects with UnauthorizedError.
 * `invalidate` forces the next `get` to read the file (after a 401).
 */
export class TokenFileSource {
  private token: string | undefined;
  private readAt = -Infinity;

  constructor(
    private readonly path: string,
    private readonly periodMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<string> {
    if (this.token !== undefined && this.now() - this.readAt < this.periodMs) return this.token;
    try {
      const text = (await readFile(this.path, "utf8")).trim();
      if (!text) throw new Error("the file is empty");
      this.token = text;
      this.readAt = this.now();
    } catch (error) {
      if (this.token === undefined) {
        throw new UnauthorizedError(
          `cannot read the kubeconfig's tokenFile ${this.path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      }
    }
    return this.token!;
  }

  invalidate(): void {
    this.readAt = -Infinity;
  }
}
