// A tiny A2A server on the official JS SDK (@a2a-js/sdk) and express, for the
// kit's opt-in end-to-end tests (package jspeer starts it). It serves A2A v1.0
// JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest, and A2A v0.3 on both
// (the SDK's compat layer: a request without A2A-Version, or 0.3, is v0.3).
//
// Its agent counts its runs: GET /jspeer/runs answers {"total":N,"byText":{text:N}}.
// Every run publishes the task (working), waits JSPEER_DELAY_MS (default 0), then
// completes it; a message whose text contains "reply with a message" is answered
// with a Message instead of a task.
//
// It listens on 127.0.0.1, on JSPEER_PORT (default 0: a free port), and prints
// "listening http://127.0.0.1:PORT" once it serves.
'use strict';

const express = require('express');
const { DefaultRequestHandler, InMemoryTaskStore } = require('@a2a-js/sdk/server');
const { jsonRpcHandler, restHandler, agentCardHandler, UserBuilder } = require('@a2a-js/sdk/server/express');
const { TaskState, Role } = require('@a2a-js/sdk');

const delayMs = Number(process.env.JSPEER_DELAY_MS || 0);
const runs = { total: 0, byText: {} };

function textOf(message) {
  return (message.parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join('');
}

const agent = {
  async execute(ctx, bus) {
    const text = textOf(ctx.request.message || {});
    runs.total++;
    runs.byText[text] = (runs.byText[text] || 0) + 1;
    const reply = (state) => ({
      messageId: 'jspeer-' + Math.random().toString(16).slice(2), contextId: ctx.contextId, taskId: ctx.taskId,
      role: Role.ROLE_AGENT, parts: [{ content: { $case: 'text', value: 'done: ' + text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined, extensions: [], referenceTaskIds: [], state,
    });
    if (text.includes('reply with a message')) {
      const m = reply();
      delete m.state;
      m.taskId = '';
      bus.publish({ kind: 'message', data: m });
      bus.finished();
      return;
    }
    bus.publish({ kind: 'task', data: {
      id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [], history: [ctx.request.message], metadata: undefined,
    } });
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const m = reply();
    delete m.state;
    bus.publish({ kind: 'statusUpdate', data: {
      taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: m, timestamp: new Date().toISOString() },
    } });
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
app.get('/jspeer/runs', (_req, res) => res.json(runs));
const server = app.listen(Number(process.env.JSPEER_PORT || 0), '127.0.0.1', () => {
  const base = 'http://127.0.0.1:' + server.address().port;
  const iface = (path, binding, version) => ({ url: base + path, protocolBinding: binding, protocolVersion: version, tenant: '' });
  const card = {
    name: 'jspeer', description: 'The kit\'s JS SDK test peer: counts its runs', version: '1.0.0',
    supportedInterfaces: [
      iface('/a2a/jsonrpc', 'JSONRPC', '1.0'), iface('/a2a/rest', 'HTTP+JSON', '1.0'),
      iface('/a2a/jsonrpc', 'JSONRPC', '0.3'), iface('/a2a/rest', 'HTTP+JSON', '0.3'),
    ],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'echo', description: 'answers done', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), agent);
  const opts = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use('/a2a/jsonrpc', jsonRpcHandler(opts));
  app.use('/a2a/rest', restHandler(opts));
  console.log('listening ' + base);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
