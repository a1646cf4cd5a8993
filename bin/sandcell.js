#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

// Output piped into a program that stopped reading (`sandcell doctor | head`) is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv);
