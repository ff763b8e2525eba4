// `serve` on the local cluster through the api transport: the suite of serve-on-local-cluster.ts.
import { describeServeOnLocalCluster } from "./serve-on-local-cluster.js";

describeServeOnLocalCluster("api");
