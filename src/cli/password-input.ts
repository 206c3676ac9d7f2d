/**
 * Reads a password for `svc ui user add|passwd`: from standard input when it is piped (the first
 * line), or from a prompt that does not echo it. Never from a flag (it would land in shell history
 * and the process list).
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { ExitError } from '../common/errors.js';

export async function readPassword(prompt = 'password: '): Promise<string> {
  if (!process.stdin.isTTY) return firstLine();
  const first = await promptHidden(prompt);
  const again = await promptHidden('again: ');
  if (first !== again) throw new ExitError(1, 'the two passwords differ; nothing was changed');
  return first;
}

async function firstLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/, 1)[0] ?? '';
  if (line === '')
    throw new ExitError(
      1,
      'no password on standard input: pipe it in (printf "%s\\n" "$PASSWORD" | svc ui user ...) or run the command in a terminal to be prompted',
    );
  return line;
}

function promptHidden(prompt: string): Promise<string> {
  process.stderr.write(prompt);
  const muted = new Writable({ write: (_chunk, _enc, done) => done() });
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  return new Promise((resolve) =>
    rl.question('', (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    }),
  );
}
