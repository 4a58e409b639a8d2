/**
 * Rate limits on DynamoDB (the rules: rate-rules.ts): a type's N start tokens are N small items in the
 * partition `RATE#<type>`. A claim round reads a type's tokens once (one consistent Query), and each
 * start of the type takes one with a conditional write at the start's own time, the `startedAt` its
 * claim writes: one write per start. A take whose claim then loses its race is given back (the start
 * never happened), so contention does not spend the budget. Nothing holds a token: a dead worker's
 * take frees itself when the interval has passed.
 */
import { EVERY_TOKEN, freeTokens, nextTokenFreeAt, type RateLimit, type TokenShare } from '../rate-rules.js';
import { KEY, ratePartition, rateTokenSortKey } from '../table-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { rateTokenAsSeen, rateTokenFree, rateTokenTakenBy } from './conditions.js';
import { readPartitionItems } from './partition-items.js';
import { Expression } from './update-expression.js';

interface TokenItem {
  sk: string;
  usedAt?: number;
  taskId?: string;
}

/** How far apart claimers that found no token come back: up to two tokens' worth of the interval. */
const SPREAD_TOKENS = 2;
/** After losing a token to another claimer, further: up to eight tokens' worth (the others take them meanwhile). */
const LOST_RACE_SPREAD_TOKENS = 8;

/** A token taken for one start: enough to give it back as it was. */
export interface RateTake {
  type: string;
  index: number;
  usedAt: number;
  taskId: string;
  /** What the token held before the take (undefined: never used). */
  before: { usedAt?: number; taskId?: string };
}

export const rateLimitFor = (ctx: StoreContext, type: string): RateLimit | undefined =>
  ctx.typeRateLimits[type];

const tokenKey = (type: string, index: number) => ({
  [KEY.partition]: ratePartition(type),
  [KEY.sort]: rateTokenSortKey(index),
});

/** One claim round's view of the rate-limited types' tokens: read once a round, taken one write a start. */
export class RateTokens {
  /** Each type's tokens as read this round: one read, shared by the round's claims running at once. */
  private readonly observed = new Map<string, Promise<Map<number, TokenItem>>>();
  /** The soonest a type found without a free token this round has one again. */
  private nextFree: number | undefined;

  /** `shareOf`: the tokens this claimer owns of a limit (its place in the fleet); every token by default. */
  constructor(
    private readonly ctx: StoreContext,
    private readonly shareOf: (rate: RateLimit) => TokenShare = () => EVERY_TOKEN,
  ) {}

  /** When a type this round found out of tokens may start again; undefined if none ran out. */
  get nextFreeAt(): number | undefined {
    return this.nextFree;
  }

  /** False when `type` has a rate limit and no token is free at `now` (as read this round). */
  async mayStart(type: string, now: number): Promise<boolean> {
    const rate = rateLimitFor(this.ctx, type);
    if (!rate) return true;
    const tokens = await this.read(type);
    const share = this.shareOf(rate);
    if (freeTokens(usedAtOf(tokens), rate, now, share).length > 0) return true;
    this.noteExhausted(
      nextTokenFreeAt(usedAtOf(tokens), rate, now, share) + this.spreadMs(rate, SPREAD_TOKENS),
    );
    return false;
  }

