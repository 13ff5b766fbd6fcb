// A keyed send with the official JS SDK's client (@a2a-js/sdk), for the kit's
// opt-in end-to-end tests (package jspeer runs it):
//
//	node client.cjs BASE_URL KEY MESSAGE_ID TEXT [JSONRPC|HTTP+JSON]
//
// It reads the agent card at BASE_URL, sends one blocking SendMessage whose message
// carries KEY in its metadata under a2a-rust.com/idempotency-key (and lists the
// extension), and prints one JSON line: {"task":"<id>","state":"<state>"} or
// {"message":"<id>"}. An error is printed on stderr, with exit status 1.
'use strict';

const { ClientFactory, ClientFactoryOptions } = require('@a2a-js/sdk/client');
const { Role, TaskState } = require('@a2a-js/sdk');

const EXTENSION = 'https://a2a-rust.com/extensions/idempotency/v1';
const METADATA_KEY = 'a2a-rust.com/idempotency-key';

async function main() {
  const [base, key, messageId, text, transport] = process.argv.slice(2);
  if (!base || !key || !messageId || !text) throw new Error('usage: node client.cjs BASE_URL KEY MESSAGE_ID TEXT [JSONRPC|HTTP+JSON]');
  const opts = { ...ClientFactoryOptions.default };
  if (transport) opts.preferredTransports = [transport];
  const client = await new ClientFactory(opts).createFromUrl(base);
  const result = await client.sendMessage({
    tenant: '',
    message: {
      messageId, contextId: '', taskId: '', role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: { [METADATA_KEY]: key }, extensions: [EXTENSION], referenceTaskIds: [],
    },
    configuration: undefined, metadata: undefined,
  });
  const task = result && (result.task || (result.payload && result.payload.$case === 'task' && result.payload.value) || (result.id && result.status && result));
  if (task) {
    console.log(JSON.stringify({ task: task.id, state: task.status ? TaskState[task.status.state] : '' }));
    return;
  }
  const msg = result && (result.message || (result.payload && result.payload.value) || result);
  console.log(JSON.stringify({ message: msg && msg.messageId }));
}

main().catch((err) => {
  console.error(String(err && err.stack || err));
  process.exit(1);
});
