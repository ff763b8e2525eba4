// `serve` on the local cluster through the kubectl transport: the suite of serve-on-local-cluster.ts.
import { describeServeOnLocalCluster } from "./serve-on-local-cluster.js";

describeServeOnLocalCluster("kubectl");