  /**
   * Takes a token of `type` for a start at `startAt`: the take, 'none' when the type has a limit and no
   * token was free, undefined when the type has no rate limit. A take whose answer was lost counts as
   * taken (a start fewer, never one more) and its error is thrown.
   */
  async take(type: string, taskId: string, startAt: number): Promise<RateTake | 'none' | undefined> {
    const rate = rateLimitFor(this.ctx, type);
    if (!rate) return undefined;
    const tokens = await this.read(type);
    const share = this.shareOf(rate);
    // Its own tokens first; different claimers try different free tokens first, so they rarely race.
    const free = freeTokens(usedAtOf(tokens), rate, startAt, share);
    const shuffle = (list: number[]) => list.sort(() => this.ctx.random() - 0.5);
    const order = [...shuffle(free.filter(share.owns)), ...shuffle(free.filter((i) => !share.owns(i)))];
    for (const index of order) {
      const seen = tokens.get(index);
      // Marked used before the write: the round's other claims, taking tokens at the same time, pass it by.
      tokens.set(index, { sk: '', usedAt: startAt, taskId });
      const e = new Expression()
        .require(rateTokenFree(startAt - rate.intervalMs))
        .require(rateTokenAsSeen(seen?.usedAt))
        .set('usedAt', startAt)
        .set('taskId', taskId);
      // A write whose outcome stays unknown throws: the token stays marked used (perhaps it was taken),
      // and the start is not made.
      const written = await conditionalUpdate<TokenItem>(writeTargetOf(this.ctx), tokenKey(type, index), e, {
        resends: 1,
      });
      if (written.applied) {
        tokens.set(index, written.item);
        return { type, index, usedAt: startAt, taskId, before: { ...pick(seen) } };
      }
      // Another claimer took it: the tokens read free are being taken by others too, and trying each
      // would cost a refused write apiece. This round leaves the type; it looks again soon.
      tokens.set(index, written.current ?? { sk: '', usedAt: startAt });
      this.noteExhausted(startAt + this.spreadMs(rate, LOST_RACE_SPREAD_TOKENS));
      return 'none';
    }
    this.noteExhausted(
      nextTokenFreeAt(usedAtOf(tokens), rate, startAt, share) + this.spreadMs(rate, SPREAD_TOKENS),
    );
    return 'none';
  }

  /**
   * A random wait of up to `tokens` tokens' worth of the interval: claimers that ran out at once do not
   * all come back at the instant the next token frees, where all but one would be refused.
   */
  private spreadMs(rate: RateLimit, tokens: number): number {
    return Math.floor(this.ctx.random() * ((tokens * rate.intervalMs) / rate.limit));
  }

  /** Gives back a take whose claim did not start the task; a later take of the token stands. Never throws. */
  async giveBack(take: RateTake): Promise<void> {
    const e = new Expression().require(rateTokenTakenBy(take.usedAt, take.taskId)).assign({
      usedAt: take.before.usedAt,
      taskId: take.before.taskId,
    });
    try {
      const written = await conditionalUpdate(writeTargetOf(this.ctx), tokenKey(take.type, take.index), e, {
        resends: 1,
      });
      if (written.applied) (await this.observed.get(take.type))?.set(take.index, { sk: '', ...take.before });
    } catch {
      // Left used: a start fewer in this window, never one more.
    }
  }

  private noteExhausted(at: number): void {
    this.nextFree = this.nextFree === undefined ? at : Math.min(this.nextFree, at);
  }

  /** The type's tokens by index, read once a round (consistent: a take just made elsewhere shows). */
  private read(type: string): Promise<Map<number, TokenItem>> {
    let tokens = this.observed.get(type);
    if (!tokens) {
      tokens = readPartitionItems<TokenItem>({
        doc: this.ctx.doc,
        tableName: this.ctx.tableName,
        partition: ratePartition(type),
        consistent: true,
        deadlineMs: this.ctx.config.requestDeadlineMs,
      }).then((items) => new Map(items.map((item) => [Number(item.sk.slice('TOKEN#'.length)), item])));
      // A failed read is not kept: the next claim of the round reads again.
      tokens.catch(() => this.observed.delete(type));
      this.observed.set(type, tokens);
    }
    return tokens;
  }
}

function usedAtOf(tokens: Map<number, TokenItem>): Map<number, number> {
  const used = new Map<number, number>();
  for (const [index, token] of tokens) if (token.usedAt !== undefined) used.set(index, token.usedAt);
  return used;
}

const pick = (token: TokenItem | undefined): { usedAt?: number; taskId?: string } => ({
  ...(token?.usedAt === undefined ? {} : { usedAt: token.usedAt }),
  ...(token?.taskId === undefined ? {} : { taskId: token.taskId }),
});
