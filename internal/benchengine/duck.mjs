// duck.mjs SCRIPT — runs a SQL script (the statements bench-engine wrote:
// views over a history's CSV files, then a COPY of the query's result to a
// file) in an in-memory DuckDB, as one whole command to be timed;
// duck.mjs --version prints DuckDB's version.
import { readFileSync } from 'node:fs';
import duckdb, { DuckDBInstance } from '@duckdb/node-api';

const [script] = process.argv.slice(2);
if (!script) {
  console.error('usage: node duck.mjs SCRIPT.sql | --version');
  process.exit(2);
}
if (script === '--version') {
  console.log(duckdb.version());
  process.exit(0);
}
const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
await connection.run(readFileSync(script, 'utf8'));
connection.closeSync();
instance.closeSync();
