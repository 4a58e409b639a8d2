/**
 * Every authorization decision the sim's services made: who asked for what on which resource, and
 * the answer. It is how the sim proves each function's requests are allowed by its role, finds
 * actions a role grants that nothing used, and counts requests per minute (the idle-cost figure).
 */
export interface AccessRecord {
  at: number;
  service: 'dynamodb' | 'scheduler' | 'execute-api' | 'lambda' | 'sqs' | 'iam';
  principalArn: string;
  action: string;
  resource: string;
  allowed: boolean;
}

export class AccessLog {
  private readonly records: AccessRecord[] = [];

  constructor(private readonly limit = 200_000) {}

  add(record: AccessRecord): void {
    this.records.push(record);
    if (this.records.length > this.limit) this.records.splice(0, this.records.length - this.limit);
  }

  all(): readonly AccessRecord[] {
    return this.records;
  }

  denied(): AccessRecord[] {
    return this.records.filter((r) => !r.allowed);
  }

  /** Requests per principal and action since `from`. */
  summary(from = 0): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const r of this.records) {
      if (r.at < from) continue;
      const byAction = (out[r.principalArn] ??= {});
      byAction[r.action] = (byAction[r.action] ?? 0) + 1;
    }
    return out;
  }
}
