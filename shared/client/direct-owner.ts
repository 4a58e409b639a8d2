/**
 * Whose tasks the direct client reads and writes. Through the API the owner is the IAM principal API
 * Gateway authorised, an assumed-role session reduced to its role (api/caller.ts); the direct client
 * asks STS who it is and applies the same rule, so the same principal sees the same tasks either way.
 */
import { GetCallerIdentityCommand, STSClient, type STSClientConfig } from '@aws-sdk/client-sts';
import { ownerOfArn } from '../api/caller.js';
import { ValidationError } from '../errors.js';
import { CallerIdentityError } from './errors.js';
import { ownerSchema } from '../task-inputs.js';

/** The caller's principal ARN, as STS GetCallerIdentity answers it (needs no IAM permission). */
export type CallerArnLookup = () => Promise<string>;

export function stsCallerArn(config: Pick<STSClientConfig, 'region' | 'credentials'>): CallerArnLookup {
  return async () => {
    const sts = new STSClient(config);
    try {
      const { Arn } = await sts.send(new GetCallerIdentityCommand({}));
      if (!Arn)
        throw new CallerIdentityError(
          'STS GetCallerIdentity answered without an Arn; pass `owner` to createDirectClient',
        );
      return Arn;
    } finally {
      sts.destroy();
    }
  };
}

/**
 * The owner: `given` (checked with the client's options), else looked up once, at the first call that needs it (creating a client
 * sends nothing). A failed lookup is not kept, so the next call asks again.
 */
export function ownerSource(given: string | undefined, lookup: CallerArnLookup): () => Promise<string> {
  if (given !== undefined) return () => Promise.resolve(given);
  let pending: Promise<string> | undefined;
  return () => {
    pending ??= lookup()
      .then((arn) => checkedOwner(ownerOfArn(arn)))
      .catch((error: unknown) => {
        pending = undefined;
        throw error;
      });
    return pending;
  };
}

function checkedOwner(owner: string): string {
  const parsed = ownerSchema.safeParse(owner);
  if (parsed.success) return parsed.data;
  throw new ValidationError(
    'createDirectClient',
    parsed.error.issues.map((i) => ({ path: 'owner', message: i.message })),
  );
}
