#!/usr/bin/env node
// The `leasehold` command for `npx leasehold`: runs the TypeScript CLI through tsx, with no build step.
import { register } from 'tsx/esm/api';

register();
await import('./leasehold.ts');
