#!/usr/bin/env node
'use strict';
// The cluster-failover CLI. From a checkout it runs the TypeScript sources through tsx (a devDependency),
// so it never runs a stale build; an installed package without the sources runs the compiled dist/cli.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const sources = join(__dirname, '..', 'cli', 'main.ts');
const hasTsx = () => {
  try {
    require.resolve('tsx/cjs/api');
    return true;
  } catch {
    return false;
  }
};
let cli;
if (existsSync(sources) && hasTsx()) {
  require('tsx/cjs/api').register();
  cli = require(sources);
} else {
  cli = require(join(__dirname, '..', 'dist', 'cli', 'main.js'));
}
cli.main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
