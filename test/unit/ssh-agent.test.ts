/** The ssh-agent client against agents that misbehave: each is a rejected promise, never a hang. */
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { connectAgent } from '../../src/ssh-agent.js';
import { tempDir } from '../helpers/tmp.js';

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

async function fakeAgent(answer: (socket: Socket) => void): Promise<string> {
  const path = join(tempDir('ccm-agent-'), 'agent.sock');
  server = createServer((socket) => socket.once('data', () => answer(socket)));
  await new Promise<void>((resolve) => server?.listen(path, resolve));
  return path;
}

it('an answer longer than any agent gives', async () => {
  const path = await fakeAgent((s) => s.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 12])));
  await expect((await connectAgent(path)).listKeys()).rejects.toThrow('an answer of 4294967295 bytes');
});

it('an agent that says nothing', async () => {
  const path = await fakeAgent(() => {});
  await expect((await connectAgent(path, 300)).listKeys()).rejects.toThrow('no answer in 300 ms');
});

it('an agent that hangs up, and one that answers with something else', async () => {
  const closing = await fakeAgent((s) => s.end());
  await expect((await connectAgent(closing)).listKeys()).rejects.toThrow(
    'the agent closed the connection without an answer',
  );
  server?.close();
  const odd = await fakeAgent((s) => s.write(Buffer.from([0, 0, 0, 1, 99])));
  await expect((await connectAgent(odd)).listKeys()).rejects.toThrow(
    'the agent answered message type 99 to a request to list its keys',
  );
});

it('a list that ends early', async () => {
  // IDENTITIES_ANSWER claiming two keys, holding none.
  const path = await fakeAgent((s) => s.write(Buffer.from([0, 0, 0, 5, 12, 0, 0, 0, 2])));
  await expect((await connectAgent(path)).listKeys()).rejects.toThrow('the answer ends early');
});
