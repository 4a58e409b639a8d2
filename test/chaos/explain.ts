/**
 * `npx tsx test/chaos/explain.ts <kept dir> <task id or prefix>`: one task's story from a failed run's
 * kept files, in time order: every history event (claims, renewals, writes and their answers, handler
 * starts and ends, recovery intents and fixes) beside every write the fault proxy journaled for it
 * (the fault injected, DynamoDB's answer, whether the caller got it, and what the write set).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

const [dir, prefix] = process.argv.slice(2);
if (!dir || !prefix) {
  console.error('usage: npx tsx test/chaos/explain.ts <kept dir> <task id or prefix>');
  process.exit(2);
}

const lines: { t: number; text: string }[] = [];
for (const f of (await readdir(dir)).filter((f) => f.startsWith('history-'))) {
  for (const line of (await readFile(join(dir, f), 'utf8')).split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as Record<string, unknown> & { t: number; task?: string };
    if (!e.task?.startsWith(prefix)) continue;
    const { t, w, task: _task, ...rest } = e;
    lines.push({ t, text: `${String(w).padEnd(12)} ${JSON.stringify(rest)}` });
  }
}
const journal = await readFile(join(dir, 'proxy-journal.jsonl'), 'utf8').catch(() => '');
for (const line of journal.split('\n')) {
  if (!line) continue;
  const j = JSON.parse(line) as {
    t: number;
    op: string;
    pk?: string;
    claim: boolean;
    fault?: string;
    status?: number;
    error?: string;
    delivered: boolean;
    body: string;
  };
  if (!j.pk?.startsWith(`TASK#${prefix}`)) continue;
  lines.push({
    t: j.t,
    text: `${'(proxy)'.padEnd(12)} ${j.op}${j.claim ? ' claim' : ''} -> ${j.status ?? 'no answer'}${j.error ? ` ${j.error}` : ''}${j.fault ? ` fault ${j.fault}` : ''}${j.delivered ? '' : ' ANSWER NOT DELIVERED'} ${summarize(j.body)}`,
  });
}
lines.sort((a, b) => a.t - b.t);
const t0 = lines[0]?.t ?? 0;
for (const l of lines) console.log(`${String(l.t - t0).padStart(7)} ms  ${l.text}`);

/** What an update sets, in plain names ("status=FAILED leaseToken+=1"), from its expression and placeholders. */
function summarize(body: string): string {
  try {
    const r = JSON.parse(body) as {
      UpdateExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues?: Record<string, Record<string, unknown>>;
    };
    if (!r.UpdateExpression) return '';
    const names = r.ExpressionAttributeNames ?? {};
    const values = r.ExpressionAttributeValues ?? {};
    const show = (v: string) => {
      const value = values[v];
      const raw = value ? Object.values(value)[0] : v;
      return String(typeof raw === 'string' ? raw : JSON.stringify(raw)).slice(0, 40);
    };
    return r.UpdateExpression.replace(/#\w+/g, (n) => names[n] ?? n).replace(/:\w+/g, show);
  } catch {
    return '(truncated)';
  }
}
