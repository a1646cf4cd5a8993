/** The OpenAI provider's options as they reach the wire: the real SDK against a fake provider on 127.0.0.1. */
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeProvider, startFakeOpenAI } from '../../../test/support/fake-providers.js';
import { OpenAIChatModel } from './openai.js';

describe('OpenAI provider options on the wire', () => {
  let provider: FakeProvider | undefined;
  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });

  it('sends reasoning_effort and the developer role for reasoning models', async () => {
    provider = await startFakeOpenAI([{ text: 'ok' }]);
    const model = new OpenAIChatModel({
      baseURL: provider.baseURL,
      apiKey: 'k',
      model: 'o4-mini',
      reasoningEffort: 'high',
    });
    await model.complete({ instructions: 'Be brief.', messages: [{ role: 'user', content: 'hi' }], tools: [] });
    const body = provider.requests[0]!.body;
    expect(body.reasoning_effort).toBe('high');
    expect(body.messages[0]).toEqual({ role: 'developer', content: 'Be brief.' });
    expect(provider.requests[0]!.headers.authorization).toBe('Bearer k');
  });

  it('talks to Azure OpenAI: deployment in the path, api-version and api-key', async () => {
    provider = await startFakeOpenAI([{ toolCalls: [{ name: 'noop', arguments: {} }] }]);
    const model = new OpenAIChatModel({
      model: 'my-deployment',
      apiKey: 'azure-key',
      azure: { endpoint: `http://127.0.0.1:${provider.port}`, apiVersion: '2024-10-21' },
    });
    expect(model.provider).toBe('azure');
    const response = await model.complete({
      instructions: 'x',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'noop', description: 'does nothing', parameters: { type: 'object', properties: {} } }],
    });
    expect(response.toolCalls).toEqual([{ id: expect.any(String), name: 'noop', arguments: '{}' }]);
    const request = provider.requests[0]!;
    expect(request.path).toBe('/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21');
    expect(request.headers['api-key']).toBe('azure-key');
    expect(request.body.messages[0].role).toBe('system');
  });
});
