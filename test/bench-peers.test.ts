/**
 * The peer benchmark's page is generated: docs/peer-benchmark.md must be exactly what the renderer
 * makes of bench/peers/results.json, so the figures on the page cannot drift from the measured ones.
 * No servers: the renderer is pure.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { peerTable, renderPeerDoc } from '../bench/peers/render.js';
import type { PeersReport } from '../bench/peers/types.js';
import { DOC_PATH, RESULTS_PATH } from '../bench/peers/write-doc.js';

const report: PeersReport = {
  date: '2026-01-02T03:04:05.000Z',
  command: 'npm run bench:peers',
  machine: { cores: 2, cpu: 'Test CPU', memoryGb: 4, node: 'v20.0.0', platform: 'linux x64' },
  durationS: 612.3,
  method: { warmup: 10, samples: 200, gapMs: { min: 0, max: 1000 }, burstTasks: 1000, concurrency: 8 },
  versions: { bullmq: '6.7.0', 'graphile-worker': '0.17.3' },
  rows: [
    {
      system: 'Leasehold',
      backend: 'dynalite (in memory) in its own process',
      learnsOfWork: 'polls every 1000 ms',
      status: 'measured',
      single: { samples: 200, p50: 12, p90: 20.25, p99: 1234.5, max: 2000 },
      burst: { tasks: 1000, lastStartMs: 4519.7, tasksPerS: 221 },
    },
    {
      system: 'BullMQ',
      backend: 'none',
      learnsOfWork: 'BZPOPMIN',
      status: 'not available',
      note: 'not available (install redis-server)',
    },
  ],
};

describe('the peer benchmark page', () => {
  it('is the render of the committed results', async () => {
    const committed = JSON.parse(await readFile(RESULTS_PATH, 'utf8')) as PeersReport;
    expect(await readFile(DOC_PATH, 'utf8')).toBe(renderPeerDoc(committed));
  });

  it('has a row per system with its figures, and says which were not available', () => {
    const table = peerTable(report.rows);
    expect(table).toContain(
      '| Leasehold | polls every 1000 ms | 12.0 | 20.3 | 1,234.5 | 2,000.0 | 4,519.7 | 221 |',
    );
    expect(table).toContain('| BullMQ | BZPOPMIN | not available (install redis-server) |');
  });

  it('gives the machine, date, versions, method and how each consumer learns of work', () => {
    const page = renderPeerDoc(report);
    expect(page).toContain('- Date: 2026-01-02T03:04:05.000Z');
    expect(page).toContain('- Machine: 2 cores (Test CPU), 4 GB, linux x64, Node v20.0.0');
    expect(page).toContain('- bullmq: 6.7.0');
    expect(page).toContain('- graphile-worker: 0.17.3');
    expect(page).toContain('200 samples');
    expect(page).toContain('- Leasehold: polls every 1000 ms.');
    expect(page).toContain('- BullMQ: BZPOPMIN.');
  });

  it('is deterministic', () => {
    expect(renderPeerDoc(structuredClone(report))).toBe(renderPeerDoc(report));
  });
});
