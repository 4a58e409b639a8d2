/** What a running sim tells its callers (the admin endpoint serves it; the CLI prints it). */
export interface SimCaller {
  name: string;
  arn: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SimInfo {
  apiUrl: string;
  adminUrl: string;
  region: string;
  accountId: string;
  stackName: string;
  dynamodb: {
    backend: string;
    version: string;
    /**
     * The emulator itself, for reading base-table items only: a write sent here bypasses the gate, so
     * the index view its GSI reads answer from never sees it, and nothing throttles it.
     */
    endpoint: string;
    /** What the functions call: SigV4 and IAM checked, GSIs lagging, throttling, TTL. */
    gatedEndpoint: string;
    tables: string[];
  };
  schedulerEndpoint: string;
  /** Lambda's Invoke API (POST /2015-03-31/functions/{name}/invocations), SigV4-signed for "lambda". */
  lambdaEndpoint: string;
  functions: { logicalId: string; name: string; arn: string; node: string; logFile: string }[];
  callers: SimCaller[];
  queues: { name: string; arn: string; file: string }[];
  notices: string[];
  startedAt: string;
  startupMs: number;
}
