#!/usr/bin/env node
// The `leasehold` command's launcher lived here until the tooling moved to tools/ (4ce02fa). npm links
// a local package's bins into its npx cache once and never relinks them (npm/cli#9766): in a checkout
// where `npx leasehold` ran before the move, the cached link still points at this path, and without
// this file `npx leasehold` there answers "sh: leasehold: not found". Nothing else uses it; it ships
// in no package.
import '../../tools/cli/leasehold.mjs';
