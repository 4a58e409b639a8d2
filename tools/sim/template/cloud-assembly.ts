/**
 * Reads what `cdk synth` wrote: the stack's template and, for each Lambda function, the directory of
 * the asset `cdk deploy` would zip and upload (found through the asset manifest, by the S3 key the
 * template's Code names). The sim runs only this, never a second description of the stack.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';

const resourceSchema = z.object({
  Type: z.string(),
  Properties: z.record(z.string(), z.unknown()).optional(),
  Condition: z.string().optional(),
  Metadata: z.record(z.string(), z.unknown()).optional(),
});
export type TemplateResource = z.infer<typeof resourceSchema>;

const templateSchema = z.object({
  Resources: z.record(z.string(), resourceSchema),
  Parameters: z
    .record(z.string(), z.object({ Type: z.string(), Default: z.unknown().optional() }))
    .optional(),
  Conditions: z.record(z.string(), z.unknown()).optional(),
  Outputs: z
    .record(z.string(), z.object({ Value: z.unknown(), Description: z.string().optional() }))
    .optional(),
});
export type Template = z.infer<typeof templateSchema>;

const manifestSchema = z.object({
  artifacts: z.record(
    z.string(),
    z.object({ type: z.string(), properties: z.record(z.string(), z.unknown()).optional() }),
  ),
});

const assetManifestSchema = z.object({
  files: z.record(
    z.string(),
    z.object({
      source: z.object({ path: z.string(), packaging: z.string().optional() }),
      destinations: z.record(z.string(), z.object({ objectKey: z.string() })),
    }),
  ),
});

export interface CloudAssembly {
  dir: string;
  stackName: string;
  template: Template;
  /** The local directory of the asset uploaded under this S3 object key. */
  assetDirForObjectKey(objectKey: string): string | undefined;
}

/** Loads one stack of a cloud assembly (the `cdk.out` folder). */
export function loadCloudAssembly(dir: string, stackName?: string): CloudAssembly {
  const manifest = manifestSchema.parse(JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')));
  const stacks = Object.entries(manifest.artifacts).filter(([, a]) => a.type === 'aws:cloudformation:stack');
  const chosen = stackName ? stacks.find(([name]) => name === stackName) : stacks[0];
  if (!chosen)
    throw new Error(
      `no stack ${stackName ?? ''} in ${dir} (stacks: ${stacks.map(([n]) => n).join(', ') || 'none'})`,
    );
  const [name, artifact] = chosen;
  const templateFile = String(artifact.properties?.templateFile ?? `${name}.template.json`);
  const template = templateSchema.parse(JSON.parse(readFileSync(join(dir, templateFile), 'utf8')));
  const assetDirs = new Map<string, string>();
  for (const [, a] of Object.entries(manifest.artifacts).filter(([, a]) => a.type === 'cdk:asset-manifest')) {
    const assets = assetManifestSchema.parse(
      JSON.parse(readFileSync(join(dir, String(a.properties?.file)), 'utf8')),
    );
    for (const file of Object.values(assets.files)) {
      for (const destination of Object.values(file.destinations))
        assetDirs.set(destination.objectKey, join(dir, file.source.path));
    }
  }
  return { dir, stackName: name, template, assetDirForObjectKey: (key) => assetDirs.get(key) };
}

/** The resources of one type, by logical id. */
export function resourcesOfType(template: Template, type: string): [string, TemplateResource][] {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}
