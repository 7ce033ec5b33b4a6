import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/kernel/logger.js';
import { startTelemetry, type Telemetry } from '../../src/kernel/telemetry.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

/** One span as an OTLP/HTTP JSON export carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string } }[];
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

/*
 * An in-process OTLP receiver on loopback (a collector's OTLP/HTTP JSON endpoint) receives what the
 * API and the worker of this test process export; the platform runs with tracing started first,
 * as api/server.ts and worker/index.ts do.
 */
const spans: (OtlpSpan & { service: string })[] = [];
let receiver: Server;
let telemetry: Telemetry;
beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
        for (const rs of body.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  telemetry = (await startTelemetry(
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    },
    'test',
  ))!;
});
const { app } = usePlatform();
afterAll(async () => {
  await telemetry?.shutdown();
  await new Promise((r) => receiver.close(r));
});

describe('OpenTelemetry traces', () => {
  it("one trace runs from the API request through the workflow to its activities, continuing the caller's traceparent", async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'traced',
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const inv = await app.post(
      `/v1/neurons/${String(n.body.id)}/invoke`,
      ws.key,
      { message: 'trace me' },
      { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    );
    expect(inv.status).toBe(202);
    expect((await settleJob(app, ws.key, String(inv.body.job_id))).status).toBe('completed');

    // Exports are batched: flush, then wait (bounded) until the activity spans have arrived.
    const ours = () => spans.filter((s) => s.traceId === callerTrace);
    for (let i = 0; i < 100 && !ours().some((s) => s.name.startsWith('RunActivity')); i++) {
      await telemetry.flush();
      await new Promise((r) => setTimeout(r, 100));
    }
    const inTrace = ours();
    const api = inTrace.find((s) => s.name === 'POST /v1/neurons/:id/invoke');
    expect(api, `spans: ${inTrace.map((s) => s.name).join(', ')}`).toBeDefined();
    expect(api!.parentSpanId).toBe(callerSpan);
    expect(api!.kind).toBe(2); // SERVER
    expect(api!.attributes?.find((a) => a.key === 'http.route')?.value.stringValue).toBe('/v1/neurons/:id/invoke');
    expect(inTrace.some((s) => s.name === 'StartWorkflow:neuronRun')).toBe(true);
    expect(inTrace.some((s) => s.name === 'RunWorkflow:neuronRun')).toBe(true);

    // Every activity span leads back, parent by parent, to the API's request span.
    const byId = new Map(inTrace.map((s) => [s.spanId, s]));
    const activities = inTrace.filter((s) => s.name.startsWith('RunActivity:'));
    expect(activities.length).toBeGreaterThan(0);
    for (const activity of activities) {
      const chain: string[] = [];
      let at: OtlpSpan | undefined = activity;
      while (at && at !== api && chain.length < 20) {
        chain.push(at.name);
        at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined;
      }
      expect(at, `${activity.name} reaches the request span (chain: ${chain.join(' <- ')})`).toBe(api);
    }
    // Workflow spans come from the worker, the request span from the API (one process here).
    expect(new Set(inTrace.map((s) => s.service))).toEqual(new Set(['cortex-test']));
  });

  it('a log line written inside a span carries its trace and span ids', () => {
    const lines: string[] = [];
    const log = createLogger('info', {}, { write: (l: string) => void lines.push(l) });
    trace.getTracer('test').startActiveSpan('work', (span) => {
      log.info('inside');
      span.end();
      const line = JSON.parse(lines[0]!) as { trace_id?: string; span_id?: string };
      expect(line.trace_id).toBe(span.spanContext().traceId);
      expect(line.span_id).toBe(span.spanContext().spanId);
    });
    log.info('outside');
    expect(JSON.parse(lines[1]!)).not.toHaveProperty('trace_id');
  });
});
