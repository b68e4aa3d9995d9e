import { Parsed } from './args';
import { Client } from './client';
import { OutputFormat } from './output';

/** What a command runs with: the API client, the chosen output and the parsed command line. */
export interface Context {
  client: Client;
  output: OutputFormat;
  parsed: Parsed;
  /** Positionals after the command word(s). */
  args: string[];
}
