/** The HTTP API of the template: its routes with their integrations, its stage and its throttling. */
import { resourcesOfType, type Template } from './template/cloud-assembly.js';
import type { TemplateResolver } from './template/resolver.js';
import type { Route } from './http-api/route-table.js';

export interface HttpApiFromTemplate {
  logicalId: string;
  apiId: string;
  stage: string;
  routes: Route[];
  throttle: { rateLimit: number; burstLimit: number } | undefined;
}

export function httpApisFromTemplate(template: Template, resolver: TemplateResolver): HttpApiFromTemplate[] {
  const integrations = new Map<string, Route['integration']>();
  for (const [id, r] of resourcesOfType(template, 'AWS::ApiGatewayV2::Integration')) {
    const p = resolver.resolve<{
      IntegrationUri: string;
      PayloadFormatVersion?: string;
      TimeoutInMillis?: number;
      IntegrationType: string;
    }>(r.Properties);
    if (p.IntegrationType !== 'AWS_PROXY')
      throw new Error(
        `integration ${id}: only Lambda proxy integrations are simulated (got ${p.IntegrationType})`,
      );
    integrations.set(resolver.resource(id).ref, {
      functionArn: p.IntegrationUri,
      payloadFormatVersion: p.PayloadFormatVersion ?? '2.0',
      timeoutMs: p.TimeoutInMillis ?? 30_000,
    });
  }
  return resourcesOfType(template, 'AWS::ApiGatewayV2::Api').map(([logicalId, r]) => {
    const apiId = resolver.resource(logicalId).ref;
    const protocol = (r.Properties as { ProtocolType?: string } | undefined)?.ProtocolType;
    if (protocol !== 'HTTP')
      throw new Error(`API ${logicalId}: only HTTP APIs are simulated (got ${protocol})`);
    const routes = resourcesOfType(template, 'AWS::ApiGatewayV2::Route')
      .map(([, route]) =>
        resolver.resolve<{ ApiId: string; RouteKey: string; AuthorizationType?: string; Target?: string }>(
          route.Properties,
        ),
      )
      .filter((route) => route.ApiId === apiId)
      .map((route): Route => {
        const integration = integrations.get(String(route.Target).replace(/^integrations\//, ''));
        if (!integration) throw new Error(`route ${route.RouteKey} has no Lambda integration`);
        const [method, path] =
          route.RouteKey === '$default' ? ['ANY', '/'] : (route.RouteKey.split(' ') as [string, string]);
        return {
          routeKey: route.RouteKey,
          method,
          path,
          authorization: route.AuthorizationType ?? 'NONE',
          integration,
        };
      });
    const stage = resourcesOfType(template, 'AWS::ApiGatewayV2::Stage')
      .map(([, s]) =>
        resolver.resolve<{
          ApiId: string;
          StageName: string;
          DefaultRouteSettings?: { ThrottlingRateLimit?: number; ThrottlingBurstLimit?: number };
        }>(s.Properties),
      )
      .find((s) => s.ApiId === apiId);
    const settings = stage?.DefaultRouteSettings;
    return {
      logicalId,
      apiId,
      stage: stage?.StageName ?? '$default',
      routes,
      throttle:
        settings?.ThrottlingRateLimit !== undefined
          ? {
              rateLimit: settings.ThrottlingRateLimit,
              burstLimit: settings.ThrottlingBurstLimit ?? settings.ThrottlingRateLimit,
            }
          : undefined,
    };
  });
}
