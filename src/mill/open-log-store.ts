// Opens the log store `--log-store` names: a directory, or S3 (whose client's modules load only then).
import { createDirLogStore, type LogStore, type LogStoreSetting } from "./log-store.js";
import { createS3LogStore } from "./s3-log-store.js";

export async function openLogStore(setting: LogStoreSetting): Promise<LogStore> {
  if (setting.kind === "dir") return createDirLogStore(setting.dir);
  return createS3LogStore(setting);
}
