// The official OpenAI Node client against `turnrl serve` (argument: its base URL).
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'unused', maxRetries: 0 });
const messages = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'go to the red ball' },
];

const models = await client.models.list();
assert.equal(models.data.length, 1);
const model = models.data[0].id;
assert.equal(model, 'tiny');

// Chat: a reply with usage; the same seed gives the same reply.
const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, seed: 42, temperature: 1 });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices.length, 1);
assert.equal(chat.choices[0].message.role, 'assistant');
assert.equal(typeof chat.choices[0].message.content, 'string');
assert.ok(['stop', 'length'].includes(chat.choices[0].finish_reason));
assert.ok(chat.usage.prompt_tokens > 0);
assert.ok(chat.usage.completion_tokens >= 1 && chat.usage.completion_tokens <= 12);
assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);
const again = await client.chat.completions.create({ model, messages, max_tokens: 12, seed: 42, temperature: 1 });
assert.equal(again.choices[0].message.content, chat.choices[0].message.content);

// Streaming: the deltas add up to the same reply, then a usage chunk.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, seed: 42, temperature: 1, stream: true, stream_options: { include_usage: true },
});
let text = '';
let finish = null;
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  ++chunks;
  if (chunk.usage) usage = chunk.usage;
  const choice = chunk.choices[0];
  if (!choice) continue;
  text += choice.delta?.content ?? '';
  if (choice.finish_reason) finish = choice.finish_reason;
}
assert.ok(chunks >= 3);
assert.equal(text, chat.choices[0].message.content);
assert.equal(finish, chat.choices[0].finish_reason);
assert.deepEqual(usage, chat.usage);

// n choices, each with its own index; the first one is the single reply's.
const three = await client.chat.completions.create({ model, messages, max_tokens: 12, seed: 42, temperature: 1, n: 3 });
assert.deepEqual(three.choices.map((c) => c.index), [0, 1, 2]);
assert.equal(three.choices[0].message.content, chat.choices[0].message.content);
assert.equal(new Set(three.choices.map((c) => c.message.content)).size, 3);

// A bad request: a 400 the client raises as BadRequestError, with the server's message.
await assert.rejects(
  client.chat.completions.create({ model, messages: 'go to the red ball', max_tokens: 4 }),
  (error) => {
    assert.ok(error instanceof OpenAI.BadRequestError, `expected BadRequestError, got ${error}`);
    assert.equal(error.status, 400);
    assert.match(error.message, /messages/);
    return true;
  },
);
await assert.rejects(
  client.chat.completions.create({ model, messages, temperature: 'warm' }),
  (error) => error instanceof OpenAI.BadRequestError && /temperature/.test(error.message),
);
console.log('openai client: models, chat, streaming, n and bad requests passed');
